package trainer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/dist"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// This file is the PPO algorithm, in the order of CleanRL's ppo.py: roll
// out, compute advantages with GAE, then several epochs of clipped-surrogate
// minibatch updates with Adam. Two departures, both deliberate:
//   - time-limit truncation is not termination: the reward of a truncated
//     step gets γ·V(final observation) added, so the value is bootstrapped;
//   - the target-KL early stop compares the mean approximate KL of an epoch
//     (CleanRL: the last minibatch's) with ppo.target_kl.

// rollout holds one iteration's experience on the host, step-major:
// row t·num_envs+e is env e at step t.
type rollout struct {
	obs, actions           []float32
	logp, values, rewards  []float32
	dones                  []float32 // 1 where the step ended an episode
	advantages, returns    []float32
	nextValue, finalValues []float32
	envActions, finalObs   []float32
	truncatedIdx           []int
	samples                []int32 // rows that hold real experience
	// Grouped estimators: per environment, whether its episode is over,
	// its return, and its advantage.
	groupDone    []bool
	groupReturns []float64
	groupAdv     []float32
}

func newRollout(steps, nEnvs, obsDim, actDim int) *rollout {
	n := steps * nEnvs
	return &rollout{
		obs: make([]float32, n*obsDim), actions: make([]float32, n*actDim),
		logp: make([]float32, n), values: make([]float32, n), rewards: make([]float32, n),
		dones: make([]float32, n), advantages: make([]float32, n), returns: make([]float32, n),
		nextValue: make([]float32, nEnvs), finalValues: make([]float32, nEnvs),
		envActions: make([]float32, nEnvs*actDim), finalObs: make([]float32, nEnvs*obsDim),
		groupDone: make([]bool, nEnvs), groupReturns: make([]float64, nEnvs), groupAdv: make([]float32, nEnvs),
	}
}

// batch holds the rollout on the device, and the minibatch being trained on.
// On a device that shares host memory (the CPU) the rollout is read where
// it lies: copying it (MinAtar: 13 MB an update) bought nothing.
type batch struct {
	obs, actions, logp, adv, returns, values       gpu.Tensor
	uploads                                        []upload // what fills them before an update; none when they are the rollout's own
	mbObs, mbActions, mbLogp, mbAdv, mbRet, mbVals gpu.Tensor
	stats                                          gpu.Tensor
	valueLoss                                      gpu.ValueArgs // kept here so passing it costs no allocation
	indices                                        []int32
	hostStats                                      []float32
}

// upload is a batch tensor and the rollout slice it is copied from.
type upload struct {
	dst gpu.Tensor
	src []float32
}

// newBatch makes buf's batch on dev, and room for a minibatch as large as
// the batch (ppo.num_minibatches may be lowered live).
func newBatch(dev gpu.Device, buf *rollout) *batch {
	n := len(buf.logp)
	obsDim, actDim := len(buf.obs)/n, len(buf.actions)/n
	b := &batch{stats: dev.Alloc(1, gpu.NumStats), indices: make([]int32, n), hostStats: make([]float32, gpu.NumStats)}
	onDevice := func(host []float32, cols int) gpu.Tensor {
		if h, ok := dev.(gpu.HostMemory); ok {
			return h.Wrap(host, n, cols)
		}
		t := dev.Alloc(n, cols)
		b.uploads = append(b.uploads, upload{t, host})
		return t
	}
	b.obs, b.actions, b.logp = onDevice(buf.obs, obsDim), onDevice(buf.actions, actDim), onDevice(buf.logp, 1)
	b.adv, b.returns, b.values = onDevice(buf.advantages, 1), onDevice(buf.returns, 1), onDevice(buf.values, 1)
	b.mbObs, b.mbActions, b.mbLogp = dev.Alloc(n, obsDim), dev.Alloc(n, actDim), dev.Alloc(n, 1)
	b.mbAdv, b.mbRet, b.mbVals = dev.Alloc(n, 1), dev.Alloc(n, 1), dev.Alloc(n, 1)
	return b
}

// adam is the optimizer state: PyTorch's Adam with eps 1e-5 (CleanRL).
type adam struct {
	m, v gpu.Tensor
	step int
}

// progress is where the loop stands: what checkpoints save.
type progress struct {
	iter     int   // iterations completed
	step     int64 // environment steps taken
	start    time.Time
	paused   time.Duration // time spent paused does not count against SPS
	episodes *episodeWindow
	opt      adam
	lastSave time.Time // when the last checkpoint was written (or the run began)
}

