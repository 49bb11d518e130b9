// Package text is the core of text environments, rLLM's BaseEnv in Go: an
// environment that answers a language-model agent in words (Reset(task) →
// observation, info; Step(action) → observation, reward, done, info), built
// from a dataset row merged with env.args (rLLM's from_dict), the registry
// of text environments, and reward functions (task, response) → reward,
// info. The worlds live in subpackages (frozenlake, arith, countdown, qa)
// that register in init; envs/builtin imports them all.
//
// Text environments have a registry of their own, apart from envs': their
// observations are strings, not float vectors with a space, and the
// trainer drives them through a language-model workflow rather than the
// vector runner. Their ids never collide with envs' (a test checks).
package text

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
)

// Info is the free-form information a step reports (rLLM's info dict):
// action_is_effective, what a reward function found, and so on.
type Info map[string]any

// Env is one text environment (rLLM's BaseEnv). An environment is built for
// one task (Spec.New), so Reset's task may be nil: the task it was built
// from. Errors are the environment's failures (a malformed task, a reward
// function that broke); the workflow ends the episode with the error
// termination reason and masks its tokens.
type Env interface {
	// Reset starts an episode of task (nil: the task the environment was
	// built from) and returns the first observation.
	Reset(task envs.Params) (observation string, info Info, err error)
	// Step applies the agent's action (the text its UpdateFromModel
	// returned) and returns the next observation, the reward and whether
	// the episode is over.
	Step(action string) (observation string, reward float64, done bool, info Info, err error)
}

// Succeeder is implemented by environments whose episodes succeed or fail
// (FrozenLake's goal, a correct answer); asked when the episode is over.
type Succeeder interface {
	Succeeded() bool
}

// Oracle is implemented by environments that know a best response for the
// current state: a response their paired agent (Spec.Agent) turns into the
// best action (FrozenLake: the next move of a shortest path in ``` ```;
// a question: its answer in the format the reward function reads). The
// demonstration sets for supervised warm start are played with it.
type Oracle interface {
	Solution() (response string, ok bool)
}

// TurnLimiter is implemented by environments whose task bounds the number of
// turns (a row's max_steps); the workflow stops at the smaller of this and
// its own limit with the max-turns termination reason.
type TurnLimiter interface {
	MaxTurns() int
}

// Spec describes a registered text environment.
type Spec struct {
	ID          string
	Description string // one line, for `agenttrainer list` and the picker
	// New builds an environment from a task row already merged with
	// env.args (rLLM's from_dict).
	New func(task envs.Params) (Env, error)
	// Agent names the text agent that speaks the environment's language
	// (agents/lm/textagent's registry): "frozenlake", "single_turn".
	Agent string
	// MaxTurns is the default turn limit of an episode (1: single-turn).
	MaxTurns int
	// Columns are the task rows' columns, in the order task files are
	// written.
	Columns []string
	// Generate makes a task set, when the environment can (nil: it
	// reads datasets only).
	Generate Generator
	// Key names what makes two rows the same task (FrozenLake's map,
	// countdown's numbers and target), so that validation sets can leave
	// out the training set's tasks.
	Key func(task envs.Params) (string, error)
}

var registry = map[string]Spec{}

// Register adds a text environment; it panics on a duplicate or incomplete
// spec, a programming error.
func Register(s Spec) {
	if s.ID == "" || s.New == nil || s.MaxTurns < 1 {
		panic("text: Register needs an ID, a constructor and MaxTurns ≥ 1")
	}
	if _, dup := registry[s.ID]; dup {
		panic("text: duplicate registration of " + s.ID)
	}
	registry[s.ID] = s
}

// Lookup returns the spec of a registered text environment.
func Lookup(id string) (Spec, bool) {
	s, ok := registry[id]
	return s, ok
}

// IDs returns the registered text environments' ids in sorted order.
func IDs() []string {
	return slices.Sorted(maps.Keys(registry))
}

// Merge is a task row with env.args under it: each key of args the row
// does not set itself (settings shared by every task, such as a reward
// function's name), as the trainer merges rows for the other environments.
// rLLM's from_dict({**task, **env_args}) lets env.args win instead; here a
// row's own value wins, so one file can mix tasks.
func Merge(row, args envs.Params) envs.Params {
	out := make(envs.Params, len(row)+len(args))
	maps.Copy(out, args)
	maps.Copy(out, row)
	return out
}

// Make builds the text environment id for a task row merged with args
// (either may be nil). An error in the arguments is an *envs.ArgsError.
func Make(id string, row, args envs.Params) (e Env, err error) {
	s, ok := registry[id]
	if !ok {
		return nil, fmt.Errorf("unknown text environment %q (registered: %s)", id, strings.Join(IDs(), ", "))
	}
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, fmt.Errorf("%s: building the environment failed: %v", id, r)
		}
	}()
	e, err = s.New(Merge(row, args))
	if err != nil {
		var ae *envs.ArgsError
		if !errors.As(err, &ae) {
			err = &envs.ArgsError{Err: err}
		}
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	return e, nil
}

// CheckReward refuses a reward that is not a finite number.
func CheckReward(r float64) error {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return fmt.Errorf("reward %v is not a finite number", r)
	}
	return nil
}
