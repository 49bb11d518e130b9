package trainer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/remote"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/lmrl"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// This file is token-level RL for a language model, in the order verl's
// ray_trainer runs it: sample rollout.n episodes of data.train_batch_size
// tasks, drop the groups whose rewards are all equal (DAPO, when asked),
// score the reference policy, turn rewards into advantages, then
// actor.ppo_epochs passes of mini-batch updates of the clipped policy loss
// (trainer/lmrl) through the model's forward and backward passes, with
// Adam. A metrics row's step is the iteration (verl's global step).

func newRand(src *rand.PCG) *rand.Rand { return rand.New(src) }

// lmSeq is one training sequence: the row's ids, where the response
// starts, and per response token its mask, rollout log-probability,
// reference log-probability and advantage, and with a value head (gae) the
// value before the update and the GAE return.
type lmSeq struct {
	ids     []int32
	start   int
	mask    []uint8
	oldLogp []float32
	refLogp []float32
	adv     []float64
	values  []float32
	ret     []float64
}

func (s *lmSeq) scored() int {
	n := 0
	for _, m := range s.mask {
		n += int(m)
	}
	return n
}

// trainLM is train() for a language-model run.
func (t *Trainer) trainLM(ctx context.Context, f *runFiles) (Summary, error) {
	r := t.lmr
	c := &t.cfg
	p := &progress{start: t.opts.Now(), episodes: newEpisodeWindow(100)}
	p.lastSave = p.start
	n := r.pol.Model.Params.Len()
	p.opt = adam{m: t.dev.Alloc(1, n), v: t.dev.Alloc(1, n)}
	if rp := t.resume; rp != nil {
		st := rp.state
		if err := p.episodes.restore(st.Episodes); err != nil {
			return Summary{}, err
		}
		p.iter, p.step, p.opt.step = st.Iter, st.Step, st.AdamStep
		p.start = p.start.Add(-time.Duration(st.ElapsedS * float64(time.Second)))
		t.dev.Upload(p.opt.m, t.resumeAdam[0])
		t.dev.Upload(p.opt.v, t.resumeAdam[1])
		for _, n := range t.notes {
			t.logf("warning: %s", n)
		}
		t.logf("resumed from %s at iteration %d", filepath.Base(rp.path), st.Iter)
	}
	transcripts, err := runstore.OpenJSONL(filepath.Join(f.dir, runstore.TranscriptsFile))
	if err != nil {
		return Summary{}, err
	}
	defer transcripts.Close()
	defer remote.CloseTextPools() // the servers remote-text environments started for this run
	sum := Summary{Iterations: p.iter, Last: Metrics{Iter: p.iter, Step: p.step}}
	t.stepsDone.Store(p.step)
	mc := r.pol.Model.Config
	t.logf("training %s with a %s-parameter %s model (%s chat, %d tokens) on %s for %d iterations",
		c.Env.ID, lm.ParamCount(mc.Params()), mc.Arch, r.pol.Format, r.pol.Tokenizer.VocabSize(), t.devInfo, c.Trainer.TotalTrainingSteps)
	if r.warmStart != nil && t.resume == nil {
		if err := r.warmStart(ctx, WarmStart{Policy: r.pol, RunDir: f.dir, Config: c.Clone(), Logf: t.logf}); err != nil {
			return sum, fmt.Errorf("the warm start: %w", err)
		}
		if r.ref != nil { // the reference is the policy RL starts from
			host := make([]float32, n)
			t.dev.Download(host, r.pol.Model.Params)
			t.dev.Upload(r.ref.Params, host)
		}
	}
	for iter := p.iter + 1; iter <= t.cfg.Trainer.TotalTrainingSteps; iter++ {
		t.iterStart = time.Now()
		if err := t.applyEdits(f, iter, p); err != nil {
			return sum, err
		}
		if err := t.waitWhilePaused(ctx, f, &sum, p); err != nil || ctx.Err() != nil {
			break
		}
		if iter > t.cfg.Trainer.TotalTrainingSteps { // lowered live while paused
			break
		}
		m, groups, err := t.lmIteration(ctx, iter, p)
		if errors.Is(err, errCut) || ctx.Err() != nil {
			t.logf("iteration %d: stopped before it finished; it is not recorded", iter)
			break
		}
		if err != nil {
			return sum, fmt.Errorf("iteration %d: %w; the last checkpoint is the last good state", iter, err)
		}
		p.iter, p.step = iter, int64(iter)
		if len(t.valRows) > 0 && c.Trainer.TestFreq > 0 && (iter%c.Trainer.TestFreq == 0 || iter == c.Trainer.TotalTrainingSteps) {
			if err := t.validateLM(ctx, iter, &m, transcripts); err != nil {
				t.logf("validation: %v", err)
			}
		}
		if err := t.writeTranscripts(transcripts, iter, "train", groups, c.Trainer.TranscriptGroups); err != nil {
			return sum, err
		}
		elapsed := p.elapsed(t.opts.Now())
		m.TimeS = Float(elapsed.Seconds())
		m.SPS = Float(float64(iter) / math.Max(elapsed.Seconds(), 1e-9)) // iterations a second
		mean, lo, hi, length := p.episodes.stats()
		m.Episodes, m.EpReturnMean, m.EpReturnMin, m.EpReturnMax, m.EpLengthMean =
			p.episodes.total, Float(mean), Float(lo), Float(hi), Float(length)
		if err := t.logMetrics(f, &m); err != nil {
			return sum, err
		}
		sum.Last, sum.Iterations = m, iter
		t.stepsDone.Store(p.step)
		if err := t.checkpointIfDue(f, &sum, p, iter); err != nil {
			return sum, err
		}
	}
	if err := t.applyEdits(f, p.iter+1, p); err != nil {
		return sum, err
	}
	if p.iter > 0 {
		if err := t.checkpoint(f, &sum, p, false); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// engine makes the episode engine with the config's current settings
// (temperature and top_p may have changed live).
func (t *Trainer) engine(temperature float64, seed int64) (*textrl.Engine, error) {
	c, r := &t.cfg, t.lmr
	o := textrl.Options{Tokenizer: r.pol.Tokenizer, Renderer: r.pol.Renderer, Generator: r.gen,
		Sampling:        textrl.SamplingParams{Temperature: temperature, TopP: c.Rollout.TopP, TopK: c.Rollout.TopK, StopIDs: r.pol.StopIDs},
		MaxPromptLength: c.Data.MaxPromptLength, MaxResponseLength: c.Data.MaxResponseLength,
		MaxConcurrent: c.Rollout.MaxNumSeqs, MaxBatch: c.Rollout.MaxNumSeqs,
		Timeout: time.Duration(c.Rollout.TimeoutS * float64(time.Second)), Seed: seed}
	if c.Rollout.MaskTruncated {
		o.MaskTerminations = []textrl.Termination{textrl.MaxResponseLengthExceeded, textrl.MaxTurnsExceeded, textrl.Timeout}
	}
	return textrl.NewEngine(o)
}

// nextTasks deals the next n training tasks.
func (t *Trainer) nextTasks(n int) []envs.Params {
	out := make([]envs.Params, n)
	for i := range out {
		out[i], _ = t.tasks.nextTask()
	}
	return out
}

// lmIteration samples, scores and trains one iteration, returning its
// metrics and the groups it sampled (for the transcripts).
func (t *Trainer) lmIteration(ctx context.Context, iter int, p *progress) (Metrics, [][]*textrl.Episode, error) {
	c, r := &t.cfg, t.lmr
	lr := c.PPO.LearningRate
	if c.PPO.AnnealLR {
		lr *= math.Max(1-float64(iter-1)/float64(c.Trainer.TotalTrainingSteps), 0)
	}
	m := Metrics{Iter: iter, Step: int64(iter), LR: Float(lr)}
	genStart := time.Now()
	r.gen.Tokens = 0
	var all, kept [][]*textrl.Episode
	batches := 0
	for {
		eng, err := t.engine(c.Rollout.Temperature, c.Trainer.Seed*1_000_003+int64(iter)*1009+int64(batches))
		if err != nil {
			return m, nil, err
		}
		groups, _, err := eng.Run(ctx, t.nextTasks(c.Data.TrainBatchSize), c.Rollout.N, r.factory)
		if err != nil {
			return m, nil, errCut
		}
		batches++
		all = append(all, groups...)
		for _, g := range groups {
			if !c.Algorithm.FilterGroups || !lmrl.ZeroStd(rewardsOf(g)) {
				kept = append(kept, g)
			}
		}
		if !c.Algorithm.FilterGroups || len(kept) >= c.Data.TrainBatchSize || batches > c.Algorithm.MaxNumGenBatches {
			break
		}
	}
	if len(kept) > c.Data.TrainBatchSize {
		kept = kept[:c.Data.TrainBatchSize]
	}
	genS := time.Since(genStart).Seconds()
	genTokens := r.gen.Tokens
	t.episodeMetrics(&m, all, kept, batches, p)

	// Sequences, the reference's log-probabilities, advantages.
	refStart := time.Now()
	seqs, owner := buildSeqs(kept)
	if r.ref != nil && len(seqs) > 0 {
		if err := t.referenceLogProbs(seqs); err != nil {
			return m, nil, err
		}
	}
	refS := time.Since(refStart).Seconds()
	valuesStart := time.Now()
	if r.value != nil && len(seqs) > 0 {
		if err := t.criticValues(seqs); err != nil {
			return m, nil, err
		}
		m.Set("timing_s/values", time.Since(valuesStart).Seconds())
	}
	klPenalty := 0.0
	if err := t.assignAdvantages(kept, seqs, owner, &klPenalty); err != nil {
		return m, nil, err
	}
	if c.Algorithm.UseKLInReward {
		m.Set("critic/kl_in_reward", klPenalty)
	}
	for i, s := range seqs { // for the transcripts: the advantage of the sample's first trained token
		if ep := kept[owner[i].group][owner[i].sample]; owner[i].row == 0 {
			for j, mk := range s.mask {
				if mk == 1 {
					ep.Metrics["advantage"] = s.adv[j]
					break
				}
			}
		}
	}

	updateStart := time.Now()
	var st lmrl.Stats
	var vst lmrl.ValueStats
	var gradNorm, vGradNorm float64
	steps := 0
	if len(seqs) > 0 {
		var err error
		if st, vst, gradNorm, vGradNorm, steps, err = t.lmUpdate(seqs, p, lr); err != nil {
			return m, nil, err
		}
	}
	updateS := time.Since(updateStart).Seconds()
	m.RolloutS, m.UpdateS = Float(genS), Float(updateS)
	m.Set("timing_s/gen", genS)
	m.Set("timing_s/ref", refS)
	m.Set("timing_s/update", updateS)
	m.Set("tokens_per_s/generation", float64(genTokens)/math.Max(genS, 1e-9))
	trained := 0
	for _, s := range seqs {
		trained += len(s.ids)
	}
	m.Set("tokens_per_s/training", float64(trained*t.cfg.Actor.PPOEpochs)/math.Max(updateS, 1e-9))
	nan := math.NaN()
	m.PolicyLoss, m.Entropy, m.ApproxKL, m.ClipFrac, m.GradNorm, m.ValueLoss = Float(nan), Float(nan), Float(nan), Float(nan), Float(nan), Float(nan)
	m.ExplainedVariance = Float(nan)
	if st.Tokens > 0 {
		k := 1 / st.Tokens
		m.PolicyLoss = Float(st.PGLoss / float64(steps))
		m.Entropy, m.ApproxKL, m.ClipFrac = Float(st.Entropy*k), Float(st.ApproxKL*k), Float(st.ClipFrac*k)
		m.GradNorm = Float(gradNorm)
		m.Set("clip_ratio/low_mean", st.ClipLow*k)
		m.Set("clip_ratio/high_mean", st.ClipHigh*k)
		m.Set("clip_ratio/region_mean", st.ClipFrac*k)
		m.Set("actor/pg_clipfrac_lower", st.DualClip*k)
		m.Set("loss", st.Loss/float64(steps))
		if r.ref != nil {
			m.Set("kl", st.KL*k)
		}
		if r.value != nil {
			criticFigures(&m, seqs, vst, steps, vGradNorm)
		}
		if err := checkFinite(m, r.value == nil); err != nil {
			return m, nil, err
		}
	}
	return m, all, nil
}

// rewardsOf is a group's episode rewards.
func rewardsOf(g []*textrl.Episode) []float64 {
	rs := make([]float64, len(g))
	for i, ep := range g {
		rs[i] = ep.Reward()
	}
	return rs
}

// episodeMetrics fills the reward, length and episode figures of the
// sampled groups (all of them; kept are those trained on).
func (t *Trainer) episodeMetrics(m *Metrics, all, kept [][]*textrl.Episode, batches int, p *progress) {
	var rewards, lengths []float64
	zeroStd, truncated, masked, turns, mismatches := 0, 0, 0, 0.0, 0.0
	correct := 0
	for _, g := range all {
		if lmrl.ZeroStd(rewardsOf(g)) {
			zeroStd++
		}
		for _, ep := range g {
			rw := ep.Reward()
			rewards = append(rewards, rw)
			lengths = append(lengths, ep.Metrics["response_tokens"])
			turns += ep.Metrics["turns"]
			mismatches += ep.Metrics["prefix_mismatches"]
			if ep.Termination == textrl.MaxResponseLengthExceeded {
				truncated++
			}
			if ep.Masked {
				masked++
			}
			if ep.Correct {
				correct++
			}
			p.episodes.add(rw, int(ep.Metrics["turns"]))
		}
	}
	n := float64(len(rewards))
	if n == 0 {
		return
	}
	mean, std := lmrl.MeanStd(rewards)
	m.Set("reward", mean)
	m.Set("reward_std", std)
	m.Set("rewards/"+metricSafe(t.cfg.Env.ID)+"/mean", mean)
	m.Set("frac_reward_zero_std", float64(zeroStd)/float64(len(all)))
	m.Set("success_rate", float64(correct)/n)
	lmean, _ := lmrl.MeanStd(lengths)
	m.Set("completions/mean_length", lmean)
	m.Set("completions/min_length", slices.Min(lengths))
	m.Set("completions/max_length", slices.Max(lengths))
	m.Set("completions/clipped_ratio", float64(truncated)/n)
	m.Set("episodes/masked_frac", float64(masked)/n)
	m.Set("episodes/prefix_mismatches", mismatches)
	m.Set("turns/mean", turns/n)
	m.Set("groups/kept", float64(len(kept)))
	m.Set("groups/gen_batches", float64(batches))
}

// metricSafe makes an environment id usable inside a metric name.
func metricSafe(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '.' || ch == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// seqOwner says which group, sample and row of it a sequence is.
type seqOwner struct{ group, sample, row int }

// buildSeqs lays out the training sequences of the kept groups: every row
// of an episode that is not masked and has a sampled token.
func buildSeqs(groups [][]*textrl.Episode) ([]*lmSeq, []seqOwner) {
	var seqs []*lmSeq
	var owner []seqOwner
	for g, group := range groups {
		for i, ep := range group {
			if ep.Masked {
				continue
			}
			for k, row := range ep.Rows {
				if !slices.Contains(row.Mask, 1) {
					continue
				}
				s := &lmSeq{start: len(row.PromptIDs), mask: row.Mask, oldLogp: row.LogProbs, adv: make([]float64, len(row.Mask))}
				s.ids = append(textrl.ToInt32(row.PromptIDs), textrl.ToInt32(row.ResponseIDs)...)
				seqs = append(seqs, s)
				owner = append(owner, seqOwner{g, i, k})
			}
		}
	}
	return seqs, owner
}

// assignAdvantages computes the groups' advantages (with the in-reward KL
// penalty when asked: each sample's reward less kl_coef times its summed
// per-token KL to the reference, as verl's token-level penalty sums) and
// spreads them over the sequences' tokens: broadcast, or per_step.
func (t *Trainer) assignAdvantages(groups [][]*textrl.Episode, seqs []*lmSeq, owner []seqOwner, klPenalty *float64) error {
	c := &t.cfg.Algorithm
	est := c.AdvEstimator
	if est == lmrl.GAE {
		return t.gaeAdvantages(groups, seqs, owner, klPenalty)
	}
	normStd := c.NormAdvByStd && est == lmrl.GRPO
	rewards := make([][]float64, len(groups))
	tokens := make([][]int, len(groups))
	for g, group := range groups {
		rewards[g] = rewardsOf(group)
		tokens[g] = make([]int, len(group))
	}
	for i, s := range seqs {
		o := owner[i]
		tokens[o.group][o.sample] += s.scored()
		if c.UseKLInReward && s.refLogp != nil {
			sum := 0.0
			for j, mk := range s.mask {
				if mk == 1 {
					kl, _, err := lmrl.KL(c.KLPenalty, float64(s.oldLogp[j]), float64(s.refLogp[j]))
					if err != nil {
						return err
					}
					sum += kl
				}
			}
			rewards[o.group][o.sample] -= c.KLCoef * sum
			*klPenalty += sum / float64(len(seqs))
		}
	}
	if c.StepwiseAdv == "per_step" {
		steps := make([][][]float64, len(groups))
		for g, group := range groups {
			steps[g] = make([][]float64, len(group))
			for i, ep := range group {
				if len(ep.Trajectories) > 0 {
					for _, st := range ep.Trajectories[0].Steps {
						steps[g][i] = append(steps[g][i], st.Reward)
					}
				}
				if len(steps[g][i]) == 0 {
					steps[g][i] = []float64{rewards[g][i]}
				}
			}
		}
		adv, err := lmrl.StepAdvantages(est, normStd, steps)
		if err != nil {
			return err
		}
		for i, s := range seqs {
			o := owner[i]
			ep := groups[o.group][o.sample]
			row := ep.Rows[o.row]
			a := adv[o.group][o.sample]
			seg, prev := -1, uint8(0)
			for j, mk := range s.mask {
				if mk == 1 && prev == 0 {
					seg++
				}
				prev = mk
				if mk == 1 {
					step := 0
					if seg < len(row.Steps) {
						step = row.Steps[seg]
					}
					if row.Trajectory != 0 || step >= len(a) {
						step = len(a) - 1 // other participants, or a step past the record: the episode's
					}
					s.adv[j] = a[min(step, len(a)-1)]
				}
			}
		}
		return nil
	}
	adv, err := lmrl.GroupAdvantages(est, normStd, rewards, tokens)
	if err != nil {
		return err
	}
	for i, s := range seqs {
		o := owner[i]
		for j, mk := range s.mask {
			if mk == 1 {
				s.adv[j] = adv[o.group][o.sample]
			}
		}
	}
	return nil
}

// microBatch lays sequences out as a right-padded batch whose targets
// score each sampled response token given the tokens before it.
func microBatch(seqs []*lmSeq) lm.Batch {
	seq := 0
	for _, s := range seqs {
		seq = max(seq, len(s.ids))
	}
	b := lm.Batch{Rows: len(seqs), Seq: seq, IDs: make([]int32, len(seqs)*seq), Mask: make([]int32, len(seqs)*seq), Targets: make([]int32, len(seqs)*seq)}
	for i := range b.Targets {
		b.Targets[i] = -1
	}
	for r, s := range seqs {
		off := r * seq
		copy(b.IDs[off:], s.ids)
		for j := range s.ids {
			b.Mask[off+j] = 1
		}
		for j, mk := range s.mask {
			if mk == 1 {
				pos := s.start + j - 1 // the logits at pos predict the token at pos+1
				if pos >= 0 {
					b.Targets[off+pos] = s.ids[pos+1]
				}
			}
		}
	}
	return b
}

// scoredIndex lists, in the order Forward returns them, each scored
// position's sequence and response index.
func scoredIndex(seqs []*lmSeq) [][2]int {
	var out [][2]int
	for r, s := range seqs {
		for j, mk := range s.mask {
			if mk == 1 && s.start+j-1 >= 0 {
				out = append(out, [2]int{r, j})
			}
		}
	}
	return out
}

// passFor returns a pass of m for batches of up to tokens tokens, reusing
// (or growing) *p.
func passFor(m *lm.Model, p **lm.Pass, have *int, tokens int) (*lm.Pass, error) {
	if *p == nil || tokens > *have {
		np, err := m.NewPass(tokens, tokens)
		if err != nil {
			return nil, err
		}
		*p, *have = np, tokens
	}
	return *p, nil
}

// microBatches splits seqs into groups of at most actor.ppo_micro_batch_size.
func (t *Trainer) microBatches(seqs []*lmSeq) [][]*lmSeq {
	k := t.cfg.Actor.MicroBatch
	var out [][]*lmSeq
	for i := 0; i < len(seqs); i += k {
		out = append(out, seqs[i:min(i+k, len(seqs))])
	}
	return out
}

func batchTokens(b lm.Batch) int { return b.Rows * b.Seq }

// referenceLogProbs scores every sequence's sampled tokens under the
// frozen reference policy.
func (t *Trainer) referenceLogProbs(seqs []*lmSeq) error {
	r := t.lmr
	return t.scoreSeqs(seqs, r.ref, &r.refPass, &r.refPassToks, lm.ForwardOptions{}, "the reference pass", func(s *lmSeq) func(j int, sc lm.Scores, k int) {
		s.refLogp = make([]float32, len(s.mask))
		return func(j int, sc lm.Scores, k int) { s.refLogp[j] = sc.LogProbs[k] }
	})
}

// scoreSeqs runs a forward pass of m (with the pass *pass, grown on demand)
// over seqs by micro-batches: keep is called once per sequence and the
// function it returns once per scored token (its response index, the
// micro-batch's scores and the token's place in them).
func (t *Trainer) scoreSeqs(seqs []*lmSeq, m *lm.Model, pass **lm.Pass, have *int, opt lm.ForwardOptions, what string,
	keep func(s *lmSeq) func(j int, sc lm.Scores, k int)) error {
	for _, mb := range t.microBatches(seqs) {
		b := microBatch(mb)
		p, err := passFor(m, pass, have, batchTokens(b))
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		sc, err := p.Forward(b, opt)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		put := make([]func(int, lm.Scores, int), len(mb))
		for i, s := range mb {
			put[i] = keep(s)
		}
		for k, at := range scoredIndex(mb) {
			put[at[0]](at[1], sc, k)
		}
	}
	return nil
}

// lmUpdate runs actor.ppo_epochs passes of mini-batch updates over seqs:
// for each mini-batch the gradient of the aggregated loss (trainer/lmrl's
// BatchLoss, its weights over the whole mini-batch; with a value head,
// plus critic.vf_coef times the value loss) is accumulated over
// micro-batches, clipped to ppo.max_grad_norm, and Adam steps; the value
// head's gradient is clipped and stepped apart, at critic.lr.
func (t *Trainer) lmUpdate(seqs []*lmSeq, p *progress, lr float64) (st lmrl.Stats, vst lmrl.ValueStats, gradNorm, vGradNorm float64, steps int, err error) {
	c, r := &t.cfg, t.lmr
	model := r.pol.Model
	loss := lmrl.Loss{ClipLow: c.Actor.ClipRatioLow, ClipHigh: c.Actor.ClipRatioHigh, ClipC: c.Actor.ClipRatioC,
		EntCoef: c.Actor.EntropyCoeff, AggMode: c.Actor.LossAggMode, NormLength: c.Data.MaxResponseLength, KLType: c.Actor.KLLossType}
	if c.Actor.UseKLLoss && r.ref != nil {
		loss.KLCoef = c.Actor.KLLossCoef
	}
	mbSize := c.Actor.MiniBatchSize
	if mbSize <= 0 || mbSize > len(seqs) {
		mbSize = len(seqs)
	}
	order := make([]*lmSeq, len(seqs))
	copy(order, seqs)
	hostStats := make([]float32, gpu.NumStats)
	for epoch := 0; epoch < c.Actor.PPOEpochs; epoch++ {
		t.shuffleRNG.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for start := 0; start < len(order); start += mbSize {
			if t.cutNow() {
				return st, vst, gradNorm, vGradNorm, steps, errCut
			}
			mini := order[start:min(start+mbSize, len(order))]
			n := make([]int, len(mini))
			for i, s := range mini {
				n[i] = s.scored()
			}
			w, err := loss.Weights(n)
			if err != nil {
				return st, vst, 0, 0, steps, err
			}
			var crit *criticLoss
			if r.value != nil {
				vl := lmrl.ValueLoss{ClipRange: c.Critic.CliprangeValue, AggMode: c.Critic.LossAggMode, NormLength: c.Data.MaxResponseLength}
				vw, err := lmrl.Loss{AggMode: vl.AggMode, NormLength: vl.NormLength}.Weights(n)
				if err != nil {
					return st, vst, 0, 0, steps, err
				}
				crit = &criticLoss{head: r.value, loss: vl, coef: c.Critic.VFCoef, w: vw, st: &vst}
				r.value.ZeroGrad()
			}
			model.ZeroGrad()
			wi := 0
			for _, mb := range t.microBatches(mini) {
				b := microBatch(mb)
				pass, err := passFor(model, &r.pass, &r.passTokens, batchTokens(b))
				if err != nil {
					return st, vst, 0, 0, steps, fmt.Errorf("the training pass: %w", err)
				}
				var mc *criticLoss
				if crit != nil {
					cc := *crit
					cc.w = crit.w[wi : wi+len(mb)]
					mc = &cc
				}
				_, g, err := microLoss(pass, b, mb, w[wi:wi+len(mb)], loss, &st, mc)
				if err != nil {
					return st, vst, 0, 0, steps, err
				}
				if err := pass.BackwardScores(g); err != nil {
					return st, vst, 0, 0, steps, err
				}
				wi += len(mb)
			}
			t.dev.Fill(r.stats, 0)
			t.dev.ClipGradNorm(model.Grads, float32(c.PPO.MaxGradNorm), r.stats)
			p.opt.step++
			t.dev.Adam(model.Params, model.Grads, p.opt.m, p.opt.v,
				gpu.AdamArgs{LR: float32(lr), Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: p.opt.step})
			t.dev.Download(hostStats, r.stats)
			gradNorm = float64(hostStats[gpu.StatGradNorm])
			if v := r.value; v != nil {
				vlr := c.Critic.LR
				if vlr == 0 {
					vlr = lr
				} else if c.PPO.AnnealLR {
					vlr *= lr / c.PPO.LearningRate
				}
				t.dev.Fill(r.stats, 0)
				t.dev.ClipGradNorm(v.Grads, float32(c.PPO.MaxGradNorm), r.stats)
				t.dev.Adam(v.Params, v.Grads, r.vopt.m, r.vopt.v,
					gpu.AdamArgs{LR: float32(vlr), Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: p.opt.step})
				t.dev.Download(hostStats, r.stats)
				vGradNorm = float64(hostStats[gpu.StatGradNorm])
			}
			steps++
		}
	}
	return st, vst, gradNorm, vGradNorm, steps, nil
}

// microLoss runs the forward pass of a micro-batch b of the sequences mb
// (whose aggregation weights are w) and returns its part of the policy
// loss, Σ w·ℓ over its scored tokens, with the gradients BackwardScores
// takes: in each scored log-probability, when the loss has an entropy
// bonus in each entropy (nil otherwise), and with a critic (nil: none) in
// each value. Its figures add to st and the critic's.
func microLoss(pass *lm.Pass, b lm.Batch, mb []*lmSeq, w []float64, loss lmrl.Loss, st *lmrl.Stats, crit *criticLoss) (total float64, g lm.ScoreGrads, err error) {
	opt := lm.ForwardOptions{Entropy: true}
	if crit != nil {
		opt.Values = crit.head
	}
	sc, err := pass.Forward(b, opt)
	if err != nil {
		return 0, g, fmt.Errorf("the training pass: %w", err)
	}
	idx := scoredIndex(mb)
	dl, de := make([]float32, len(idx)), make([]float32, len(idx))
	for k, at := range idx {
		s := mb[at[0]]
		tok := lmrl.Token{LogP: float64(sc.LogProbs[k]), OldLogP: float64(s.oldLogp[at[1]]), Entropy: float64(sc.Entropy[k]), Adv: s.adv[at[1]]}
		if s.refLogp != nil {
			tok.RefLogP = float64(s.refLogp[at[1]])
		}
		var ts lmrl.Stats
		lt, dlogp, dent, err := loss.TokenLoss(tok, &ts)
		if err != nil {
			return 0, g, err
		}
		weight := w[at[0]]
		pg := lt + loss.EntCoef*tok.Entropy
		if loss.KLCoef > 0 {
			pg -= loss.KLCoef * ts.KL
		}
		ts.PGLoss, ts.Loss = weight*pg, weight*lt
		st.Add(ts)
		total += weight * lt
		dl[k], de[k] = float32(weight*dlogp), float32(weight*dent)
	}
	if loss.EntCoef == 0 {
		de = nil
	}
	g = lm.ScoreGrads{LogP: dl, Entropy: de}
	if crit != nil {
		g.Values = crit.valueGrads(sc.Values, mb, idx)
	}
	return total, g, nil
}