func (p *progress) elapsed(now time.Time) time.Duration { return now.Sub(p.start) - p.paused }

// begin sets up the loop's progress: fresh, or from the resume checkpoint.
func (t *Trainer) begin() (*progress, error) {
	p := &progress{start: t.opts.Now(), episodes: newEpisodeWindow(100)}
	p.lastSave = p.start
	if t.learner != nil {
		n := t.learner.Params().Len()
		p.opt = adam{m: t.dev.Alloc(1, n), v: t.dev.Alloc(1, n)}
	}
	rp := t.resume
	if rp == nil {
		if t.venv != nil {
			t.venv.Reset(t.cfg.Trainer.Seed)
			if err := t.venv.Err(); err != nil {
				return nil, err
			}
			t.observe(true)
		}
		return p, nil
	}
	st := rp.state
	if err := p.episodes.restore(st.Episodes); err != nil {
		return nil, err
	}
	p.iter, p.step, p.opt.step = st.Iter, st.Step, st.AdamStep
	p.start = p.start.Add(-time.Duration(st.ElapsedS * float64(time.Second)))
	if t.learner != nil {
		t.dev.Upload(p.opt.m, t.resumeAdam[0])
		t.dev.Upload(p.opt.v, t.resumeAdam[1])
	}
	if len(st.Envs) == 0 && t.venv != nil {
		t.venv.Reset(t.cfg.Trainer.Seed + st.Step)
	}
	t.observe(false) // the statistics came with the checkpoint
	for _, n := range t.notes {
		t.logf("warning: %s", n)
	}
	t.logf("resumed from %s at step %d", filepath.Base(rp.path), st.Step)
	return p, nil
}

