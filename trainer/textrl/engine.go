package textrl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm/textagent"
	"github.com/agenttrainer/agenttrainer/envs"
)

// Stats describe one Run's batching.
type Stats struct {
	Episodes, Batches, Requests, LargestBatch int
}

// Run plays n episodes (rollout.n samples) of each task, at most
// MaxConcurrent at once, and returns them grouped by task in task order:
// groups[i][j] is sample j of tasks[i]. Episodes never fail the call: a
// failure is an episode with the error termination (and masked rows), so
// one bad row, environment or reward function costs one sample. Run
// returns an error only for bad arguments or a cancelled ctx.
func (e *Engine) Run(ctx context.Context, tasks []envs.Params, n int, factory WorkflowFactory) ([][]*Episode, Stats, error) {
	if n < 1 || factory == nil {
		return nil, Stats{}, fmt.Errorf("textrl: Run needs n ≥ 1 samples per task and a workflow, got n = %d", n)
	}
	groups := make([][]*Episode, len(tasks))
	queue := make(chan *Episode, len(tasks)*n)
	for i, task := range tasks {
		groups[i] = make([]*Episode, n)
		for j := range n {
			ep := &Episode{ID: strconv.Itoa(i) + ":" + strconv.Itoa(j), TaskIndex: i, Sample: j, Task: task,
				Info: map[string]any{}, Metrics: map[string]float64{}}
			groups[i][j] = ep
			queue <- ep
		}
	}
	close(queue)
	b := newBatcher(ctx, e.o.Generator, e.o.MaxBatch, e.o.Linger)
	var wg sync.WaitGroup
	// A worker counts as running from before it starts until the queue is
	// empty, not per episode: counted per episode, the first worker could
	// play alone before the scheduler started the others, every request a
	// batch of one.
	for range min(e.o.MaxConcurrent, len(tasks)*n) {
		wg.Add(1)
		b.enter()
		go func() {
			defer wg.Done()
			defer b.leave()
			for ep := range queue {
				e.play(ctx, b, ep, factory)
			}
		}()
	}
	wg.Wait()
	st := Stats{Episodes: len(tasks) * n, Batches: b.batches, Requests: b.requests, LargestBatch: b.largest}
	if err := ctx.Err(); err != nil {
		return groups, st, fmt.Errorf("textrl: the rollout was stopped: %w", err)
	}
	return groups, st, nil
}

// play runs one episode and post-processes it as rLLM's Workflow does.
func (e *Engine) play(ctx context.Context, b *batcher, ep *Episode, factory WorkflowFactory) {
	start := time.Now()
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if e.o.Timeout > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, e.o.Timeout, errTimeout)
	}
	defer cancel()
	m := &Model{e: e, b: b, episode: ep, sessions: map[*textagent.Trajectory]*session{},
		seed: mix(uint64(e.o.Seed), uint64(ep.TaskIndex)<<32|uint64(ep.Sample))}
	var wf Workflow
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("the workflow failed: %v", r)
			}
		}()
		if wf, err = factory(ep.Task); err != nil {
			return err
		}
		return wf.Run(runCtx, ep.Task, m)
	}()
	var term *Terminated
	switch {
	case err == nil:
		ep.Termination = Unknown
	case errors.As(err, &term):
		ep.Termination = term.Reason
		if term.Detail != "" {
			ep.Info["termination_detail"] = term.Detail
		}
	case context.Cause(runCtx) == errTimeout && ctx.Err() == nil:
		ep.Termination = Timeout
	default:
		ep.Termination = Error
		ep.Info["error"] = err.Error()
	}
	if wf != nil {
		func() {
			defer func() { recover() }() // a broken workflow's trajectories are lost, not the run
			ep.Trajectories = wf.Trajectories()
		}()
	}
	e.finish(ep, m, wf)
	if c, ok := wf.(io.Closer); ok { // the episode's environment is done with
		func() {
			defer func() {
				if r := recover(); r != nil {
					ep.Info["close_error"] = fmt.Sprint(r)
				}
			}()
			if err := c.Close(); err != nil {
				ep.Info["close_error"] = err.Error()
			}
		}()
	}
	ep.Metrics["time_s"] = time.Since(start).Seconds()
}

// finish drops unanswered last steps, sums the rewards, lays out the rows
// and masks what must not be trained on.
func (e *Engine) finish(ep *Episode, m *Model, wf Workflow) {
	for _, t := range ep.Trajectories {
		if t == nil {
			continue
		}
		// rLLM drops a last step the model never answered (an episode
		// that ended between the environment's and the model's turn).
		if last := t.Last(); last != nil && len(last.ChatCompletions) == 0 {
			t.Steps = t.Steps[:len(t.Steps)-1]
		}
		t.Reward = 0
		for _, s := range t.Steps {
			t.Reward += s.Reward
		}
	}
	ep.Trajectories = slices.DeleteFunc(ep.Trajectories, func(t *textagent.Trajectory) bool { return t == nil })
	ep.Correct = ep.Reward() > 0
	if s, ok := wf.(interface{ Succeeded() (bool, bool) }); ok {
		if v, known := s.Succeeded(); known {
			ep.Correct = v
		}
	}
	turns, sampled := 0, 0
	for _, traj := range m.order {
		s := m.sessions[traj]
		idx := slices.Index(ep.Trajectories, traj)
		if idx < 0 {
			ep.Trajectories = append(ep.Trajectories, traj)
			idx = len(ep.Trajectories) - 1
		}
		for _, r := range s.rows {
			r.Trajectory = idx
			r.Reward = traj.Reward
			ep.Rows = append(ep.Rows, r)
			for _, k := range r.Mask {
				sampled += int(k)
			}
		}
		turns += s.calls
	}
	ep.Masked = ep.Termination == Error || slices.Contains(e.o.MaskTerminations, ep.Termination)
	if ep.Masked {
		for i := range ep.Rows {
			clear(ep.Rows[i].Mask)
		}
	}
	mm, _ := ep.Info["prefix_mismatches"].([]map[string]any)
	ep.Metrics["turns"] = float64(turns)
	ep.Metrics["rows"] = float64(len(ep.Rows))
	ep.Metrics["response_tokens"] = float64(sampled)
	ep.Metrics["prefix_mismatches"] = float64(len(mm))
}
