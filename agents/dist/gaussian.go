package dist

import (
	"math"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// Gaussian is a diagonal Gaussian over Dim continuous actions: the head
// gives the means, and Dim state-independent log standard deviations are
// shared by every row (CleanRL's ppo_continuous_action). Samples are not
// clipped here: the rollout keeps and scores the sample, and the
// environment gets it clipped to its box (envs.Space.Clip).
type Gaussian struct{ Dim int }

// NewGaussian is the distribution over dim continuous actions.
func NewGaussian(dim int) *Gaussian { return &Gaussian{Dim: dim} }

// Width implements Distribution: one mean per dimension.
func (g *Gaussian) Width() int { return g.Dim }

// ActionDim implements Distribution.
func (g *Gaussian) ActionDim() int { return g.Dim }

// Shared implements Distribution: the log standard deviations.
func (g *Gaussian) Shared() int { return g.Dim }

// Sample implements Distribution.
func (g *Gaussian) Sample(out, logStd []float32, rng *rand.Rand, deterministic bool, actions, logp []float32) {
	w := g.Dim
	for i := 0; i < len(out)/w; i++ {
		logp[i] = sampleGaussian(out[i*w:(i+1)*w], logStd, actions[i*w:(i+1)*w], rng, deterministic)
	}
}

// sampleGaussian draws actions from N(mean, exp(logStd)²) into out and
// returns the log-density of the (unclipped) sample.
func sampleGaussian(mean, logStd, out []float32, rng *rand.Rand, deterministic bool) float32 {
	var lp float64
	for j, m := range mean {
		sd := math.Exp(float64(logStd[j]))
		z := 0.0
		if !deterministic {
			z = rng.NormFloat64()
		}
		out[j] = float32(float64(m) + sd*z)
		// The log-density of the stored float32 sample.
		zq := (float64(out[j]) - float64(m)) / sd
		lp += -0.5*zq*zq - float64(logStd[j]) - 0.5*math.Log(2*math.Pi)
	}
	return float32(lp)
}

// halfLog2Pi is ½·log(2π).
const halfLog2Pi = 0.9189385332046727

// LogProb implements Distribution.
func (g *Gaussian) LogProb(out, logStd []float64, actions []float32, logp []float64) {
	w := g.Dim
	for i := range logp {
		var lp float64
		for j := 0; j < w; j++ {
			z := (float64(actions[i*w+j]) - out[i*w+j]) / math.Exp(logStd[j])
			lp += -0.5*z*z - logStd[j] - halfLog2Pi
		}
		logp[i] = lp
	}
}

// Entropy implements Distribution: Σ (½ + ½·log 2π + log σ_j), the same
// for every row.
func (g *Gaussian) Entropy(_, logStd, ent []float64) {
	var h float64
	for _, ls := range logStd {
		h += 0.5 + halfLog2Pi + ls
	}
	for i := range ent {
		ent[i] = h
	}
}

// Loss implements Distribution: the device's fused Gaussian loss.
func (g *Gaussian) Loss(dev gpu.Device, p gpu.PPOPolicyArgs) { dev.GaussianPPO(p) }
