package dist

import (
	"math"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// Categorical is a distribution over N actions with softmax(logits)
// probabilities; an action is its index, one float.
type Categorical struct {
	N     int
	probs []float64 // scratch: one row's unnormalised probabilities
}

// NewCategorical is the distribution over n actions.
func NewCategorical(n int) *Categorical { return &Categorical{N: n, probs: make([]float64, n)} }

// Width implements Distribution: one logit per action.
func (c *Categorical) Width() int { return c.N }

// ActionDim implements Distribution: the action's index.
func (c *Categorical) ActionDim() int { return 1 }

// Shared implements Distribution: none.
func (c *Categorical) Shared() int { return 0 }

// Sample implements Distribution.
func (c *Categorical) Sample(out, _ []float32, rng *rand.Rand, deterministic bool, actions, logp []float32) {
	for i := 0; i < len(out)/c.N; i++ {
		actions[i], logp[i] = sampleCategorical(out[i*c.N:(i+1)*c.N], c.probs, rng, deterministic)
	}
}

// sampleCategorical draws an index from softmax(logits) and returns it with
// its log-probability; probs is scratch of len(logits).
func sampleCategorical(logits []float32, probs []float64, rng *rand.Rand, deterministic bool) (float32, float32) {
	mx := float64(logits[0])
	best := 0
	for j, v := range logits {
		if float64(v) > mx {
			mx, best = float64(v), j
		}
	}
	var sum float64
	for j, v := range logits {
		probs[j] = math.Exp(float64(v) - mx)
		sum += probs[j]
	}
	choice := best
	if !deterministic {
		u := rng.Float64() * sum
		choice = len(logits) - 1
		for j, p := range probs {
			if u < p {
				choice = j
				break
			}
			u -= p
		}
	}
	return float32(choice), float32(float64(logits[choice]) - mx - math.Log(sum))
}

// logSoftmax writes log softmax(row) into lp.
func logSoftmax(row, lp []float64) {
	mx := row[0]
	for _, v := range row {
		mx = math.Max(mx, v)
	}
	var se float64
	for _, v := range row {
		se += math.Exp(v - mx)
	}
	lse := mx + math.Log(se)
	for k, v := range row {
		lp[k] = v - lse
	}
}

// LogProb implements Distribution.
func (c *Categorical) LogProb(out, _ []float64, actions []float32, logp []float64) {
	for i := range logp {
		logSoftmax(out[i*c.N:(i+1)*c.N], c.probs)
		logp[i] = c.probs[int(actions[i])]
	}
}

// Entropy implements Distribution: −Σ p·log p.
func (c *Categorical) Entropy(out, _, ent []float64) {
	for i := range ent {
		logSoftmax(out[i*c.N:(i+1)*c.N], c.probs)
		var h float64
		for _, lp := range c.probs {
			h -= math.Exp(lp) * lp
		}
		ent[i] = h
	}
}

// Loss implements Distribution: the device's fused categorical loss.
func (c *Categorical) Loss(dev gpu.Device, p gpu.PPOPolicyArgs) { dev.CategoricalPPO(p) }
