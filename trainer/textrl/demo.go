package textrl

import (
	"errors"
	"fmt"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/textagent"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// Transcript is one episode as a chat: what supervised warm start trains
// on (the assistant turns), one JSON line of a demonstration set.
type Transcript struct {
	Env      string         `json:"env"`
	Task     envs.Params    `json:"task"`
	Messages []chat.Message `json:"messages"`
	Reward   float64        `json:"reward"`
	Success  bool           `json:"success"`
	Turns    int            `json:"turns"`
}

// Demonstrate plays task with the environment's oracle (text.Oracle)
// answering in the model's place, through the same agent a training run
// uses, so the transcript holds exactly the prompts the model will see and
// the best answers. It fails when the environment has no oracle or the
// oracle does not succeed within the turn limit.
func Demonstrate(o MultiTurnOptions, task envs.Params) (Transcript, error) {
	spec, ok := text.Lookup(o.Env)
	if !ok {
		return Transcript{}, fmt.Errorf("unknown text environment %q", o.Env)
	}
	if o.Agent == "" {
		o.Agent = spec.Agent
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = spec.MaxTurns
	}
	agent, err := textagent.New(o.Agent, o.AgentArgs)
	if err != nil {
		return Transcript{}, err
	}
	env, err := text.Make(o.Env, task, o.EnvArgs)
	if err != nil {
		return Transcript{}, err
	}
	oracle, ok := env.(text.Oracle)
	if !ok {
		return Transcript{}, fmt.Errorf("%s has no oracle to demonstrate with", o.Env)
	}
	turns := o.MaxTurns
	if l, ok := env.(text.TurnLimiter); ok && l.MaxTurns() > 0 {
		turns = min(turns, l.MaxTurns())
	}
	if err := safely(func() error {
		obs, info, err := env.Reset(nil)
		if err != nil {
			return err
		}
		agent.UpdateFromEnv(obs, 0, false, info)
		for range turns {
			resp, ok := oracle.Solution()
			if !ok {
				return errors.New("the oracle knows no answer for this task")
			}
			action := agent.UpdateFromModel(resp)
			obs, r, done, info, err := env.Step(action)
			if err != nil {
				return err
			}
			agent.UpdateFromEnv(obs, r, done, info)
			if done {
				return nil
			}
		}
		return nil
	}); err != nil {
		return Transcript{}, err
	}
	traj := agent.Trajectory()
	t := Transcript{Env: o.Env, Task: task, Turns: len(traj.Steps)}
	for _, s := range traj.Steps {
		t.Reward += s.Reward
	}
	if last := traj.Last(); last != nil {
		t.Messages = last.ChatCompletions
	}
	if s, ok := env.(text.Succeeder); ok {
		t.Success = s.Succeeded()
	} else {
		t.Success = t.Reward > 0
	}
	if !t.Success {
		return t, fmt.Errorf("the oracle did not solve the task in %d turns (reward %v)", turns, t.Reward)
	}
	return t, nil
}

func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the environment failed: %v", r)
		}
	}()
	return f()
}
