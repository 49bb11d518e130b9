package agents

import (
	"math"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/envs"
)

func init() {
	Register(Spec{
		Name:        "random",
		Description: "uniformly random actions, no learning: the baseline every agent should beat",
		New:         func(b Build) (Agent, error) { return &Random{act: b.Act}, nil },
	})
}

// Random acts uniformly at random over the action space (boxes with
// infinite bounds sample a standard normal instead).
type Random struct{ act envs.Space }

// Act implements Agent; values are zero.
func (r *Random) Act(_ []float32, n int, rng *rand.Rand, _ bool, actions, logp, values []float32) {
	d := r.act.Size()
	for i := 0; i < n; i++ {
		values[i] = 0
		if r.act.Kind == envs.Discrete {
			actions[i] = float32(rng.IntN(r.act.N))
			logp[i] = float32(-math.Log(float64(r.act.N)))
			continue
		}
		var lp float64
		for j := 0; j < d; j++ {
			lo, hi := float64(r.act.Low[j]), float64(r.act.High[j])
			if math.IsInf(lo, 0) || math.IsInf(hi, 0) || hi-lo > 1e30 {
				actions[i*d+j] = float32(rng.NormFloat64())
				continue
			}
			actions[i*d+j] = float32(lo + (hi-lo)*rng.Float64())
			lp -= math.Log(hi - lo)
		}
		logp[i] = float32(lp)
	}
}

// Values implements Agent.
func (r *Random) Values(_ []float32, n int, values []float32) { clear(values[:n]) }
