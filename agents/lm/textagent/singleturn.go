package textagent

import (
	"strings"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/internal/pystr"
)

func init() {
	Register(Spec{
		Name:        "multi_turn",
		Description: "a generic chat agent for any text environment: each observation a user turn, the answer (after </think>) the action, each step's reward on the answer before it",
		Args:        []string{"accumulate_thinking", "system_prompt"},
		New:         newSingleTurnAgent,
	})
	Register(Spec{
		Name:        "single_turn",
		Description: "rLLM's math agent: the question as the user turn, the answer after </think> as the action",
		Args:        []string{"accumulate_thinking", "system_prompt"},
		New:         newSingleTurnAgent,
	})
}

func newSingleTurnAgent(args envs.Params) (Agent, error) {
	var o SingleTurnOptions
	var err error
	if o.AccumulateThinking, err = args.Bool("accumulate_thinking", true); err != nil {
		return nil, err
	}
	if o.SystemPrompt, err = args.String("system_prompt", ""); err != nil {
		return nil, err
	}
	return NewSingleTurn(o), nil
}

// SingleTurnOptions shape the single-turn agent.
type SingleTurnOptions struct {
	// AccumulateThinking keeps earlier answers' thinking in the chat
	// (rLLM's default); false keeps what follows </think>.
	AccumulateThinking bool
	// SystemPrompt, when set, opens the chat (rLLM's math agent has none).
	SystemPrompt string
}

// SingleTurn is rLLM's MathAgent: each observation is a user turn and a new
// step, an empty observation only scores the latest step (what a
// single-turn environment returns after the answer), and the action is the
// answer stripped, or what follows its one </think>.
type SingleTurn struct {
	o        SingleTurnOptions
	messages []chat.Message
	traj     Trajectory
}

// NewSingleTurn returns the agent, reset.
func NewSingleTurn(o SingleTurnOptions) *SingleTurn {
	a := &SingleTurn{o: o}
	a.Reset()
	return a
}

// Reset implements Agent.
func (a *SingleTurn) Reset() {
	a.traj = Trajectory{Name: "default"}
	a.messages = nil
	if a.o.SystemPrompt != "" {
		a.messages = []chat.Message{{Role: "system", Content: a.o.SystemPrompt}}
	}
}

// UpdateFromEnv implements Agent. The reward, done and info of a step
// belong to the answer before it, whether or not the environment also
// says something (a multi-turn environment's "Correct!" with reward 1):
// rLLM's MathAgent records them on the prior step first, then makes any
// observation a new user turn and step.
func (a *SingleTurn) UpdateFromEnv(observation string, reward float64, done bool, info map[string]any) {
	if last := a.traj.Last(); last != nil && (last.ChatCompletions != nil || observation == "") {
		last.Reward, last.Done, last.Info = reward, done, info
	}
	if observation == "" {
		return
	}
	a.messages = append(a.messages, chat.Message{Role: "user", Content: observation})
	a.traj.Steps = append(a.traj.Steps, &Step{Observation: observation})
}

// UpdateFromModel implements Agent.
func (a *SingleTurn) UpdateFromModel(response string) string {
	a.messages = append(a.messages, chat.Message{Role: "assistant", Content: response})
	step := a.traj.Last()
	if step == nil { // an answer without a question: keep it as a step of its own
		step = &Step{}
		a.traj.Steps = append(a.traj.Steps, step)
	}
	step.ChatCompletions = copyMessages(a.Messages())
	step.ModelResponse = response
	step.Action = pystr.Strip(response)
	step.Thought = ""
	if strings.Count(response, "</think>") == 1 {
		before, after, _ := strings.Cut(response, "</think>")
		step.Thought = before + "</think>"
		step.Action = pystr.Strip(after)
	}
	return step.Action
}

// Messages implements Agent: without AccumulateThinking, every assistant
// turn but the last keeps only what follows its </think>.
func (a *SingleTurn) Messages() []chat.Message {
	out := copyMessages(a.messages)
	if !a.o.AccumulateThinking {
		for i := range out[:max(len(out)-1, 0)] {
			if out[i].Role == "assistant" {
				if _, after, found := strings.Cut(out[i].Content, "</think>"); found {
					out[i].Content = after
				}
			}
		}
	}
	return out
}

// Trajectory implements Agent.
func (a *SingleTurn) Trajectory() *Trajectory { return &a.traj }
