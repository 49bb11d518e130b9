package info

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
)

func TestConfigCommand(t *testing.T) {
	o, err := ParseConfig([]string{"ppo.learning_rate=3e-4", "agent.hidden=[128,128]"})
	var out bytes.Buffer
	if err == nil {
		err = RunConfig(context.Background(), o, &out, &out)
	}
	if err != nil || !strings.Contains(out.String(), "learning_rate = 0.0003") || !strings.Contains(out.String(), "hidden = [128, 128]") {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	o, _ = ParseConfig([]string{"ppo.num_minibatches=0"})
	err = RunConfig(context.Background(), o, &out, &out)
	if code := cmdutil.ExitCode(err, &out, &out); code != cmdutil.ExitConfig || !strings.Contains(err.Error(), "must be between 1 and 1048576") {
		t.Fatalf("got %v (exit %d), want a config error", err, code)
	}
}

func TestList(t *testing.T) {
	var out bytes.Buffer
	if err := RunList(context.Background(), ListOptions{}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CartPole-v1", "mlp", "random", "discrete", "TextFrozenLake-v0", "Countdown-v0", "Arithmetic-v0", "QA-v0", "single_turn", "countdown_score"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("list lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := ParseList([]string{"extra", "--bogus"}); err == nil {
		t.Error("list took an unknown flag")
	}
}
