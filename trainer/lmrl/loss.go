package lmrl

import (
	"fmt"
	"math"
)

// KL estimators of KL(π ‖ π_ref) per token from the log-probabilities
// logp (policy) and ref (reference), as verl's kl_penalty writes them:
//
//	k1 ("kl"):         logp − ref
//	k2 ("mse"):        ½ (logp − ref)²
//	k3 ("low_var_kl"): exp(ref − logp) − (ref − logp) − 1, clamped to [−10, 10]
//
// KL returns the estimate and its derivative in logp.
func KL(kind string, logp, ref float64) (kl, dlogp float64, err error) {
	d := logp - ref
	switch kind {
	case "kl", "k1":
		return d, 1, nil
	case "mse", "k2":
		return 0.5 * d * d, d, nil
	case "low_var_kl", "k3":
		r := math.Exp(-d)
		kl = r + d - 1
		if kl > 10 || kl < -10 {
			return math.Max(-10, math.Min(10, kl)), 0, nil
		}
		return kl, 1 - r, nil
	}
	return 0, 0, fmt.Errorf("unknown KL estimator %q (kl/k1, mse/k2, low_var_kl/k3)", kind)
}

// Loss holds the policy loss's coefficients (verl's actor keys).
type Loss struct {
	ClipLow, ClipHigh float64 // the ratio is clipped to [1−ClipLow, 1+ClipHigh]
	ClipC             float64 // dual clip: a negative advantage's loss is at most ClipC·|A| (0: off)
	KLCoef            float64 // weight of the KL to the reference (0: none)
	KLType            string
	EntCoef           float64 // entropy bonus
	AggMode           string  // loss_agg_mode
	// NormLength is seq-mean-token-sum-norm's divisor (the response length
	// budget, Dr.GRPO's constant).
	NormLength int
}

// Token is one scored token of a sequence: the current log-probability,
// the behaviour policy's (rollout), the reference's (when KLCoef > 0), the
// entropy and the advantage.
type Token struct {
	LogP, OldLogP, RefLogP, Entropy, Adv float64
}

// Stats are a batch's loss figures, each a token-mean (sums; divide by
// Tokens), the names TRL and verl give them in the comments.
type Stats struct {
	Tokens    float64
	PGLoss    float64 // actor/pg_loss (aggregated, not a sum)
	ClipFrac  float64 // actor/pg_clipfrac: the clipped term was taken
	ClipLow   float64 // clip_ratio/low_mean: ratio < 1−low with A < 0
	ClipHigh  float64 // clip_ratio/high_mean: ratio > 1+high with A > 0
	DualClip  float64 // actor/pg_clipfrac_lower: the dual clip bound
	ApproxKL  float64 // actor/ppo_kl: (ratio−1) − log ratio
	KL        float64 // actor/kl_loss: the estimator to the reference
	Entropy   float64 // actor/entropy
	Loss      float64 // the aggregated loss (pg + KL − entropy)
	Sequences float64
}

// Add accumulates o into s.
func (s *Stats) Add(o Stats) {
	s.Tokens += o.Tokens
	s.PGLoss += o.PGLoss
	s.ClipFrac += o.ClipFrac
	s.ClipLow += o.ClipLow
	s.ClipHigh += o.ClipHigh
	s.DualClip += o.DualClip
	s.ApproxKL += o.ApproxKL
	s.KL += o.KL
	s.Entropy += o.Entropy
	s.Loss += o.Loss
	s.Sequences += o.Sequences
}

