package trainer

import (
	"math"
)

// rolloutGroups plays one episode in every environment, the environments in
// groups of ppo.group_size sharing a task (same arguments, same reset
// seed), for at most num_steps steps. Each step of an episode gets the
// episode's advantage: its return compared with the others of its group
// (GRPO: standardised within the group; RLOO: minus the mean of the others).
// Only steps inside the episodes are samples.
func (t *Trainer) rolloutGroups(buf *rollout, p *progress) ([]int32, error) {
	c, v := &t.cfg, t.venv
	n, g := v.Len(), c.PPO.GroupSize
	for first := 0; first < n; first += g {
		e, seed, err := t.tasks.next()
		if err != nil {
			return nil, err
		}
		for k := 0; k < g; k++ {
			if k > 0 {
				if e, err = t.tasks.make(t.tasks.lastArgs); err != nil {
					return nil, err
				}
			}
			if err := v.Replace(first+k, e, seed); err != nil {
				return nil, err
			}
		}
	}
	t.observe(true)

	done, returns := buf.groupDone[:n], buf.groupReturns[:n]
	clear(done)
	clear(returns)
	active := n
	buf.samples = buf.samples[:0]
	for step := 0; step < c.PPO.NumSteps && active > 0; step++ {
		row := step * n
		if err := t.actAndStep(buf, row); err != nil {
			return nil, err
		}
		for e := 0; e < n; e++ {
			if done[e] {
				continue // the slot's episode is over; what it does now is not a sample
			}
			buf.samples = append(buf.samples, int32(row+e))
			returns[e] += float64(v.Rewards[e])
			p.step++
			if v.Done(e) {
				done[e] = true
				active--
				p.episodes.add(returns[e], step+1)
				t.reports.episode(v, e)
			}
		}
		t.observe(true)
	}
	for e := 0; e < n; e++ {
		if !done[e] { // cut off by num_steps: scored with what it earned
			p.episodes.add(returns[e], c.PPO.NumSteps)
		}
	}
	groupAdvantages(returns, g, c.PPO.AdvEstimator, buf.groupAdv[:n])
	for _, i := range buf.samples {
		buf.advantages[i] = buf.groupAdv[int(i)%n]
	}
	return buf.samples, nil
}

// groupAdvantages compares each return with the rest of its group.
func groupAdvantages(returns []float64, g int, estimator string, adv []float32) {
	for first := 0; first < len(returns); first += g {
		grp := returns[first : first+g]
		mean := 0.0
		for _, r := range grp {
			mean += r
		}
		mean /= float64(g)
		ss := 0.0
		for _, r := range grp {
			ss += (r - mean) * (r - mean)
		}
		std := math.Sqrt(ss / float64(g-1)) // torch.std, as verl uses
		for k, r := range grp {
			switch estimator {
			case "rloo":
				adv[first+k] = float32((r - mean) * float64(g) / float64(g-1))
			default: // grpo
				adv[first+k] = float32((r - mean) / (std + 1e-6))
			}
		}
	}
}
