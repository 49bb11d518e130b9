// Package lmrl is the arithmetic of token-level RL for language models, in
// plain Go: advantage estimators over groups of samples of one task (GRPO,
// Dr.GRPO, RLOO, REINFORCE++ with baseline) and token-level GAE with the
// clipped value loss of a critic (PPO proper), the clipped policy loss with
// clip-higher and dual clip, the KL estimators to a reference policy, and
// the ways token losses aggregate into a batch's loss (verl's
// loss_agg_mode). The trainer's language-model loop (trainer/lm.go) calls
// it; it knows nothing of models, devices or run directories, so each piece
// is tested against hand-computed values.
package lmrl

import (
	"fmt"
	"math"
)

// Estimators are the advantage estimators (verl's algorithm.adv_estimator).
const (
	GRPO      = "grpo"
	DrGRPO    = "drgrpo"
	RLOO      = "rloo"
	REINFORCE = "reinforce_plus_plus_baseline"
)

// eps keeps a zero-std group's advantages finite (verl's epsilon).
const eps = 1e-6

// GroupAdvantages turns each group's rewards (samples of one task) into
// advantages:
//
//	grpo:   (r − mean) / (std + ε)   (std: torch.std, unbiased), or r − mean
//	        when normStd is false (Dr.GRPO)
//	drgrpo: r − mean
//	rloo:   r − mean of the others = n/(n−1)·(r − mean)
//	reinforce_plus_plus_baseline: r − mean, then whitened over the whole
//	        batch, each sample weighted by its tokens (verl whitens tokens)
//
// A group of one sample has advantage 0 under every estimator but
// REINFORCE++ (whose baseline is then the sample itself, so 0 as well
// before whitening). tokens (one per sample, nil: all 1) weights the
// REINFORCE++ whitening.
func GroupAdvantages(est string, normStd bool, groups [][]float64, tokens [][]int) ([][]float64, error) {
	out := make([][]float64, len(groups))
	for g, rs := range groups {
		n := float64(len(rs))
		mean, std := MeanStd(rs)
		a := make([]float64, len(rs))
		for i, r := range rs {
			switch est {
			case GRPO:
				a[i] = r - mean
				if normStd {
					a[i] /= std + eps
				}
			case DrGRPO, REINFORCE:
				a[i] = r - mean
			case RLOO:
				if n > 1 {
					a[i] = n / (n - 1) * (r - mean)
				}
			default:
				return nil, fmt.Errorf("unknown advantage estimator %q (grpo, drgrpo, rloo, reinforce_plus_plus_baseline)", est)
			}
			if len(rs) == 1 {
				a[i] = 0
			}
		}
		out[g] = a
	}
	if est == REINFORCE {
		whiten(out, tokens)
	}
	return out, nil
}

// MeanStd is the mean and the unbiased standard deviation (0 for fewer
// than two values).
func MeanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// whiten standardises every advantage with the token-weighted mean and
// variance of the batch (verl's masked_whiten: unbiased variance over the
// tokens, ε 1e-8).
func whiten(adv [][]float64, tokens [][]int) {
	var sw, s float64
	w := func(g, i int) float64 {
		if tokens == nil {
			return 1
		}
		return float64(tokens[g][i])
	}
	for g := range adv {
		for i, a := range adv[g] {
			sw += w(g, i)
			s += w(g, i) * a
		}
	}
	if sw < 2 {
		return
	}
	mean := s / sw
	var ss float64
	for g := range adv {
		for i, a := range adv[g] {
			ss += w(g, i) * (a - mean) * (a - mean)
		}
	}
	inv := 1 / math.Sqrt(ss/(sw-1)+1e-8)
	for g := range adv {
		for i := range adv[g] {
			adv[g][i] = (adv[g][i] - mean) * inv
		}
	}
}

// ZeroStd reports whether a group's rewards are all equal: DAPO's dynamic
// sampling drops such groups, whose GRPO advantages are all zero.
func ZeroStd(rs []float64) bool {
	for _, r := range rs {
		if r != rs[0] {
			return false
		}
	}
	return true
}

// StepAdvantages is the per_step mode for multi-turn episodes: each step's
// advantage is its return to go (the sum of its and the later steps'
// rewards) through the estimator's transformation of the group's episode
// returns: (G − mean R) / (std R + ε) for GRPO, G − mean R for the others
// (RLOO's n/(n−1) included). steps[g][i] are sample i's step rewards.
func StepAdvantages(est string, normStd bool, steps [][][]float64) ([][][]float64, error) {
	out := make([][][]float64, len(steps))
	for g, samples := range steps {
		returns := make([]float64, len(samples))
		for i, rs := range samples {
			for _, r := range rs {
				returns[i] += r
			}
		}
		mean, std := MeanStd(returns)
		n := float64(len(samples))
		out[g] = make([][]float64, len(samples))
		for i, rs := range samples {
			a := make([]float64, len(rs))
			togo := 0.0
			for k := len(rs) - 1; k >= 0; k-- {
				togo += rs[k]
				v := togo - mean
				switch est {
				case GRPO:
					if normStd {
						v /= std + eps
					}
				case RLOO:
					if n > 1 {
						v *= n / (n - 1)
					} else {
						v = 0
					}
				case DrGRPO, REINFORCE:
				default:
					return nil, fmt.Errorf("unknown advantage estimator %q", est)
				}
				if len(samples) == 1 {
					v = 0
				}
				a[k] = v
			}
			out[g][i] = a
		}
	}
	return out, nil
}
