package trainer

import (
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// workload is a configuration (overrides of the defaults and presets) with
// its observation size and shape and its policy's outputs.
type workload struct {
	name      string
	overrides []string
	obs       int
	shape     []int
	outputs   int
}

// spaces are the workload's observation and (discrete) action spaces.
func (w workload) spaces() (obs, act envs.Space) {
	return envs.Space{Kind: envs.Box, Dim: w.obs, Shape: w.shape}, envs.Space{Kind: envs.Discrete, N: w.outputs}
}

func (w workload) config(t *testing.T) config.Config {
	t.Helper()
	cfg, err := config.Resolve("", w.overrides)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestUpdateFLOPs(t *testing.T) {
	for _, tc := range []struct {
		workload
		want float64
	}{
		// actor 4·64 (forward, weight gradient) + 64·64 + 64·2 (and input
		// gradients), critic likewise to one output: 26,176 multiply-adds a
		// sample, ×2 operations, ×512 samples × 4 epochs.
		{workload{"mlp, CartPole's default", nil, 4, nil, 2}, 2 * 26176 * 512 * 4},
		// conv 8·8 outputs × 3·3·4 patch × 16 (no input gradient), dense
		// 1024·128, heads 128·3 and 128·1: 468,480 multiply-adds a sample.
		{workload{"cnn, Breakout's 10×10×4", []string{"agent.name=\"cnn\"", "agent.conv=[[16, 3, 1]]", "agent.hidden=[128]", "env.num_envs=1", "ppo.num_steps=1", "ppo.num_minibatches=1", "ppo.update_epochs=1", "ppo.norm_adv=false"},
			400, []int{10, 10, 4}, 3}, 2 * 468480},
		{workload{"cnn with padding and a stride", []string{"agent.name=\"cnn\"", "agent.conv=[[8, 3, 2, 1]]", "agent.hidden=[16]", "env.num_envs=1", "ppo.num_steps=1", "ppo.num_minibatches=1", "ppo.update_epochs=1", "ppo.norm_adv=false"},
			400, []int{10, 10, 4}, 3}, 2 * (2*5*5*9*4*8 + 3*200*16 + 3*16*3 + 3*16)},
	} {
		cfg := tc.config(t)
		obs, act := tc.spaces()
		if got := UpdateFLOPs(cfg, obs, act); got != tc.want {
			t.Errorf("%s: %v FLOPs, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAutoKeepsSmallWorkOnTheCPU: trainer.device=auto keeps small networks
// on small batches on the CPU, where the H100 measurements found them
// faster, and takes a GPU for the rest.
func TestAutoKeepsSmallWorkOnTheCPU(t *testing.T) {
	for _, tc := range []struct {
		workload
		cpu bool
	}{
		{workload{"CartPole default (4 envs, [64,64])", nil, 4, nil, 2}, true},
		{workload{"CartPole, 16 envs", []string{"env.num_envs=16"}, 4, nil, 2}, true},
		{workload{"CartPole, 64 envs", []string{"env.num_envs=64"}, 4, nil, 2}, false},
		{workload{"CartPole, 4 envs, [256,256]", []string{"agent.hidden=[256,256]"}, 4, nil, 2}, false},
		{workload{"MinAtar preset", []string{`env.id="MinAtar/Breakout-v1"`}, 400, []int{10, 10, 4}, 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.config(t)
			obs, act := tc.spaces()
			cpu, why := gpu.AutoKeepsCPU(minibatchFLOPs(cfg, obs, act))
			if cpu != tc.cpu {
				t.Fatalf("auto keeps the CPU: %v (%q), want %v", cpu, why, tc.cpu)
			}
			if cpu && !strings.Contains(why, "MFLOP") {
				t.Errorf("the reason does not give the work: %q", why)
			}
		})
	}
}
