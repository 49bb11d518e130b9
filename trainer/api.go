package trainer

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// Setup describes a training in the manner of rLLM's AgentTrainer: your own
// agent and environment (each a factory with its arguments), or a workflow
// with its arguments, plus config overrides and train and validation
// datasets. Everything left empty comes from the config and the registries.
type Setup struct {
	// Agent builds the policy from the spaces and config (agents.Build) and
	// AgentArgs; nil takes agent.name from the registry.
	Agent     func(b agents.Build, args map[string]any) (agents.Agent, error)
	AgentArgs map[string]any
	// Env builds one environment from its arguments: EnvArgs (saved as
	// env.args) overlaid by a dataset row. nil takes env.id from the registry.
	Env     func(args envs.Params) (envs.Env, error)
	EnvArgs map[string]any
	// Workflow builds custom episode logic from WorkflowArgs; it replaces
	// Agent, Env and their arguments (the policy is agent.name's).
	Workflow     func(args map[string]any) (Workflow, error)
	WorkflowArgs map[string]any
	// Name is what the run directory and metrics call a custom environment
	// or workflow (its env.id); default "custom".
	Name string

	// ConfigFile is an optional TOML file over the defaults; Overrides go
	// over it: a map[string]any with dot keys or a []string of key=value.
	ConfigFile string
	Overrides  any

	TrainDataset, ValDataset Dataset
	Options                  Options
}

// Dataset is a set of tasks: rows in memory, files (JSONL or CSV), or both.
// Each row is the arguments of one environment (or one workflow task).
type Dataset struct {
	Rows  []envs.Params
	Files []string
}

// AgentTrainer is a Trainer built from a Setup; Train runs it.
type AgentTrainer struct {
	*Trainer
}

// Train runs the training; progress arrives on Subscribe's event stream,
// the same one the terminal app draws.
func (a *AgentTrainer) Train(ctx context.Context) (Summary, error) { return a.Run(ctx) }

// SetupError is a Setup that cannot work as given.
type SetupError struct{ Msg string }

func (e *SetupError) Error() string { return "trainer setup: " + e.Msg }

// NewAgentTrainer checks s, resolves the config and builds the trainer.
func NewAgentTrainer(s Setup) (*AgentTrainer, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	custom := s.Env != nil || s.Workflow != nil
	name := s.Name
	if name == "" {
		name = "custom"
	}
	cfg, err := config.ResolveWith(func(c *config.Config) error {
		if s.ConfigFile != "" {
			if err := c.LoadFile(s.ConfigFile); err != nil {
				return err
			}
		}
		switch o := s.Overrides.(type) {
		case nil:
		case map[string]any:
			if err := c.ApplyMap(o); err != nil {
				return err
			}
		case []string:
			if err := c.ApplyArgs(o); err != nil {
				return err
			}
		}
		if custom {
			c.Env.ID = name
		}
		if len(s.EnvArgs) > 0 {
			if c.Env.Args == nil {
				c.Env.Args = map[string]any{}
			}
			maps.Copy(c.Env.Args, s.EnvArgs)
		}
		c.Data.TrainFiles = append(c.Data.TrainFiles, s.TrainDataset.Files...)
		c.Data.ValFiles = append(c.Data.ValFiles, s.ValDataset.Files...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	opts := s.Options
	opts.EnvFactory, opts.TrainTasks, opts.ValTasks = s.Env, s.TrainDataset.Rows, s.ValDataset.Rows
	if s.Agent != nil {
		opts.AgentFactory = func(b agents.Build) (agents.Agent, error) { return s.Agent(b, s.AgentArgs) }
	}
	if s.Workflow != nil {
		if opts.Workflow, err = s.Workflow(s.WorkflowArgs); err != nil {
			return nil, &SetupError{Msg: fmt.Sprintf("building the workflow: %v", err)}
		}
		if opts.Workflow == nil {
			return nil, &SetupError{Msg: "the Workflow factory returned nil"}
		}
	}
	t, err := New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &AgentTrainer{t}, nil
}

// check applies rLLM's rules for which arguments go together.
func (s *Setup) check() error {
	var problems []error
	fail := func(format string, a ...any) {
		problems = append(problems, &SetupError{Msg: fmt.Sprintf(format, a...)})
	}
	if s.Workflow != nil {
		if s.Env != nil || len(s.EnvArgs) > 0 {
			fail("a Workflow runs its own episodes, so it cannot be combined with Env or EnvArgs; drop one or the other")
		}
		if s.Agent != nil || len(s.AgentArgs) > 0 {
			fail("a Workflow acts through the agent.name policy, so it cannot be combined with Agent or AgentArgs; drop one or the other")
		}
	} else if len(s.WorkflowArgs) > 0 {
		fail("WorkflowArgs are given but no Workflow to pass them to; set Workflow or drop WorkflowArgs")
	}
	if s.Agent == nil && len(s.AgentArgs) > 0 {
		fail("AgentArgs are given but no Agent factory to pass them to; registry agents are configured with agent.* keys in Overrides")
	}
	switch s.Overrides.(type) {
	case nil, map[string]any, []string:
	default:
		fail("Overrides must be a map[string]any with dot keys or a []string of key=value, got %T", s.Overrides)
	}
	return errors.Join(problems...)
}
