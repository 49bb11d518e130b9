package trainer

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/envs"
)

// Workflow runs one episode of custom logic for a task — several players
// taking turns, a judge step, a multi-turn exchange — acting through the
// policy being trained, and hands back what each participant did as
// trajectories with per-step rewards. PPO then trains on them: with GAE,
// or with GRPO/RLOO comparing the returns of group_size runs of a task.
type Workflow interface {
	// Spaces are the observations the policy sees and the actions it takes.
	Spaces() (obs, act envs.Space)
	// Run plays one episode of task. seed makes its own randomness
	// reproducible.
	Run(ctx context.Context, task envs.Params, seed int64, actor Actor) ([]Trajectory, error)
}

// Scorer is implemented by workflows that can score the policy on a
// validation task (against a fixed opponent, say). Without it, validation
// reports the mean return of the workflow's trajectories.
type Scorer interface {
	Score(ctx context.Context, task envs.Params, seed int64, actor Actor) (ret float64, success bool, err error)
}

// Actor is the policy as a workflow sees it.
type Actor interface {
	// Act chooses an action for obs. The returned step records the decision
	// (with its log-probability and value); set its Reward and append it to
	// a trajectory.
	Act(obs []float32) Step
}

// Step is one decision in a trajectory.
type Step struct {
	Obs, Action []float32
	LogProb     float32
	Value       float32
	Reward      float64
}

// Trajectory is one participant's decisions in order. Its episode is over:
// nothing is bootstrapped after the last step.
type Trajectory []Step

// Return is the sum of the trajectory's rewards.
func (tr Trajectory) Return() float64 {
	s := 0.0
	for _, st := range tr {
		s += st.Reward
	}
	return s
}

// workflowActor samples from the agent for a workflow.
type workflowActor struct {
	t                   *Trainer
	rng                 *rand.Rand
	greedy              bool
	action, logp, value []float32
	normalized          []float32 // the observation as the policy sees it
}

func newWorkflowActor(t *Trainer, rng *rand.Rand, greedy bool) *workflowActor {
	return &workflowActor{t: t, rng: rng, greedy: greedy, action: make([]float32, t.actSpace.Size()),
		logp: make([]float32, 1), value: make([]float32, 1)}
}

// Actor returns the policy for use outside training, such as after Train:
// deterministic takes the most likely action; observations are normalised
// with the training statistics when env.normalize_obs is on. Not safe for
// use while the trainer runs.
func (t *Trainer) Actor(deterministic bool) Actor {
	return newWorkflowActor(t, rand.New(rand.NewPCG(uint64(t.cfg.Trainer.Seed), 99)), deterministic)
}

func (a *workflowActor) Act(obs []float32) Step {
	if len(obs) != a.t.obsSpace.Size() {
		panic(fmt.Sprintf("workflow observation has %d values, its Spaces() say %d", len(obs), a.t.obsSpace.Size()))
	}
	seen := obs
	if a.t.obsNorm != nil {
		a.normalized = append(a.normalized[:0], obs...)
		a.t.obsNorm.normalize(a.normalized, obs, 1)
		seen = a.normalized
	}
	a.t.agent.Act(seen, 1, a.rng, a.greedy, a.action, a.logp, a.value)
	return Step{Obs: append([]float32(nil), obs...), Action: append([]float32(nil), a.action...), LogProb: a.logp[0], Value: a.value[0]}
}

