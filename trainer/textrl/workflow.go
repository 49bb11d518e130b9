package textrl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agenttrainer/agenttrainer/agents/lm/textagent"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// Workflow plays one episode (rLLM's Workflow). It calls the model through
// m, and returns a *Terminated for the reason the episode ended (nil is
// rLLM's "unknown"); any other error ends it with the error reason.
type Workflow interface {
	Run(ctx context.Context, task envs.Params, m *Model) error
	// Trajectories are the participants' trajectories, read after Run
	// returns (also after an error: what was played is reported).
	Trajectories() []*textagent.Trajectory
}

// WorkflowFactory builds a fresh workflow for one episode of task.
type WorkflowFactory func(task envs.Params) (Workflow, error)

// MultiTurnOptions describe rLLM's MultiTurnWorkflow: an agent and a text
// environment taking turns (a single-turn task is an environment that is
// done after the first step).
type MultiTurnOptions struct {
	Env       string      // text environment id
	EnvArgs   envs.Params // env.args, under each task row
	Agent     string      // text agent name ("": the environment's own)
	AgentArgs envs.Params
	// MaxTurns bounds the model calls (0: the environment's default); a
	// task's own limit (text.TurnLimiter) applies when it is smaller.
	MaxTurns int
}

// MultiTurn returns the factory of rLLM's MultiTurnWorkflow. It checks the
// environment and agent names once, so that a misspelt name is one error
// instead of one per episode.
func MultiTurn(o MultiTurnOptions) (WorkflowFactory, error) {
	spec, ok := text.Lookup(o.Env)
	if !ok {
		return nil, fmt.Errorf("unknown text environment %q (registered: %s)", o.Env, strings.Join(text.IDs(), ", "))
	}
	if o.Agent == "" {
		o.Agent = spec.Agent
	}
	if _, err := textagent.New(o.Agent, o.AgentArgs); err != nil {
		return nil, err
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = spec.MaxTurns
	}
	return func(task envs.Params) (Workflow, error) {
		agent, err := textagent.New(o.Agent, o.AgentArgs)
		if err != nil {
			return nil, err
		}
		env, err := text.Make(o.Env, task, o.EnvArgs)
		if err != nil {
			return nil, err
		}
		return &multiTurn{o: o, env: env, agent: agent}, nil
	}, nil
}

type multiTurn struct {
	o     MultiTurnOptions
	env   text.Env
	agent textagent.Agent
	// abandoned: an environment call outlived the episode and may still
	// run, so the environment must not be touched again.
	abandoned bool
}

// Close closes the environment when it holds something (a remote text
// environment's session): the engine calls it when the episode ends. An
// environment abandoned in a hung call is left alone; its call may still
// be running.
func (w *multiTurn) Close() error {
	if c, ok := w.env.(io.Closer); ok && !w.abandoned {
		return c.Close()
	}
	return nil
}

func (w *multiTurn) Trajectories() []*textagent.Trajectory {
	return []*textagent.Trajectory{w.agent.Trajectory()}
}

// Succeeded reports the environment's verdict where it has one.
func (w *multiTurn) Succeeded() (bool, bool) {
	if s, ok := w.env.(text.Succeeder); ok && !w.abandoned {
		return s.Succeeded(), true
	}
	return false, false
}

func (w *multiTurn) Run(ctx context.Context, task envs.Params, m *Model) error {
	w.agent.Reset()
	w.agent.Trajectory().Task = task
	var obs string
	var info text.Info
	err := w.callEnv(ctx, func() (err error) {
		obs, info, err = w.env.Reset(nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	obs, tooLong := m.Observation(obs)
	w.agent.UpdateFromEnv(obs, 0, false, info)
	if tooLong != nil {
		return tooLong
	}
	turns := w.o.MaxTurns
	if l, ok := w.env.(text.TurnLimiter); ok && l.MaxTurns() > 0 {
		turns = min(turns, l.MaxTurns())
	}
	traj := w.agent.Trajectory()
	for range turns {
		out, err := m.Generate(ctx, traj, w.agent.Messages())
		if err != nil {
			return err
		}
		action := w.agent.UpdateFromModel(out.Text)
		if s := traj.Last(); s != nil {
			s.PromptIDs, s.ResponseIDs, s.LogProbs = out.PromptIDs, out.Generation.IDs, out.Generation.LogProbs
			s.FinishReason = string(out.Generation.Finish)
		}
		var reward float64
		var done bool
		err = w.callEnv(ctx, func() (err error) {
			obs, reward, done, info, err = w.env.Step(action)
			return err
		})
		if err != nil {
			return fmt.Errorf("step: %w", err)
		}
		if err := text.CheckReward(reward); err != nil {
			return fmt.Errorf("step: the environment's %v", err)
		}
		obs, tooLong = m.Observation(obs)
		m.episode.Info["last_observation"] = obs // what the environment said after the last answer (a transcript's last turn)
		w.agent.UpdateFromEnv(obs, reward, done, info)
		switch {
		case out.Generation.Finish == FinishLength:
			return &Terminated{Reason: MaxResponseLengthExceeded}
		case done:
			return &Terminated{Reason: EnvDone}
		case tooLong != nil:
			return tooLong
		}
	}
	return &Terminated{Reason: MaxTurnsExceeded}
}

// Observation makes an environment's text fit for the chat: invalid UTF-8
// is replaced by U+FFFD (counted in the episode's "invalid_utf8"), and text
// longer than the engine takes in a prompt is cut to its first kilobyte
// with a note; the second result is then the max_prompt_length_exceeded
// termination to return once the observation has been handed to the agent.
func (m *Model) Observation(obs string) (string, error) {
	if !utf8.ValidString(obs) {
		obs = strings.ToValidUTF8(obs, "\uFFFD")
		n, _ := m.episode.Info["invalid_utf8"].(int)
		m.episode.Info["invalid_utf8"] = n + 1
	}
	if limit := m.e.ObservationLimit(); len(obs) > limit {
		cut := strings.ToValidUTF8(obs[:1024], "")
		return cut + fmt.Sprintf("\n[… an observation of %d bytes, cut]", len(obs)),
			&Terminated{Reason: MaxPromptLengthExceeded, Detail: fmt.Sprintf("an observation of %d bytes is over the %d a prompt can hold", len(obs), limit)}
	}
	return obs, nil
}

// callEnv runs an environment call so that a panic becomes an error and a
// call that outlives ctx (a hung environment) is abandoned: its goroutine
// is left to finish on its own, the episode ends, and the environment is
// not asked anything again.
func (w *multiTurn) callEnv(ctx context.Context, f func() error) error {
	err := callEnv(ctx, f)
	if err != nil && ctx.Err() != nil {
		w.abandoned = true
	}
	return err
}

func callEnv(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("the environment failed: %v", r)
			}
		}()
		done <- f()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errTimeout marks an episode that ran past Options.Timeout.
var errTimeout = errors.New("the episode ran past its timeout")
