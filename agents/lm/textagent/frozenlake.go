package textagent

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/internal/pystr"
)

func init() {
	Register(Spec{
		Name:        "frozenlake",
		Description: "rLLM's FrozenLake agent: its prompts, the move in the last ``` block",
		Args:        []string{"max_steps", "accumulate_thinking", "multistep_prompt", "accumulate_history", "system_prompt", "observation_only"},
		New: func(args envs.Params) (Agent, error) {
			var o FrozenLakeOptions
			ms, err := args.Int("max_steps", 0)
			if err != nil {
				return nil, err
			}
			if ms < 0 || ms > 1<<20 {
				return nil, fmt.Errorf("max_steps must be a positive integer (0: none), got %d", ms)
			}
			o.MaxSteps = int(ms)
			if o.AccumulateThinking, err = args.Bool("accumulate_thinking", true); err != nil {
				return nil, err
			}
			if o.MultiStepPrompt, err = args.Bool("multistep_prompt", false); err != nil {
				return nil, err
			}
			if o.AccumulateHistory, err = args.Bool("accumulate_history", true); err != nil {
				return nil, err
			}
			if o.ObservationOnly, err = args.Bool("observation_only", false); err != nil {
				return nil, err
			}
			if _, set := args["system_prompt"]; set {
				sys, err := args.String("system_prompt", "")
				if err != nil {
					return nil, err
				}
				o.SystemPrompt = &sys
			}
			return NewFrozenLake(o), nil
		},
	})
}

// FrozenLakeOptions are rLLM's FrozenLakeAgent arguments.
type FrozenLakeOptions struct {
	// MaxSteps, when > 0, tells the model how many steps remain.
	MaxSteps int
	// AccumulateThinking keeps the part of an answer before </think> in
	// the chat (rLLM's default); false keeps what follows it.
	AccumulateThinking bool
	// MultiStepPrompt uses the system prompt with five worked examples.
	MultiStepPrompt bool
	// AccumulateHistory shows the model the whole chat (rLLM's default);
	// false only the system prompt and the latest message.
	AccumulateHistory bool
	// SystemPrompt, when set, replaces rLLM's system prompt ("": none). A
	// model trained from scratch reads nothing in rLLM's 1,240 characters
	// of instructions, which cost it that many tokens of every prompt.
	SystemPrompt *string
	// ObservationOnly makes each user turn the rendered lake alone, without
	// rLLM's "Current Observation (N):" header and its "You have not
	// achieved the goal…" reminder (the notes on an invalid answer and on
	// the steps left stay). Those 112 characters carry nothing a model
	// trained from scratch reads, and were more than half of every prompt.
	ObservationOnly bool
}

// DefaultFrozenLakeOptions are rLLM's defaults.
var DefaultFrozenLakeOptions = FrozenLakeOptions{AccumulateThinking: true, AccumulateHistory: true}

// FrozenLake is rLLM's FrozenLakeAgent.
type FrozenLake struct {
	o          FrozenLakeOptions
	messages   []chat.Message
	traj       Trajectory
	step       int
	currentObs string
}

// NewFrozenLake returns the agent, reset.
func NewFrozenLake(o FrozenLakeOptions) *FrozenLake {
	a := &FrozenLake{o: o}
	a.Reset()
	return a
}

// The user turns' fixed parts, as rLLM writes them.
const (
	flNotYet    = "You have not achieved the goal, P has not reached G yet. Please give the next action."
	flInvalid   = "\nYour last response is invalid. Your position didn't change at all. You may need to recheck your thinking process, action outputted, and the format of response. Remember, you should only output the NEXT ACTION at each interation in the ``` ```. For example, if you want to move up, you should output ```Up```."
	flRemaining = "\nThe maximum number of steps remaining is %d."
)

// Reset implements Agent: the chat is the system prompt alone.
func (a *FrozenLake) Reset() {
	a.traj = Trajectory{Name: "default"}
	sys := FrozenLakeSystemPrompt
	if a.o.MultiStepPrompt {
		sys = FrozenLakeMultiShotSystemPrompt
	}
	if a.o.SystemPrompt != nil {
		sys = *a.o.SystemPrompt
	}
	a.messages = nil
	if sys != "" {
		a.messages = append(a.messages, chat.Message{Role: "system", Content: sys})
	}
	a.step = 0
	a.currentObs = ""
}