// rolloutWorkflow runs the workflow on tasks until the batch is full and
// turns the trajectories into samples: GAE per trajectory, or, with a
// grouped estimator, each trajectory's return compared with the others of
// the same participant across group_size runs of the task.
func (t *Trainer) rolloutWorkflow(ctx context.Context, buf *rollout, p *progress) (samples []int32, err error) {
	c := &t.cfg
	capacity := len(buf.logp)
	obsDim, actDim := t.obsSpace.Size(), t.actSpace.Size()
	actor := newWorkflowActor(t, t.actRNG, false)
	group := 1
	if c.Grouped() {
		group = c.PPO.GroupSize
	}
	buf.samples = buf.samples[:0]
	row := 0
	for row < capacity {
		task, seed := t.tasks.nextTask()
		runs := make([][]Trajectory, group)
		for g := range runs {
			if runs[g], err = t.workflow.Run(ctx, task, seed, actor); err != nil {
				return nil, fmt.Errorf("workflow: %w", err)
			}
			if len(runs[g]) == 0 {
				return nil, fmt.Errorf("workflow returned no trajectories")
			}
		}
		adv := groupedWorkflowAdvantages(runs, c.PPO.AdvEstimator, c.Grouped())
		for g, trajs := range runs {
			for k, tr := range trajs {
				if len(tr) == 0 {
					continue
				}
				start := row
				for _, st := range tr {
					if row == capacity {
						break // the batch is full: the rest of this trajectory is dropped
					}
					if len(st.Obs) != obsDim || len(st.Action) != actDim || math.IsNaN(st.Reward) || math.IsInf(st.Reward, 0) {
						return nil, fmt.Errorf("workflow step has %d observation values, %d action values and reward %v; want %d, %d and a finite reward (use the Step Actor.Act returned)",
							len(st.Obs), len(st.Action), st.Reward, obsDim, actDim)
					}
					copy(buf.obs[row*obsDim:], st.Obs)
					copy(buf.actions[row*actDim:], st.Action)
					buf.logp[row], buf.values[row], buf.rewards[row] = st.LogProb, st.Value, float32(st.Reward)
					buf.dones[row] = 0
					buf.samples = append(buf.samples, int32(row))
					row++
				}
				buf.dones[row-1] = 1
				p.step += int64(row - start)
				p.episodes.add(tr.Return(), len(tr))
				if c.Grouped() {
					for i := start; i < row; i++ {
						buf.advantages[i] = adv[g][k]
					}
				} else {
					workflowGAE(buf, start, row, c.PPO.Gamma, c.PPO.GAELambda)
				}
			}
		}
	}
	return buf.samples, nil
}

// workflowGAE computes GAE over rows [start, end) of one finished trajectory.
func workflowGAE(buf *rollout, start, end int, gamma, lambda float64) {
	last := 0.0
	for i := end - 1; i >= start; i-- {
		next := 0.0
		if i+1 < end {
			next = float64(buf.values[i+1])
		}
		delta := float64(buf.rewards[i]) + gamma*next - float64(buf.values[i])
		last = delta + gamma*lambda*last
		buf.advantages[i] = float32(last)
		buf.returns[i] = float32(last + float64(buf.values[i]))
	}
}

// groupedWorkflowAdvantages compares participant k's return in each run
// with the same participant's returns in the other runs of the task.
func groupedWorkflowAdvantages(runs [][]Trajectory, estimator string, grouped bool) [][]float32 {
	adv := make([][]float32, len(runs))
	for g := range runs {
		adv[g] = make([]float32, len(runs[g]))
	}
	if !grouped {
		return adv
	}
	for k := range runs[0] {
		returns := make([]float64, 0, len(runs))
		for g := range runs {
			if k < len(runs[g]) {
				returns = append(returns, runs[g][k].Return())
			}
		}
		if len(returns) < 2 {
			continue
		}
		out := make([]float32, len(returns))
		groupAdvantages(returns, len(returns), estimator, out)
		i := 0
		for g := range runs {
			if k < len(runs[g]) {
				adv[g][k] = out[i]
				i++
			}
		}
	}
	return adv
}

// validateWorkflow scores the policy on every validation task.
func (t *Trainer) validateWorkflow(iter int, m *Metrics) {
	actor := newWorkflowActor(t, rand.New(rand.NewPCG(uint64(t.cfg.Trainer.Seed), uint64(iter))), t.cfg.Trainer.ValGreedy)
	var total float64
	successes := 0
	scorer, scores := t.workflow.(Scorer)
	for i, task := range t.valRows {
		seed := t.cfg.Trainer.Seed + 2_000_000 + int64(i)
		if scores {
			ret, ok, err := scorer.Score(context.Background(), task, seed, actor)
			if err != nil {
				t.logf("validation task %d: %v", i+1, err)
				return
			}
			total += ret
			if ok {
				successes++
			}
			continue
		}
		trajs, err := t.workflow.Run(context.Background(), task, seed, actor)
		if err != nil {
			t.logf("validation task %d: %v", i+1, err)
			return
		}
		for _, tr := range trajs {
			total += tr.Return() / float64(len(trajs))
		}
	}
	ret := Float(total / float64(len(t.valRows)))
	m.ValReturnMean = &ret
	if scores {
		rate := Float(float64(successes) / float64(len(t.valRows)))
		m.ValSuccessRate = &rate
	}
	t.logf("iteration %d: validation on %d tasks: return %.3f%s", iter, len(t.valRows), float64(ret), successText(m))
}
