package agents

import (
	"math/rand/v2"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// BenchmarkPolicyForward measures the rollout-time forward pass (actor and
// critic, sampling included) for CartPole's shapes, and the training-time
// forward pass over a minibatch.
func BenchmarkPolicyForward(b *testing.B) {
	for _, bc := range []struct {
		name   string
		rows   int
		hidden []int
		train  bool
	}{
		{"act/envs=4/64x64", 4, []int{64, 64}, false},
		{"act/envs=64/64x64", 64, []int{64, 64}, false},
		{"minibatch=128/64x64", 128, []int{64, 64}, true},
		{"minibatch=1024/256x256", 1024, []int{256, 256}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dev := gpu.NewCPU(0)
			defer dev.Close()
			a, err := NewActorCritic(Build{Obs: envs.Space{Kind: envs.Box, Dim: 4}, Act: envs.Space{Kind: envs.Discrete, N: 2},
				Hidden: bc.hidden, Activation: "tanh", Device: dev, RNG: rand.New(rand.NewPCG(1, 1))})
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
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if bc.train {
					a.Forward(x)
				} else {
					a.Act(obs, bc.rows, rng, false, acts, logp, vals)
				}
			}
			b.ReportMetric(float64(bc.rows*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
