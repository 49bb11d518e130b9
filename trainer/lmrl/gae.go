package lmrl

import (
	"fmt"
	"math"
)

// GAE is the estimator name of PPO proper with a value head.
const GAE = "gae"

// GAEAdvantages computes generalised advantage estimates and returns over one
// sequence of tokens, as verl's compute_gae_advantage_return does with a
// response mask: walking back from the end,
//
//	δ_t = r_t + γ·V_next − V_t,   A_t = δ_t + γλ·A_next,   R_t = A_t + V_t
//
// where V_next and A_next are those of the next token with mask 1 (0 past
// the end): tokens with mask 0 (the environment's and the template's) are
// skipped, neither discounted nor bootstrapped, and get advantage and
// return 0. rewards, values and mask have one entry per token.
func GAEAdvantages(rewards, values []float64, mask []uint8, gamma, lam float64) (adv, ret []float64, err error) {
	if len(values) != len(rewards) || len(mask) != len(rewards) {
		return nil, nil, fmt.Errorf("GAE needs one reward, value and mask entry per token (got %d, %d, %d)", len(rewards), len(values), len(mask))
	}
	adv, ret = make([]float64, len(rewards)), make([]float64, len(rewards))
	nextV, nextA := 0.0, 0.0
	for t := len(rewards) - 1; t >= 0; t-- {
		if mask[t] == 0 {
			continue
		}
		delta := rewards[t] + gamma*nextV - values[t]
		a := delta + gamma*lam*nextA
		adv[t], ret[t] = a, a+values[t]
		nextV, nextA = values[t], a
	}
	return adv, ret, nil
}

// WhitenTokens standardises the advantages of the masked tokens of every
// sequence with their mean and unbiased variance over the whole batch
// (verl's masked_whiten, ε 1e-8); mask-0 entries are left as they are.
func WhitenTokens(adv [][]float64, mask [][]uint8) {
	var flat []float64
	for i := range adv {
		for t, m := range mask[i] {
			if m == 1 {
				flat = append(flat, adv[i][t])
			}
		}
	}
	w := [][]float64{flat}
	whiten(w, nil)
	k := 0
	for i := range adv {
		for t, m := range mask[i] {
			if m == 1 {
				adv[i][t] = flat[k]
				k++
			}
		}
	}
}

// ValueLoss is the critic's loss (verl's compute_value_loss): per token
// ½·max((V − R)², (clip(V, V_old − c, V_old + c) − R)²), where V_old is the
// value the rollout's advantages were computed with and R the GAE return,
// aggregated with AggMode's weights (Loss.Weights).
type ValueLoss struct {
	ClipRange  float64 // cliprange_value
	AggMode    string
	NormLength int // seq-mean-token-sum-norm's divisor
}

// ValueStats are a batch's critic figures: sums over its tokens (divide by
// Tokens) except Loss, which is aggregated.
type ValueStats struct {
	Tokens   float64
	Loss     float64 // critic/vf_loss
	ClipFrac float64 // critic/vf_clipfrac: the clipped term was the larger
	VPred    float64 // critic/vpred_mean
}

// Add accumulates o into s.
func (s *ValueStats) Add(o ValueStats) {
	s.Tokens += o.Tokens
	s.Loss += o.Loss
	s.ClipFrac += o.ClipFrac
	s.VPred += o.VPred
}

// TokenLoss is one token's value loss (before aggregation and the ½ of
// verl's) and its derivative in the value v; clipped reports that the
// clipped term was the larger.
func (l ValueLoss) TokenLoss(v, old, ret float64) (loss, dv float64, clipped bool) {
	vc := math.Min(math.Max(v, old-l.ClipRange), old+l.ClipRange)
	l1, l2 := (v-ret)*(v-ret), (vc-ret)*(vc-ret)
	if l2 > l1 { // then v is outside the clip range, where the clipped term is constant
		return 0.5 * l2, 0, true
	}
	return 0.5 * l1, v - ret, false
}

// BatchLoss is the aggregated value loss of sequences of tokens (values,
// the rollout's values and returns, one slice per sequence) and its
// gradient in each value.
func (l ValueLoss) BatchLoss(v, old, ret [][]float64) (loss float64, dv [][]float64, st ValueStats, err error) {
	n := make([]int, len(v))
	for i := range v {
		if len(old[i]) != len(v[i]) || len(ret[i]) != len(v[i]) {
			return 0, nil, st, fmt.Errorf("sequence %d: %d values, %d old values, %d returns", i, len(v[i]), len(old[i]), len(ret[i]))
		}
		n[i] = len(v[i])
	}
	w, err := Loss{AggMode: l.AggMode, NormLength: l.NormLength}.Weights(n)
	if err != nil {
		return 0, nil, st, err
	}
	dv = make([][]float64, len(v))
	for i := range v {
		dv[i] = make([]float64, len(v[i]))
		for t := range v[i] {
			lt, d, clipped := l.TokenLoss(v[i][t], old[i][t], ret[i][t])
			loss += w[i] * lt
			dv[i][t] = w[i] * d
			st.Tokens++
			st.VPred += v[i][t]
			if clipped {
				st.ClipFrac++
			}
		}
	}
	st.Loss = loss
	return loss, dv, st, nil
}

// ExplainedVariance is 1 − Var(R − V)/Var(R) over paired returns and values
// (verl's critic/vf_explained_var; NaN when the returns do not vary).
func ExplainedVariance(ret, v []float64) float64 {
	diff := make([]float64, len(ret))
	for i := range ret {
		diff[i] = ret[i] - v[i]
	}
	_, sr := MeanStd(ret)
	_, sd := MeanStd(diff)
	if sr == 0 || len(ret) < 2 {
		return math.NaN()
	}
	return 1 - sd*sd/(sr*sr)
}
