package trainer

import (
	"fmt"
)

// rolloutAsync is the rollout of asynchronous stepping (env.args.batch_size
// = M below env.num_envs = N, for a pool of remote workers; EnvPool's
// batches). The sub-environments step in groups, one per worker; each act
// takes the first M/size groups whose step has come back, so a slow worker
// holds up only its own sub-environments while the policy acts for the
// others.
//
// What it does to PPO: nothing to the data's on-policy-ness — the policy is
// fixed for the whole rollout, every action comes from it and is scored
// against it (logp, value) — and nothing to the rollout's layout: every
// sub-environment still takes exactly num_steps steps, its t-th at row
// t·N+e, so GAE, the bootstrap of truncated episodes and the update read it
// as they read a lockstep rollout. What changes is the order in which the
// policy meets the observations (which sub-environments share a forward
// pass, in which order the action sampler's random stream is drawn, the
// order in which running observation statistics see them), so a run is no
// longer reproducible bit for bit. At the end of the rollout the groups
// that finished their num_steps wait for the slowest: the wait a lockstep
// rollout has at every step, asynchronous stepping has once per rollout.
func (t *Trainer) rolloutAsync(buf *rollout, p *progress) ([]int32, error) {
	c, v := &t.cfg, t.venv
	n, steps := v.Len(), c.PPO.NumSteps
	size, perAct := v.AsyncGroupSize(), v.AsyncBatch()/v.AsyncGroupSize()
	d, a := v.ObsDim, v.ActDim
	groups := n / size
	count := make([]int, groups) // steps sent per group
	pending := make([]int, 0, groups)
	for g := range groups { // every group is ready at the start of a rollout
		pending = append(pending, g)
	}
	batch := perAct * size
	obs, acts := make([]float32, batch*d), make([]float32, batch*a)
	logp, values, envActs := make([]float32, batch), make([]float32, batch), make([]float32, batch*a)
	ids := make([]int, 0, batch)
	eligible, underWay := groups, 0 // groups that will act again; groups stepping
	receive := func() error {
		got := v.RecvAsync()
		if err := v.Err(); err != nil {
			return err
		}
		if len(got) == 0 {
			return fmt.Errorf("asynchronous stepping: no group under way to wait for (%d counted)", underWay)
		}
		underWay--
		g := got[0] / size
		t.recordAsync(buf, p, g*size, size, count[g]-1)
		if count[g] < steps {
			pending = append(pending, g)
		}
		return nil
	}
	for eligible > 0 {
		want := min(perAct, eligible)
		for len(pending) < want {
			if err := receive(); err != nil {
				return nil, err
			}
		}
		if t.cutNow() { // the groups under way are ended by Close
			return nil, errCut
		}
		take := pending[:want]
		ids = ids[:0]
		for j, g := range take {
			copy(obs[j*size*d:(j+1)*size*d], v.Obs[g*size*d:(g+1)*size*d])
			for i := range size {
				ids = append(ids, g*size+i)
			}
		}
		m := want * size
		if t.obsNorm != nil {
			t.obsNorm.normalize(obs[:m*d], obs[:m*d], m)
		}
		t.agent.Act(obs[:m*d], m, t.actRNG, false, acts[:m*a], logp[:m], values[:m])
		for j, g := range take {
			row := count[g]*n + g*size // this group's rows are consecutive
			lo, hi := j*size, (j+1)*size
			copy(buf.obs[row*d:], obs[lo*d:hi*d])
			copy(buf.actions[row*a:], acts[lo*a:hi*a])
			copy(buf.logp[row:], logp[lo:hi])
			copy(buf.values[row:], values[lo:hi])
			if count[g]++; count[g] == steps {
				eligible--
			}
		}
		pending = append(pending[:0], pending[want:]...)
		v.SendAsync(ids, t.actSpace.Clip(acts[:m*a], envActs[:m*a]))
		if err := v.Err(); err != nil {
			return nil, err
		}
		underWay += want
		p.step += int64(m)
	}
	for underWay > 0 {
		if err := receive(); err != nil {
			return nil, err
		}
	}
	t.observe(false) // nothing is under way: the policy's view of every observation
	t.agent.Values(t.policyObs, n, buf.nextValue)
	computeGAE(buf, steps, n, c.PPO.Gamma, c.PPO.GAELambda)
	buf.samples = buf.samples[:0]
	for i := range buf.logp {
		buf.samples = append(buf.samples, int32(i))
	}
	return buf.samples, nil
}

// recordAsync books the step that sub-environments [lo, lo+k) (one group)
// took at rollout step s and that just came back: rewards (scaled), episode
// ends, the bootstrap of truncated episodes, finished episodes and the
// observation statistics. It is bootstrapTruncated and the reward part of
// rollout for one group, whose rows lie at s·N+lo … s·N+lo+k−1; the other
// groups' rows of the vector belong to their workers meanwhile.
func (t *Trainer) recordAsync(buf *rollout, p *progress, lo, k, s int) {
	v := t.venv
	d := v.ObsDim
	row := s*v.Len() + lo
	rewards := buf.rewards[row : row+k]
	copy(rewards, v.Rewards[lo:lo+k])
	if t.rewScale != nil {
		sub := *t.rewScale // the group's running returns, the shared statistics
		sub.returns, sub.scratch = t.rewScale.returns[lo:lo+k], t.rewScale.scratch[lo:lo+k]
		sub.scale(rewards, v.Terminated[lo:lo+k])
	}
	truncated := buf.truncatedIdx[:0]
	for i := range k {
		e := lo + i
		buf.dones[row+i] = 0
		if v.Done(e) {
			buf.dones[row+i] = 1
		}
		if v.Truncated[e] {
			j := len(truncated)
			copy(buf.finalObs[j*d:(j+1)*d], v.FinalObs[e*d:(e+1)*d])
			truncated = append(truncated, i)
		}
	}
	buf.truncatedIdx = truncated
	if len(truncated) > 0 {
		final := buf.finalObs[:len(truncated)*d]
		if t.obsNorm != nil {
			t.obsNorm.normalize(final, final, len(truncated))
		}
		t.agent.Values(final, len(truncated), buf.finalValues)
		for j, i := range truncated {
			rewards[i] += float32(t.cfg.PPO.Gamma) * buf.finalValues[j]
		}
	}
	for _, ep := range v.Finished {
		p.episodes.add(ep.Return, ep.Length)
		t.reports.episode(v, ep.Env)
	}
	if t.obsNorm != nil {
		t.obsNorm.stat.update(v.Obs[lo*d:(lo+k)*d], k)
	}
}
