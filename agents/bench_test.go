package agents

import (
	"math/rand/v2"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// BenchmarkPolicyForward measures the rollout-time forward pass (actor and
// critic, sampling included) for CartPole's shapes, and a minibatch's
// training passes (forward, losses and backward of actor and critic).
func BenchmarkPolicyForward(b *testing.B) {
	for _, bc := range []struct {
		name   string
		rows   int
		hidden []int
		train  bool
		cores  int
	}{
		{"act/envs=4/64x64", 4, []int{64, 64}, false, 0},
		{"act/envs=64/64x64", 64, []int{64, 64}, false, 0},
		{"minibatch=128/64x64/cores=1", 128, []int{64, 64}, true, 1},
		{"minibatch=128/64x64/cores=all", 128, []int{64, 64}, true, 0},
		{"minibatch=1024/256x256/cores=1", 1024, []int{256, 256}, true, 1},
		{"minibatch=1024/256x256/cores=all", 1024, []int{256, 256}, true, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dev := gpu.NewCPU(bc.cores)
			defer dev.Close()
			a, err := NewActorCritic(Build{Obs: envs.Space{Kind: envs.Box, Dim: 4}, Act: envs.Space{Kind: envs.Discrete, N: 2},
				Config: Config{"hidden": bc.hidden, "activation": "tanh"}, Device: dev, RNG: rand.New(rand.NewPCG(1, 1))})
			if err != nil {
				b.Fatal(err)
			}
			obs := make([]float32, bc.rows*4)
			for i := range obs {
				obs[i] = float32(i%7) * 0.1
			}
			acts, logp, vals := make([]float32, bc.rows), make([]float32, bc.rows), make([]float32, bc.rows)
			x := dev.Alloc(bc.rows, 4)
			dev.Upload(x, obs)
			rng := rand.New(rand.NewPCG(2, 2))
			a.Act(obs, bc.rows, rng, false, acts, logp, vals)
			up := func(v []float32) gpu.Tensor { t := dev.Alloc(bc.rows, 1); dev.Upload(t, v); return t }
			stats := dev.Alloc(1, gpu.NumStats)
			policy := gpu.PPOPolicyArgs{Actions: up(acts), OldLogp: up(logp), Adv: up(obs[:bc.rows]),
				ClipCoef: 0.2, EntCoef: 0.01, NormAdv: true, Stats: stats}
			value := gpu.ValueArgs{OldValue: up(vals), Returns: up(obs[bc.rows : 2*bc.rows]),
				ClipCoef: 0.2, Clip: true, VFCoef: 0.5, Stats: stats}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if bc.train {
					a.Gradients(x, policy, &value)
				} else {
					a.Act(obs, bc.rows, rng, false, acts, logp, vals)
				}
			}
			b.ReportMetric(float64(bc.rows*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
