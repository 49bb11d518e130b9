// Package textagent is rLLM's BaseAgent in Go: a language-model agent that
// keeps the chat (UpdateFromEnv adds what the environment said,
// UpdateFromModel reads the model's answer into an action), with its
// trajectory of steps; rLLM's FrozenLake agent exactly (its prompts, the
// action from the last ``` block, the invalid-response note) and its
// single-turn math agent for question-answer tasks; and the registry that
// names them for the config (agent.args) and the picker.
package textagent

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/envs"
)

// Step is one model call and what followed it (rLLM's Step): the chat the
// model answered, the answer read into a thought and an action, and the
// environment's reward. The token fields are filled by the workflow that
// ran the model: the ids it was given and produced, each produced token's
// log-probability, and why it stopped.
type Step struct {
	ChatCompletions []chat.Message // the conversation up to and with the answer
	Observation     string         // what the environment showed before the call
	Thought         string
	Action          string
	ModelResponse   string
	Reward          float64
	Done            bool
	Info            map[string]any

	PromptIDs    []int
	ResponseIDs  []int
	LogProbs     []float32
	FinishReason string
}

// Trajectory is one agent's steps in an episode (rLLM's Trajectory).
type Trajectory struct {
	Name   string // which participant ("default" for a lone agent)
	Task   map[string]any
	Steps  []*Step
	Reward float64 // the sum of the steps' rewards, set when the episode ends
}

// Last is the latest step, or nil.
func (t *Trajectory) Last() *Step {
	if len(t.Steps) == 0 {
		return nil
	}
	return t.Steps[len(t.Steps)-1]
}

// Agent is rLLM's BaseAgent.
type Agent interface {
	// Reset clears the chat and the trajectory for a new episode.
	Reset()
	// UpdateFromEnv takes the environment's observation after a reset or a
	// step, with the step's reward and whether the episode is over.
	UpdateFromEnv(observation string, reward float64, done bool, info map[string]any)
	// UpdateFromModel takes the model's answer (its text, special tokens
	// left out) and returns the action for the environment.
	UpdateFromModel(response string) (action string)
	// Messages is the chat the model answers next (rLLM's
	// chat_completions).
	Messages() []chat.Message
	// Trajectory is the episode so far.
	Trajectory() *Trajectory
}

// Spec describes a registered agent.
type Spec struct {
	Name        string
	Description string
	// Args are the arguments New reads, for messages and the config editor.
	Args []string
	New  func(args envs.Params) (Agent, error)
}

var registry = map[string]Spec{}

// Register adds an agent; it panics on a duplicate or incomplete spec.
func Register(s Spec) {
	if s.Name == "" || s.New == nil {
		panic("textagent: Register needs a name and a constructor")
	}
	if _, dup := registry[s.Name]; dup {
		panic("textagent: duplicate registration of " + s.Name)
	}
	registry[s.Name] = s
}

// Lookup returns a registered agent's spec.
func Lookup(name string) (Spec, bool) {
	s, ok := registry[name]
	return s, ok
}

// Names are the registered agents, sorted.
func Names() []string { return slices.Sorted(maps.Keys(registry)) }

// New builds a registered agent from its arguments.
func New(name string, args envs.Params) (Agent, error) {
	s, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown text agent %q (registered: %s)", name, strings.Join(Names(), ", "))
	}
	if err := args.CheckArgs(s.Args...); err != nil {
		return nil, fmt.Errorf("text agent %s: %w", name, err)
	}
	a, err := s.New(args)
	if err != nil {
		return nil, fmt.Errorf("text agent %s: %w", name, err)
	}
	return a, nil
}

func copyMessages(m []chat.Message) []chat.Message { return slices.Clone(m) }
