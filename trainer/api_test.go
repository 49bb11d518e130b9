package trainer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
)

type nullWorkflow struct{}

func (nullWorkflow) Spaces() (envs.Space, envs.Space) {
	return envs.Space{Kind: envs.Box, Dim: 1}, envs.Space{Kind: envs.Discrete, N: 2}
}
func (nullWorkflow) Run(context.Context, envs.Params, int64, Actor) ([]Trajectory, error) {
	return nil, errors.New("unused")
}

func TestSetupRules(t *testing.T) {
	walk := func(envs.Params) (envs.Env, error) { return &brokenEnv{after: 1 << 30}, nil }
	wf := func(map[string]any) (Workflow, error) { return nullWorkflow{}, nil }
	agent := func(b agents.Build, _ map[string]any) (agents.Agent, error) { return agents.New("random", b) }
	tests := []struct {
		name  string
		setup Setup
		want  string
	}{
		{"workflow with env", Setup{Workflow: wf, Env: walk}, "cannot be combined with Env or EnvArgs"},
		{"workflow with env args", Setup{Workflow: wf, EnvArgs: map[string]any{"x": 1}}, "cannot be combined with Env or EnvArgs"},
		{"workflow with agent", Setup{Workflow: wf, Agent: agent}, "cannot be combined with Agent or AgentArgs"},
		{"workflow args alone", Setup{WorkflowArgs: map[string]any{"x": 1}}, "no Workflow to pass them to"},
		{"agent args alone", Setup{AgentArgs: map[string]any{"x": 1}}, "no Agent factory to pass them to"},
		{"bad overrides type", Setup{Overrides: 3}, "Overrides must be a map[string]any with dot keys or a []string of key=value, got int"},
		{"bad override key", Setup{Overrides: map[string]any{"ppo.lr": 1}}, "unknown key"},
		{"bad override value", Setup{Overrides: []string{"ppo.gamma=3"}}, "must be between 0 and 1"},
		{"row the env cannot build", Setup{Env: func(a envs.Params) (envs.Env, error) {
			if _, err := a.Int("size", 0); err != nil {
				return nil, err
			}
			return &brokenEnv{}, nil
		}, TrainDataset: Dataset{Rows: []envs.Params{{"size": 3}, {"size": "big"}}}}, `row 2: size must be an integer, got "big"`},
		{"workflow factory fails", Setup{Workflow: func(map[string]any) (Workflow, error) { return nil, errors.New("no board") }}, "building the workflow: no board"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewAgentTrainer(tc.setup)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSetupWithCustomAgentAndEnv(t *testing.T) {
	var built agents.Build
	var gotArgs map[string]any
	at, err := NewAgentTrainer(Setup{
		Name: "Walk",
		Env:  func(envs.Params) (envs.Env, error) { return &brokenEnv{after: 1 << 30}, nil },
		Agent: func(b agents.Build, args map[string]any) (agents.Agent, error) {
			built, gotArgs = b, args
			return agents.New("random", b)
		},
		AgentArgs: map[string]any{"temperature": 0.5},
		Overrides: map[string]any{"ppo.total_timesteps": 1024, "trainer.runs_dir": t.TempDir()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if built.Obs.Dim != 1 || built.Act.N != 2 || gotArgs["temperature"] != 0.5 {
		t.Fatalf("agent factory got %+v, args %v", built, gotArgs)
	}
	sum, err := at.Train(context.Background())
	if err != nil || sum.Last.Step != 1024 || !strings.Contains(sum.RunDir, "-Walk-") {
		t.Fatalf("train: %v, %+v", err, sum)
	}
}