// UpdateFromEnv implements Agent: the previous step gets the reward, and
// the chat a user turn with the observation — noting an invalid last
// response when the observation did not change, and the steps left when
// MaxSteps is set. (rLLM adds this turn after the last step too.)
func (a *FrozenLake) UpdateFromEnv(observation string, reward float64, done bool, info map[string]any) {
	last := a.traj.Last()
	if last != nil {
		last.Reward, last.Done, last.Info = reward, done, info
	}
	content := fmt.Sprintf("Current Observation (%d): \n", a.step) + observation + "\n" + flNotYet
	if a.o.ObservationOnly {
		content = observation
	}
	if last != nil && last.Observation == observation {
		content += flInvalid
	}
	if a.o.MaxSteps > 0 && a.o.MaxSteps-a.step > 0 {
		content += fmt.Sprintf(flRemaining, a.o.MaxSteps-a.step)
	}
	a.messages = append(a.messages, chat.Message{Role: "user", Content: content})
	a.currentObs = observation
}

// UpdateFromModel implements Agent: the answer (after </think> unless
// AccumulateThinking) joins the chat and a new step; the action is the
// move named in its last ``` block, "0" (invalid) when there is none.
func (a *FrozenLake) UpdateFromModel(response string) string {
	content := response
	if !a.o.AccumulateThinking {
		if _, after, found := strings.Cut(content, "</think>"); found {
			content = after
		}
	}
	thought, action := ParseFrozenLakeResponse(content)
	a.messages = append(a.messages, chat.Message{Role: "assistant", Content: content})
	a.traj.Steps = append(a.traj.Steps, &Step{
		ChatCompletions: copyMessages(a.Messages()),
		Thought:         thought,
		Action:          action,
		ModelResponse:   content,
		Observation:     a.currentObs,
	})
	a.step++
	return action
}

// Messages implements Agent.
func (a *FrozenLake) Messages() []chat.Message {
	if a.o.AccumulateHistory || len(a.messages) <= 1 {
		return a.messages
	}
	last := a.messages[len(a.messages)-1]
	if a.messages[0].Role != "system" {
		return []chat.Message{last}
	}
	return []chat.Message{a.messages[0], last}
}

// Trajectory implements Agent.
func (a *FrozenLake) Trajectory() *Trajectory { return &a.traj }

var (
	backtickBlock = regexp.MustCompile("(?s)```(.*?)```")
	directions    = map[string]int{"left": 1, "down": 2, "right": 3, "up": 4}
)

// ParseFrozenLakeResponse is rLLM's _parse_model_response: the text of the
// last ``` block, stripped and lowercased, names a direction (left, down,
// right, up → "1"–"4") or is its number; anything else is the invalid
// action "0". The thought is what precedes that block. (A block of digits
// that are not decimal digits, such as "²", makes rLLM's int() raise; here
// it is the invalid action.)
func ParseFrozenLakeResponse(response string) (thought, action string) {
	thought, action = response, "0"
	matches := backtickBlock.FindAllStringSubmatch(response, -1)
	if len(matches) == 0 {
		return thought, action
	}
	last := pystr.Strip(matches[len(matches)-1][1])
	if i := strings.LastIndex(response, "```"+last+"```"); i >= 0 {
		thought = pystr.Strip(response[:i])
	}
	word := pystr.Lower(last)
	if n, ok := directions[word]; ok {
		return thought, strconv.Itoa(n)
	}
	if n, ok := pyDigits(word); ok && n >= 1 && n <= 4 {
		return thought, strconv.Itoa(n)
	}
	return thought, action
}

// pyDigits is int(s) for a string of decimal digits (any script's, as
// Python's int reads them); ok is false for anything else or a value too
// large to be an action.
func pyDigits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for _, r := range s {
		d := pystr.Digit(r)
		if d < 0 {
			return 0, false
		}
		n = n*10 + d
		if n > 1<<20 {
			n = 1 << 20 // large enough to be no action; keeps counting cheap
		}
	}
	return n, true
}
