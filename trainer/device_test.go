package trainer

import (
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// TestAutoPrefersCPU: trainer.device=auto keeps small networks on small
// batches on the CPU, where the H100 measurements found them faster, and
// takes a GPU for the rest.
func TestAutoPrefersCPU(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides []string
		obs       int
		shape     []int
		outputs   int
		cpu       bool
	}{
		{"CartPole default (4 envs, [64,64])", nil, 4, nil, 2, true},
		{"CartPole, 16 envs", []string{"env.num_envs=16"}, 4, nil, 2, true},
		{"CartPole, 64 envs", []string{"env.num_envs=64"}, 4, nil, 2, false},
		{"CartPole, 4 envs, [256,256]", []string{"agent.hidden=[256,256]"}, 4, nil, 2, false},
		{"MinAtar preset", []string{`env.id="MinAtar/Breakout-v1"`}, 400, []int{10, 10, 4}, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Resolve("", tc.overrides)
			if err != nil {
				t.Fatal(err)
			}
			cpu, why := autoPrefersCPU(cfg, tc.obs, tc.shape, tc.outputs)
			if cpu != tc.cpu {
				t.Fatalf("autoPrefersCPU = %v (%q), want %v", cpu, why, tc.cpu)
			}
			if cpu && !strings.Contains(why, "MFLOP") {
				t.Errorf("the reason does not give the work: %q", why)
			}
		})
	}
}
