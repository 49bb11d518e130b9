package text

import "github.com/agenttrainer/agenttrainer/envs"

// GenerateOptions ask an environment for a task set.
type GenerateOptions struct {
	N    int   // how many tasks
	Seed int64 // sets made with different seeds differ
	// Args shape the tasks (size and p for FrozenLake, digits for
	// arithmetic, ...); each environment documents its own.
	Args envs.Params
	// Exclude are the keys (Spec.Key) of tasks that must not appear: the
	// training set's, when making a validation set.
	Exclude map[string]bool
}

// Generator is implemented by Specs whose environment can make its own
// tasks (Spec.Generate) for `agenttrainer data`.
type Generator func(o GenerateOptions) ([]envs.Params, error)

// MaxGenerated bounds a generated task set.
const MaxGenerated = 10_000_000
