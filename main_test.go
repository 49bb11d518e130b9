package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestTrainConfigErrorsExit2AndWriteNothing(t *testing.T) {
	runs := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"ppo.learnig_rate=1e-3"}, "did you mean ppo.learning_rate?"},
		{[]string{"ppo.gamma=2"}, "ppo.gamma: must be between 0 and 1, got 2"},
		{[]string{"env.id=CartPol-v1"}, `unknown environment "CartPol-v1"; did you mean CartPole-v1?`},
		{[]string{"--config", filepath.Join(runs, "missing.toml")}, "cannot read config file"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
	}
	for _, tc := range tests {
		args := append([]string{"train", "trainer.runs_dir=" + filepath.Join(runs, "r")}, tc.args...)
		code, _, stderr := runCLI(args...)
		if code != exitConfig || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(runs, "r")); !os.IsNotExist(err) {
		t.Fatal("a config error left a runs directory behind")
	}
}

func TestTrainHeadless(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runCLI("train", "--run-dir", dir, "ppo.total_timesteps=2048", "trainer.seed=3")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if lines[0] != "run directory: "+dir || !strings.HasPrefix(lines[len(lines)-1], "done: 2048 steps") {
		t.Fatalf("output:\n%s", stdout)
	}
	if !strings.Contains(stdout, "ep_return_mean") || !strings.Contains(stdout, "steps/s") {
		t.Fatalf("no progress line:\n%s", stdout)
	}
	for _, f := range []string{"config.toml", "metrics.jsonl", "checkpoints/latest"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory lacks %s", f)
		}
	}
	// --quiet prints the start and the end only.
	code, stdout, _ = runCLI("train", "--quiet", "--run-dir", filepath.Join(t.TempDir(), "q"), "ppo.total_timesteps=2048")
	if code != exitOK || strings.Count(stdout, "\n") != 3 {
		t.Fatalf("--quiet printed:\n%s", stdout)
	}
}

func TestConfigCommand(t *testing.T) {
	code, stdout, _ := runCLI("config", "ppo.learning_rate=3e-4", "agent.hidden=[128,128]")
	if code != exitOK || !strings.Contains(stdout, "learning_rate = 0.0003") || !strings.Contains(stdout, "hidden = [128, 128]") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := runCLI("config", "ppo.num_minibatches=0"); code != exitConfig || !strings.Contains(stderr, "must be greater than 0") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func TestHelpAndList(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"train", "--help"}, {"config", "--help"}, {"list", "--help"}} {
		code, stdout, stderr := runCLI(args...)
		if code != exitOK || !strings.Contains(stdout+stderr, "Usage") {
			t.Errorf("%v: exit %d, output %q", args, code, stdout+stderr)
		}
	}
	code, stdout, _ := runCLI("list")
	if code != exitOK || !strings.Contains(stdout, "CartPole-v1") || !strings.Contains(stdout, "mlp") || !strings.Contains(stdout, "random") {
		t.Fatalf("list: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := runCLI("trian"); code != exitConfig || !strings.Contains(stderr, `unknown command "trian"`) {
		t.Fatalf("unknown command: exit %d %q", code, stderr)
	}
}
