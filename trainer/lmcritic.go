package trainer

import (
	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/trainer/lmrl"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// This file is PPO proper for a language model (algorithm.adv_estimator =
// gae): a value head on the policy's trunk (agents/lm's ValueHead, TRL's
// AutoModelForCausalLMWithValueHead) scores every trained token before the
// update; token-level GAE over each episode's trained tokens turns rewards
// and those values into advantages and returns (verl's
// compute_gae_advantage_return with its response mask); the update adds
// critic.vf_coef times the clipped value loss to the policy loss, whose
// gradient reaches the trunk beside the policy's, and steps the head with
// Adam of its own.

// criticValues scores every sequence's trained tokens with the value head,
// as the rollout's values (V_old).
func (t *Trainer) criticValues(seqs []*lmSeq) error {
	r := t.lmr
	return t.scoreSeqs(seqs, r.pol.Model, &r.pass, &r.passTokens, lm.ForwardOptions{Values: r.value}, "the value pass", func(s *lmSeq) func(j int, sc lm.Scores, k int) {
		s.values = make([]float32, len(s.mask))
		return func(j int, sc lm.Scores, k int) { s.values[j] = sc.Values[k] }
	})
}

// tokenRef is a trained token: its sequence and response index.
type tokenRef struct{ seq, tok int }

// gaeAdvantages gives every trained token its GAE advantage and return.
// An episode's trained tokens, over all its rows in order, are one chain
// (the environment's and template tokens between turns are skipped, as
// verl's response mask skips them). The episode's reward sits on its last
// trained token (stepwise_advantage = broadcast), or each step's reward on
// the last token of the answer that earned it and the rest of the
// episode's reward on the last token (per_step); with use_kl_in_reward
// each token's reward also loses kl_coef times its KL to the reference.
// Advantages are then whitened over the batch's trained tokens.
func (t *Trainer) gaeAdvantages(groups [][]*textrl.Episode, seqs []*lmSeq, owner []seqOwner, klPenalty *float64) error {
	c := &t.cfg.Algorithm
	var order [][2]int
	rows := map[[2]int][]int{}
	for i, o := range owner {
		k := [2]int{o.group, o.sample}
		if _, ok := rows[k]; !ok {
			order = append(order, k)
		}
		rows[k] = append(rows[k], i)
	}
	masks := make([][]uint8, len(seqs))
	advs := make([][]float64, len(seqs))
	for _, k := range order {
		ep := groups[k[0]][k[1]]
		var at []tokenRef
		var rewards, values []float64
		lastOfStep := map[int]int{} // step → its answer's last token in the chain
		for _, si := range rows[k] {
			s := seqs[si]
			row := ep.Rows[owner[si].row]
			masks[si], s.ret = make([]uint8, len(s.mask)), make([]float64, len(s.mask))
			seg, prev := -1, uint8(0)
			klSum := 0.0
			for j, mk := range s.mask {
				if mk == 1 && prev == 0 {
					seg++
				}
				prev = mk
				if mk != 1 || s.start+j-1 < 0 { // not a trained token
					continue
				}
				masks[si][j] = 1
				rw := 0.0
				if c.UseKLInReward && s.refLogp != nil {
					kl, _, err := lmrl.KL(c.KLPenalty, float64(s.oldLogp[j]), float64(s.refLogp[j]))
					if err != nil {
						return err
					}
					rw -= c.KLCoef * kl
					klSum += kl
				}
				if row.Trajectory == 0 && seg < len(row.Steps) {
					lastOfStep[row.Steps[seg]] = len(at)
				}
				at = append(at, tokenRef{si, j})
				rewards = append(rewards, rw)
				values = append(values, float64(s.values[j]))
			}
			*klPenalty += klSum / float64(len(seqs))
		}
		if len(at) == 0 {
			continue
		}
		rest := ep.Reward()
		if c.StepwiseAdv == "per_step" && len(ep.Trajectories) > 0 {
			for step, st := range ep.Trajectories[0].Steps {
				if i, ok := lastOfStep[step]; ok {
					rewards[i] += st.Reward
					rest -= st.Reward
				}
			}
		}
		rewards[len(rewards)-1] += rest
		ones := make([]uint8, len(at))
		for i := range ones {
			ones[i] = 1
		}
		adv, ret, err := lmrl.GAEAdvantages(rewards, values, ones, c.Gamma, c.Lam)
		if err != nil {
			return err
		}
		for i, a := range at {
			seqs[a.seq].adv[a.tok], seqs[a.seq].ret[a.tok] = adv[i], ret[i]
		}
	}
	for i, s := range seqs {
		advs[i] = s.adv
		if masks[i] == nil {
			masks[i] = make([]uint8, len(s.mask))
		}
	}
	lmrl.WhitenTokens(advs, masks)
	return nil
}

// criticLoss is the value head's part of a micro-batch's loss.
type criticLoss struct {
	head *lm.ValueHead
	loss lmrl.ValueLoss
	coef float64   // critic.vf_coef: its weight beside the policy loss
	w    []float64 // each sequence's aggregation weight (critic.loss_agg_mode)
	st   *lmrl.ValueStats
}

// valueGrads adds the value loss of the scored positions idx of the
// sequences mb, whose values Forward returned, to c's figures and returns
// its gradient in each value, times vf_coef.
func (c *criticLoss) valueGrads(values []float32, mb []*lmSeq, idx [][2]int) []float32 {
	dv := make([]float32, len(idx))
	for k, at := range idx {
		s := mb[at[0]]
		v := float64(values[k])
		lt, d, clipped := c.loss.TokenLoss(v, float64(s.values[at[1]]), s.ret[at[1]])
		w := c.w[at[0]]
		c.st.Loss += w * lt
		c.st.VPred += v
		c.st.Tokens++
		if clipped {
			c.st.ClipFrac++
		}
		dv[k] = float32(c.coef * w * d)
	}
	return dv
}

// criticFigures adds the critic's figures to m (verl's names): the value
// loss and clip fraction of the update, the mean predicted value, and
// over the rollout's values the mean return and the explained variance.
func criticFigures(m *Metrics, seqs []*lmSeq, st lmrl.ValueStats, steps int, gradNorm float64) {
	var ret, vals []float64
	for _, s := range seqs {
		for j, mk := range s.mask {
			if mk == 1 && s.start+j-1 >= 0 {
				ret, vals = append(ret, s.ret[j]), append(vals, float64(s.values[j]))
			}
		}
	}
	if st.Tokens == 0 || len(ret) == 0 {
		return
	}
	ev := lmrl.ExplainedVariance(ret, vals)
	vf := st.Loss / float64(steps)
	m.ValueLoss, m.ExplainedVariance = Float(vf), Float(ev)
	m.Set("critic/vf_loss", vf)
	m.Set("critic/vf_clipfrac", st.ClipFrac/st.Tokens)
	m.Set("critic/vpred_mean", st.VPred/st.Tokens)
	m.Set("critic/vf_explained_var", ev)
	rm, _ := lmrl.MeanStd(ret)
	vm, _ := lmrl.MeanStd(vals)
	m.Set("critic/returns/mean", rm)
	m.Set("critic/values/mean", vm)
	m.Set("critic/grad_norm", gradNorm)
}
