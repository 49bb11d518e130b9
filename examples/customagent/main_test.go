package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// The agent's key is a key like any other: in the schema with its doc,
// checked, suggested for a typo, written in the resolved config.
func TestTheKeyIsAKey(t *testing.T) {
	k, ok := config.Lookup("agent.torso_width")
	if !ok || k.Doc == "" || k.Type != "int" || k.Default != int64(64) {
		t.Fatalf("agent.torso_width in the schema: %+v, %v", k, ok)
	}
	if _, err := config.Resolve("", []string{"agent.name=torso", "agent.torso_width=0"}); err == nil ||
		!strings.Contains(err.Error(), "agent.torso_width: must be between 1 and 4096") {
		t.Errorf("a width of 0: %v", err)
	}
	if _, err := config.Resolve("", []string{"agent.torso_widht=8"}); err == nil || !strings.Contains(err.Error(), "did you mean agent.torso_width") {
		t.Errorf("a typo: %v", err)
	}
	cfg, err := config.Resolve("", []string{"agent.name=torso", "agent.torso_width=32"})
	if err != nil || !strings.Contains(cfg.TOML(), "torso_width = 32") {
		t.Errorf("resolved config: %v\n%s", err, cfg.TOML())
	}
	if spec, ok := agents.Lookup("torso"); !ok || spec.Estimate == nil {
		t.Error("the agent is not registered with its estimate")
	}
}

// It trains: CartPole's mean return grows well beyond a random policy's
// (about 22) in 150k steps, and the checkpoint holds its named tensors.
func TestTheAgentTrains(t *testing.T) {
	dir := t.TempDir()
	sum, err := train(context.Background(), dir, "ppo.total_timesteps=150000", "agent.torso_width=64")
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(sum.Last.EpReturnMean); got < 60 {
		t.Errorf("ep_return_mean %.1f after %d steps, want ≥ 60", got, sum.Last.Step)
	}
	data, err := os.ReadFile(sum.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	tensors, _, err := runstore.DecodeSafetensors(data)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range tensors {
		names = append(names, name)
	}
	joined := strings.Join(names, " ")
	for _, want := range []string{"body.weight", "actor.weight", "critic.bias"} {
		if !strings.Contains(joined, want) {
			t.Errorf("checkpoint tensors %v lack %s", names, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(sum.RunDir, runstore.ConfigFile)); !strings.Contains(string(b), "torso_width = 64") {
		t.Errorf("the run's config.toml lacks agent.torso_width:\n%s", b)
	}
	t.Logf("ep_return_mean %.1f after %d steps", float64(sum.Last.EpReturnMean), sum.Last.Step)
}