func (t *Trainer) train(ctx context.Context, f *runFiles) (Summary, error) {
	if t.lmr != nil {
		return t.trainLM(ctx, f)
	}
	c := &t.cfg
	nEnvs, nSteps := c.Env.NumEnvs, c.PPO.NumSteps
	obsDim, actDim := t.obsSpace.Size(), t.actSpace.Size()
	buf := newRollout(nSteps, nEnvs, obsDim, actDim)
	b := newBatch(t.dev, buf)
	p, err := t.begin()
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Iterations: p.iter, Last: Metrics{Step: p.step}}
	t.stepsDone.Store(p.step)
	if !t.moreToDo(p.iter+1, p.step) {
		t.logf("nothing to do: the run has reached step %d of ppo.total_timesteps %d; raise it to train on (e.g. --resume DIR ppo.total_timesteps=%d)",
			p.step, c.PPO.TotalTimesteps, 2*c.PPO.TotalTimesteps)
		return sum, nil
	}
	t.logf("training %s with %s on %s for %d steps", c.Env.ID, c.Agent.Name, t.devInfo, c.PPO.TotalTimesteps)

	rowWritten := true // whether the newest iteration (sum.Last) has its metrics row
	for iter := p.iter + 1; t.moreToDo(iter, p.step); iter++ {
		t.iterStart = time.Now()
		stepBefore := p.step
		if err := t.applyEdits(f, iter, p); err != nil {
			return sum, err
		}
		if err := t.waitWhilePaused(ctx, f, &sum, p); err != nil || ctx.Err() != nil {
			break
		}

		// Annealing the rate if instructed to do so.
		lr := c.PPO.LearningRate
		if c.PPO.AnnealLR {
			lr = math.Max(t.remaining(iter, p.step), 0) * lr
		}

		// Roll out: num_steps steps in every environment with GAE, or one
		// episode per environment in groups that share a task (GRPO, RLOO).
		var samples []int32
		var err error
		rolloutStart := time.Now()
		switch {
		case t.workflow != nil:
			samples, err = t.rolloutWorkflow(ctx, buf, p)
		case c.Grouped():
			samples, err = t.rolloutGroups(buf, p)
		case t.venv.AsyncBatch() > 0: // env.args.batch_size (asyncrollout.go)
			samples, err = t.rolloutAsync(buf, p)
		default:
			samples, err = t.rollout(buf, p)
		}
		if errors.Is(err, errCut) {
			t.logf("iteration %d: stopped during the rollout; it is not recorded", iter)
			break
		}
		if err != nil {
			return sum, fmt.Errorf("step %d: %w; the last checkpoint is the last good state", p.step, err)
		}

		// Optimize the policy and value networks.
		updateStart := time.Now()
		m := Metrics{Iter: iter, Step: p.step, LR: Float(lr), RolloutS: Float(updateStart.Sub(rolloutStart).Seconds())}
		if t.learner != nil {
			done, skipped := t.update(b, samples, &p.opt, lr, &m)
			if done == 0 && !skipped {
				t.logf("iteration %d: stopped before its update; it is not recorded", iter)
				break
			}
			m.UpdateS = Float(time.Since(updateStart).Seconds())
			if err := checkFinite(m, c.Grouped()); !skipped && err != nil {
				return sum, fmt.Errorf("iteration %d: %w; the last checkpoint is the last good state", iter, err)
			}
		}
		m.ExplainedVariance = Float(math.NaN())
		if !c.Grouped() {
			m.ExplainedVariance = Float(explainedVariance(buf.values, buf.returns))
		}
		p.iter = iter
		validated := false
		if f := c.Trainer.TestFreq; len(t.valRows) > 0 && f > 0 && (iter%f == 0 || !t.moreToDo(iter+1, p.step)) {
			t.validate(iter, &m)
			validated = true
		}

		elapsed := p.elapsed(t.opts.Now())
		m.TimeS = Float(elapsed.Seconds())
		m.SPS = Float(float64(p.step) / math.Max(elapsed.Seconds(), 1e-9))
		mean, lo, hi, length := p.episodes.stats()
		m.Episodes, m.EpReturnMean, m.EpReturnMin, m.EpReturnMax, m.EpLengthMean =
			p.episodes.total, Float(mean), Float(lo), Float(hi), Float(length)
		t.reports.ask("agent", t.agent)
		t.reports.ask("workflow", t.workflow)
		t.reports.record(&m)
		rowWritten = validated || t.logDue(stepBefore, p.step, iter) // a validation's figures are never dropped
		if rowWritten {
			if err := t.logMetrics(f, &m); err != nil {
				return sum, err
			}
		}
		sum.Last, sum.Iterations = m, iter
		t.stepsDone.Store(p.step)

		if err := t.checkpointIfDue(f, &sum, p, iter); err != nil {
			return sum, err
		}
	}
	// Live edits that arrived after the last iteration began were accepted:
	// they are recorded (edits.jsonl, config.toml) and the final
	// checkpoint carries them.
	if err := t.applyEdits(f, p.iter+1, p); err != nil {
		return sum, err
	}
	// The last iteration has its row, whether the run completed or was
	// stopped, and a final checkpoint.
	if !rowWritten {
		if err := t.logMetrics(f, &sum.Last); err != nil {
			return sum, err
		}
	}
	if p.iter > 0 {
		if err := t.checkpoint(f, &sum, p, false); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// logDue reports whether the iteration that took the run from step before
// to step after gets a metrics row: when it crossed a multiple of
// trainer.log_every_steps, or is the last. The rule depends on the steps
// alone, so a resumed run logs the rows an uninterrupted one would.
func (t *Trainer) logDue(before, after int64, iter int) bool {
	every := t.cfg.Trainer.LogEvery
	return every <= 0 || before/every != after/every || !t.moreToDo(iter+1, after)
}

// logMetrics writes an iteration's row and shows it to viewers.
func (t *Trainer) logMetrics(f *runFiles, m *Metrics) error {
	if err := f.writeMetrics(m, t.opts.Now()); err != nil {
		return err
	}
	t.broker.publish(Event{Kind: EventMetrics, Time: t.opts.Now(), Metrics: *m})
	return nil
}

// rollout takes num_steps steps in every environment, then computes GAE
// advantages; every sample is used.
func (t *Trainer) rollout(buf *rollout, p *progress) ([]int32, error) {
	c, v := &t.cfg, t.venv
	nEnvs, nSteps := v.Len(), c.PPO.NumSteps
	for step := 0; step < nSteps; step++ {
		if t.cutNow() { // a long rollout is cut short by a stop
			return nil, errCut
		}
		p.step += int64(nEnvs)
		row := step * nEnvs
		if err := t.actAndStep(buf, row); err != nil {
			return nil, err
		}
		copy(buf.rewards[row:], v.Rewards)
		if t.rewScale != nil {
			t.rewScale.scale(buf.rewards[row:row+nEnvs], v.Terminated)
		}
		for e := 0; e < nEnvs; e++ {
			buf.dones[row+e] = 0
			if v.Done(e) {
				buf.dones[row+e] = 1
			}
		}
		t.bootstrapTruncated(buf, row)
		for _, ep := range v.Finished {
			p.episodes.add(ep.Return, ep.Length)
			t.reports.episode(v, ep.Env)
			if t.tasks.rows != nil { // a finished slot takes the next task
				e, seed, err := t.tasks.next()
				if err == nil {
					err = v.Replace(ep.Env, e, seed)
				}
				if err != nil {
					return nil, err
				}
			}
		}
		t.observe(true)
	}

	// Bootstrap the value of the last observation and compute advantages.
	t.agent.Values(t.policyObs, nEnvs, buf.nextValue)
	computeGAE(buf, nSteps, nEnvs, c.PPO.Gamma, c.PPO.GAELambda)
	buf.samples = buf.samples[:0]
	for i := range buf.logp {
		buf.samples = append(buf.samples, int32(i))
	}
	return buf.samples, nil
}

// actAndStep records the observations at rollout row, lets the agent act in
// every environment and steps them all.
func (t *Trainer) actAndStep(buf *rollout, row int) error {
	v := t.venv
	n := v.Len()
	copy(buf.obs[row*v.ObsDim:], t.policyObs)
	acts := buf.actions[row*v.ActDim : (row+n)*v.ActDim]
	t.agent.Act(t.policyObs, n, t.actRNG, false, acts, buf.logp[row:row+n], buf.values[row:row+n])
	v.Step(t.actSpace.Clip(acts, buf.envActions))
	if err := v.Err(); err != nil { // a remote environment's failure
		return err
	}
	return checkEnvOutput(v)
}

// numIterations is CleanRL's total_timesteps // batch_size (at least one);
// total_timesteps may change live.
func (t *Trainer) numIterations() int {
	return max(1, int(t.cfg.PPO.TotalTimesteps/int64(t.cfg.BatchSize())))
}

// moreToDo reports whether iteration iter should run: CleanRL's iteration
// count with GAE; with grouped estimators, whose episodes vary in length,
// until the environment steps reach total_timesteps.
func (t *Trainer) moreToDo(iter int, step int64) bool {
	if t.cfg.Grouped() {
		return step < t.cfg.PPO.TotalTimesteps
	}
	return iter <= t.numIterations()
}

// remaining is the fraction of training left when iteration iter starts,
// which scales the annealed learning rate.
func (t *Trainer) remaining(iter int, step int64) float64 {
	if t.cfg.Grouped() {
		return 1 - float64(step)/float64(t.cfg.PPO.TotalTimesteps)
	}
	return 1 - float64(iter-1)/float64(t.numIterations())
}

// bootstrapTruncated adds γ·V(final observation) to the reward of every
// environment whose episode was cut off by a time limit on this step.
func (t *Trainer) bootstrapTruncated(buf *rollout, row int) {
	v := t.venv
	buf.truncatedIdx = buf.truncatedIdx[:0]
	for e := 0; e < v.Len(); e++ {
		if v.Truncated[e] {
			n := len(buf.truncatedIdx)
			copy(buf.finalObs[n*v.ObsDim:(n+1)*v.ObsDim], v.FinalObs[e*v.ObsDim:(e+1)*v.ObsDim])
			buf.truncatedIdx = append(buf.truncatedIdx, e)
		}
	}
	if len(buf.truncatedIdx) == 0 {
		return
	}
	if t.obsNorm != nil {
		final := buf.finalObs[:len(buf.truncatedIdx)*v.ObsDim]
		t.obsNorm.normalize(final, final, len(buf.truncatedIdx))
	}
	t.agent.Values(buf.finalObs, len(buf.truncatedIdx), buf.finalValues)
	for i, e := range buf.truncatedIdx {
		buf.rewards[row+e] += float32(t.cfg.PPO.Gamma) * buf.finalValues[i]
	}
}

// computeGAE fills advantages and returns with generalised advantage
// estimation. dones[t] = 1 means step t ended its episode, so nothing flows
// back across it (truncated steps already carry their bootstrap reward).
func computeGAE(buf *rollout, nSteps, nEnvs int, gamma, lambda float64) {
	for e := 0; e < nEnvs; e++ {
		lastGAE := 0.0
		for s := nSteps - 1; s >= 0; s-- {
			i := s*nEnvs + e
			nextValue := float64(buf.nextValue[e])
			if s < nSteps-1 {
				nextValue = float64(buf.values[i+nEnvs])
			}
			nextNonTerminal := 1 - float64(buf.dones[i])
			delta := float64(buf.rewards[i]) + gamma*nextValue*nextNonTerminal - float64(buf.values[i])
			lastGAE = delta + gamma*lambda*nextNonTerminal*lastGAE
			buf.advantages[i] = float32(lastGAE)
			buf.returns[i] = float32(lastGAE + float64(buf.values[i]))
		}
	}
}

// update runs update_epochs passes of minibatch PPO over the rollout in b and
// fills the loss fields of m. A stop cuts it short between two minibatches
// (the figures then cover those done); it returns how many ran. With fewer
// samples than ppo.num_minibatches (grouped estimators keep only the steps
// inside episodes, which short episodes make few) there is no minibatch to
// train on: the update is skipped, nothing changes, and m's loss fields are
// undefined (null in metrics.jsonl).
func (t *Trainer) update(b *batch, samples []int32, opt *adam, lr float64, m *Metrics) (minibatches int, skipped bool) {
	c := &t.cfg.PPO
	dev, agent := t.dev, t.learner
	n := len(samples)
	mbSize := n / c.NumMinibatches
	if mbSize == 0 {
		if !t.warnedSkip {
			t.warnedSkip = true
			t.logf("iteration %d: its %d samples cannot make ppo.num_minibatches = %d minibatches, so its update is skipped; so is every such update from now on (their losses are null in metrics.jsonl). Fewer ppo.num_minibatches, or more env.num_envs, train on every iteration",
				m.Iter, n, c.NumMinibatches)
		}
		nan := Float(math.NaN())
		m.PolicyLoss, m.ValueLoss, m.Entropy, m.ApproxKL, m.ClipFrac, m.GradNorm = nan, nan, nan, nan, nan, nan
		return 0, true
	}
	for _, u := range b.uploads {
		dev.Upload(u.dst, u.src)
	}
	dev.Fill(b.stats, 0)
	o := newObjective(c)
	indices := b.indices[:n]
	copy(indices, samples)

	klSoFar := 0.0
epochs:
	for epoch := 0; epoch < c.UpdateEpochs; epoch++ {
		t.shuffleRNG.Shuffle(n, func(i, j int) { indices[i], indices[j] = indices[j], indices[i] })
		for start := 0; start+mbSize <= n; start += mbSize {
			if t.cutNow() {
				t.logf("iteration %d: the stop cut the update after %d of %d minibatches", m.Iter, minibatches, c.UpdateEpochs*c.NumMinibatches)
				break epochs
			}
			idx := indices[start : start+mbSize]
			obs, acts, logp := b.mbObs.RowRange(0, mbSize), b.mbActions.RowRange(0, mbSize), b.mbLogp.RowRange(0, mbSize)
			adv, ret, vals := b.mbAdv.RowRange(0, mbSize), b.mbRet.RowRange(0, mbSize), b.mbVals.RowRange(0, mbSize)
			dev.GatherRows(obs, b.obs, idx)
			dev.GatherRows(acts, b.actions, idx)
			dev.GatherRows(logp, b.logp, idx)
			dev.GatherRows(adv, b.adv, idx)
			dev.GatherRows(ret, b.returns, idx)
			dev.GatherRows(vals, b.values, idx)

			// The loss, L = L_clip − ent_coef·H + vf_coef·L_V: the objective
			// below writes each term in Go; the agent's distribution and
			// the device run them fused, forward and backward.
			policyLoss := o.policyArgs(acts, logp, adv, b.stats)
			var valueLoss *gpu.ValueArgs
			if !t.cfg.Grouped() { // grouped estimators train no critic
				b.valueLoss = o.valueArgs(vals, ret, b.stats)
				valueLoss = &b.valueLoss
			}
			agent.Gradients(obs, policyLoss, valueLoss)
			dev.ClipGradNorm(agent.Grads(), float32(c.MaxGradNorm), b.stats)
			opt.step++
			dev.Adam(agent.Params(), agent.Grads(), opt.m, opt.v,
				gpu.AdamArgs{LR: float32(lr), Beta1: 0.9, Beta2: 0.999, Eps: 1e-5, Step: opt.step})
			minibatches++
		}
		if c.TargetKL > 0 {
			dev.Download(b.hostStats, b.stats)
			kl := float64(b.hostStats[gpu.StatApproxKL])
			epochKL := (kl - klSoFar) / float64(c.NumMinibatches)
			klSoFar = kl
			if epochKL > c.TargetKL {
				t.logf("iteration %d: epoch %d approx_kl %.4f > target_kl %.4f, stopping the update early", m.Iter, epoch+1, epochKL, c.TargetKL)
				break
			}
		}
	}
	if minibatches == 0 {
		return 0, false
	}
	dev.Download(b.hostStats, b.stats)
	s, k := b.hostStats, float64(minibatches)
	m.PolicyLoss, m.ValueLoss = Float(float64(s[gpu.StatPolicyLoss])/k), Float(float64(s[gpu.StatValueLoss])/k)
	m.Entropy, m.ApproxKL = Float(float64(s[gpu.StatEntropy])/k), Float(float64(s[gpu.StatApproxKL])/k)
	m.ClipFrac, m.GradNorm = Float(float64(s[gpu.StatClipFrac])/k), Float(float64(s[gpu.StatGradNorm])/k)
	if t.cfg.Grouped() {
		m.ValueLoss = Float(math.NaN())
	}
	return minibatches, false
}

// The PPO objective (CleanRL's ppo.py), minimised, in plain Go: what the
// update asks the device for, and the reference its kernels are held to
// (objective_test.go: the CPU device, and CUDA's on the stand-in). Per
// minibatch of B samples,
//
//	A      = (A − mean A) / (std A + 1e-8)                     if ppo.norm_adv
//	ratio  = exp(log π(a|s) − log π_old(a|s))
//	L_clip = mean(max(−A·ratio, −A·clip(ratio, 1−ε, 1+ε)))     ε = ppo.clip_coef
//	H      = mean(entropy of π(·|s))
//	L_V    = ½·mean(max((V−R)², (V_old + clip(V−V_old, −ε, ε) − R)²))
//	         (½·mean((V−R)²) without ppo.clip_vloss)
//	L      = L_clip − ent_coef·H + vf_coef·L_V
//
// and for the record approx_kl = mean((ratio−1) − log ratio) and clipfrac =
// mean(|ratio−1| > ε). The means run over the policy's rows (all of them
// but a language model's prompt tokens, gpu.PPOPolicyArgs.Mask).
type objective struct {
	clip, entCoef, vfCoef float64
	normAdv, clipVLoss    bool
}

func newObjective(c *config.PPOConfig) objective {
	return objective{clip: c.ClipCoef, entCoef: c.EntCoef, vfCoef: c.VFCoef, normAdv: c.NormAdv, clipVLoss: c.ClipVLoss}
}

// policyArgs asks the device for L_clip − ent_coef·H of a minibatch (its
// actions, rollout log-probabilities and advantages): the agent fills in
// its outputs and its distribution runs it.
func (o objective) policyArgs(acts, oldLogp, adv, stats gpu.Tensor) gpu.PPOPolicyArgs {
	return gpu.PPOPolicyArgs{Actions: acts, OldLogp: oldLogp, Adv: adv,
		ClipCoef: float32(o.clip), EntCoef: float32(o.entCoef), NormAdv: o.normAdv, Stats: stats}
}

// valueArgs asks the device for vf_coef·L_V of a minibatch (its rollout
// values and returns): the agent fills in its value estimates.
func (o objective) valueArgs(oldValues, returns, stats gpu.Tensor) gpu.ValueArgs {
	return gpu.ValueArgs{OldValue: oldValues, Returns: returns,
		ClipCoef: float32(o.clip), Clip: o.clipVLoss, VFCoef: float32(o.vfCoef), Stats: stats}
}

// policyTerms are a minibatch's policy figures, as the device adds them to
// its statistics (gpu.StatPolicyLoss, StatEntropy, StatApproxKL,
// StatClipFrac).
type policyTerms struct{ clipLoss, entropy, approxKL, clipFrac float64 }

// loss is what the update minimises of them.
func (o objective) loss(p policyTerms) float64 { return p.clipLoss - o.entCoef*p.entropy }

// policy computes the terms for a minibatch: the distribution d's
// parameters out (rows of d.Width()) and shared, the rollout's actions,
// log-probabilities and advantages, and mask (nil: every row is the
// policy's).
func (o objective) policy(d dist.Distribution, out, shared []float64, actions, oldLogp, adv, mask []float32) policyTerms {
	B := len(oldLogp)
	logp, ent := make([]float64, B), make([]float64, B)
	d.LogProb(out, shared, actions, logp)
	d.Entropy(out, shared, ent)
	mine := func(i int) bool { return mask == nil || mask[i] != 0 }
	mean, inv, n := 0.0, 1.0, 0
	for i := range adv {
		if mine(i) {
			mean += float64(adv[i])
			n++
		}
	}
	if n == 0 {
		return policyTerms{}
	}
	if mean /= float64(n); o.normAdv {
		var ss float64
		for i := range adv {
			if mine(i) {
				ss += (float64(adv[i]) - mean) * (float64(adv[i]) - mean)
			}
		}
		std := 0.0
		if n > 1 {
			std = math.Sqrt(ss / float64(n-1)) // torch.std
		}
		inv = 1 / (std + 1e-8)
	} else {
		mean = 0
	}
	var p policyTerms
	for i := 0; i < B; i++ {
		if !mine(i) {
			continue
		}
		a := (float64(adv[i]) - mean) * inv
		logRatio := logp[i] - float64(oldLogp[i])
		ratio := math.Exp(logRatio)
		p.clipLoss += math.Max(-a*ratio, -a*math.Min(math.Max(ratio, 1-o.clip), 1+o.clip))
		p.entropy += ent[i]
		p.approxKL += (ratio - 1) - logRatio
		if math.Abs(ratio-1) > o.clip {
			p.clipFrac++
		}
	}
	k := 1 / float64(n)
	return policyTerms{p.clipLoss * k, p.entropy * k, p.approxKL * k, p.clipFrac * k}
}

// value is L_V of a minibatch's value estimates v, against the rollout's
// values old and returns ret (the device's gpu.StatValueLoss; the update
// minimises vf_coef times it).
func (o objective) value(v []float64, old, ret []float32) float64 {
	var sum float64
	for i := range v {
		loss := (v[i] - float64(ret[i])) * (v[i] - float64(ret[i]))
		if o.clipVLoss {
			vc := float64(old[i]) + math.Min(math.Max(v[i]-float64(old[i]), -o.clip), o.clip)
			loss = math.Max(loss, (vc-float64(ret[i]))*(vc-float64(ret[i])))
		}
		sum += loss
	}
	return 0.5 * sum / float64(len(v))
}

// errCut says that a stop arrived in the middle of a rollout.
var errCut = errors.New("stopped during the rollout")

// checkEnvOutput refuses non-finite observations and rewards: training on
// them would only turn the network into NaNs a few steps later.
func checkEnvOutput(v *envs.Vector) error {
	for i, x := range v.Obs {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("environment %d returned a non-finite observation (%v in element %d)", i/v.ObsDim, x, i%v.ObsDim)
		}
	}
	for i, r := range v.Rewards {
		if math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) {
			return fmt.Errorf("environment %d returned a non-finite reward (%v)", i, r)
		}
	}
	return nil
}

// checkFinite refuses an update whose losses or gradients went non-finite
// (without a critic the value loss is undefined by design).
func checkFinite(m Metrics, noCritic bool) error {
	for _, f := range []struct {
		name string
		v    Float
	}{{"policy loss", m.PolicyLoss}, {"value loss", m.ValueLoss}, {"entropy", m.Entropy}, {"gradient norm", m.GradNorm}} {
		if noCritic && f.name == "value loss" {
			continue
		}
		if math.IsNaN(float64(f.v)) || math.IsInf(float64(f.v), 0) {
			return fmt.Errorf("the %s became %v (try a lower ppo.learning_rate or ppo.max_grad_norm)", f.name, float64(f.v))
		}
	}
	return nil
}

// cutAfter is how long an iteration runs before a stop may cut it: a stop
// normally ends the run at the next iteration boundary, so the final
// checkpoint continues exactly as an uninterrupted run would; only an
// iteration that takes longer (a huge rollout or update) is cut, and then
// its checkpoint is consistent but no longer exact.
const cutAfter = 2 * time.Second

// cutNow reports whether a stop should cut the current iteration short.
func (t *Trainer) cutNow() bool {
	return t.stopping.Load() && time.Since(t.iterStart) >= cutAfter
}