// Weights are the aggregation weights of a batch's tokens: the loss is
// Σ_t w_t ℓ_t. seqTokens are the scored tokens of each sequence.
//
//	token-mean:              1 / (all tokens)
//	seq-mean-token-mean:     1 / (sequences · the sequence's tokens)
//	seq-mean-token-sum:      1 / sequences
//	seq-mean-token-sum-norm: 1 / (sequences · NormLength)
func (l Loss) Weights(seqTokens []int) ([]float64, error) {
	w := make([]float64, len(seqTokens))
	total := 0
	for _, n := range seqTokens {
		total += n
	}
	b := float64(len(seqTokens))
	for i, n := range seqTokens {
		if n == 0 {
			continue
		}
		switch l.AggMode {
		case "token-mean":
			w[i] = 1 / float64(total)
		case "seq-mean-token-mean":
			w[i] = 1 / (b * float64(n))
		case "seq-mean-token-sum":
			w[i] = 1 / b
		case "seq-mean-token-sum-norm":
			if l.NormLength < 1 {
				return nil, fmt.Errorf("seq-mean-token-sum-norm needs a positive length, got %d", l.NormLength)
			}
			w[i] = 1 / (b * float64(l.NormLength))
		default:
			return nil, fmt.Errorf("unknown loss_agg_mode %q", l.AggMode)
		}
	}
	return w, nil
}

// TokenLoss is one token's loss ℓ = pg + KLCoef·kl − EntCoef·H and its
// derivatives in the log-probability and the entropy, where
//
//	ratio = exp(logp − old)
//	pg    = max(−A·ratio, −A·clip(ratio, 1−low, 1+high))
//	pg    = min(pg, −A·ClipC)   when A < 0 and ClipC > 1 (dual clip)
//
// The figures of st are counted for the token.
func (l Loss) TokenLoss(t Token, st *Stats) (loss, dlogp, dent float64, err error) {
	logRatio := t.LogP - t.OldLogP
	ratio := math.Exp(logRatio)
	pg1 := -t.Adv * ratio
	pg2 := -t.Adv * math.Min(math.Max(ratio, 1-l.ClipLow), 1+l.ClipHigh)
	pg, dpg := pg1, -t.Adv*ratio
	if pg2 > pg1 {
		pg, dpg = pg2, 0
		st.ClipFrac++
	}
	if l.ClipC > 1 && t.Adv < 0 {
		if bound := -t.Adv * l.ClipC; bound < pg {
			pg, dpg = bound, 0
			st.DualClip++
		}
	}
	if ratio < 1-l.ClipLow && t.Adv < 0 {
		st.ClipLow++
	}
	if ratio > 1+l.ClipHigh && t.Adv > 0 {
		st.ClipHigh++
	}
	loss, dlogp = pg, dpg
	if l.KLCoef > 0 {
		kl, dkl, e := KL(l.KLType, t.LogP, t.RefLogP)
		if e != nil {
			return 0, 0, 0, e
		}
		loss += l.KLCoef * kl
		dlogp += l.KLCoef * dkl
		st.KL += kl
	}
	loss -= l.EntCoef * t.Entropy
	st.Tokens++
	st.ApproxKL += (ratio - 1) - logRatio
	st.Entropy += t.Entropy
	return loss, dlogp, -l.EntCoef, nil
}

// BatchLoss is the aggregated loss of sequences of tokens and, per token,
// its gradient in the log-probability and in the entropy: what the model's
// backward pass takes.
func (l Loss) BatchLoss(seqs [][]Token) (loss float64, dlogp, dent [][]float64, st Stats, err error) {
	n := make([]int, len(seqs))
	for i, s := range seqs {
		n[i] = len(s)
	}
	w, err := l.Weights(n)
	if err != nil {
		return 0, nil, nil, st, err
	}
	dlogp, dent = make([][]float64, len(seqs)), make([][]float64, len(seqs))
	for i, s := range seqs {
		dlogp[i], dent[i] = make([]float64, len(s)), make([]float64, len(s))
		for j, t := range s {
			var ts Stats
			lt, dl, de, err := l.TokenLoss(t, &ts)
			if err != nil {
				return 0, nil, nil, st, err
			}
			pg := lt // less the KL and entropy terms: the policy-gradient part, for the record
			if l.KLCoef > 0 {
				pg -= l.KLCoef * ts.KL
			}
			pg += l.EntCoef * t.Entropy
			ts.PGLoss = w[i] * pg
			ts.Loss = w[i] * lt
			st.Add(ts)
			loss += w[i] * lt
			dlogp[i][j], dent[i][j] = w[i]*dl, w[i]*de
		}
	}
	st.Sequences = float64(len(seqs))
	return loss, dlogp, dent, st, nil
}
