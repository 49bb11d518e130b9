package textrl

import (
	"errors"
	"fmt"
	"slices"

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
	// Turn, when set, is the 1-based turn of a transcript that holds one
	// turn of its episode (PerTurn).
	Turn int `json:"turn,omitempty"`

	// turnChats are the chats of each turn: the messages the model was
	// given and its answer.
	turnChats [][]chat.Message
}

// PerTurn returns the transcript as supervised warm start must read it:
// itself when each turn's chat extends the previous one (the agent keeps
// its history, so the last chat holds every turn), else one transcript a
// turn (an agent without history, such as FrozenLake's with
// accumulate_history = false, shows the model only the latest turn).
func (t Transcript) PerTurn() []Transcript {
	for i := 1; i < len(t.turnChats); i++ {
		if !chatExtends(t.turnChats[i], t.turnChats[i-1]) {
			out := make([]Transcript, len(t.turnChats))
			for j, c := range t.turnChats {
				out[j] = Transcript{Env: t.Env, Task: t.Task, Messages: c, Reward: t.Reward, Success: t.Success, Turns: t.Turns, Turn: j + 1}
			}
			return out
		}
	}
	return []Transcript{t}
}

// chatExtends reports whether chat starts with prefix.
func chatExtends(c, prefix []chat.Message) bool {
	return len(c) >= len(prefix) && slices.EqualFunc(c[:len(prefix)], prefix, func(a, b chat.Message) bool {
		return a.Role == b.Role && a.Content == b.Content
	})
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
	var turnChats [][]chat.Message
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
			prompt := agent.Messages()
			turnChats = append(turnChats, append(slices.Clone(prompt), chat.Message{Role: "assistant", Content: resp}))
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
	t := Transcript{Env: o.Env, Task: task, Turns: len(traj.Steps), turnChats: turnChats}
	for _, s := range traj.Steps {
		t.Reward += s.Reward
	}
	if len(turnChats) > 0 {
		t.Messages = turnChats[len(turnChats)-1]
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
