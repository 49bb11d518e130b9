package train

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
)

// train runs the command as the program does and returns its exit code
// and output.
func train(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	o, err := Parse(args)
	if err == nil {
		err = Run(context.Background(), o, &out, &errb)
	}
	return cmdutil.ExitCode(err, &out, &errb), out.String(), errb.String()
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
		{[]string{"--resume", runs, "--run-dir", runs}, "drop --config and --run-dir"},
	}
	for _, tc := range tests {
		args := append([]string{"trainer.runs_dir=" + filepath.Join(runs, "r")}, tc.args...)
		code, _, stderr := train(args...)
		if code != cmdutil.ExitConfig || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(runs, "r")); !os.IsNotExist(err) {
		t.Fatal("a config error left a runs directory behind")
	}
}

func TestTrainHeadless(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := train("--run-dir", dir, "ppo.total_timesteps=2048", "trainer.seed=3")
	if code != cmdutil.ExitOK {
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
	// A directory that holds a run is not overwritten.
	if code, _, stderr := train("--run-dir", dir, "ppo.total_timesteps=2048"); code != cmdutil.ExitConfig || !strings.Contains(stderr, "already holds a run") {
		t.Errorf("second run into %s: exit %d, %q", dir, code, stderr)
	}
	// --quiet prints the start and the end only.
	code, stdout, _ = train("--quiet", "--run-dir", filepath.Join(t.TempDir(), "q"), "ppo.total_timesteps=2048")
	if code != cmdutil.ExitOK || strings.Count(stdout, "\n") != 3 {
		t.Fatalf("--quiet printed:\n%s", stdout)
	}
}

// TestTrainInterrupted: a training whose context ends exits 130 and keeps
// what was done.
func TestTrainInterrupted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o, err := Parse([]string{"--quiet", "--run-dir", dir, "ppo.total_timesteps=100000000"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, &out, &errb) }()
	for deadline := 0; deadline < 600; deadline++ { // until an iteration is on disk
		if b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl")); len(b) > 0 {
			break
		}
		<-afterMillis(50)
	}
	cancel()
	err = <-done
	if code := cmdutil.ExitCode(err, &out, &errb); code != cmdutil.ExitInterrupted || !strings.Contains(out.String(), "stopped after") {
		t.Fatalf("exit %d (%v)\n%s%s", code, err, out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoints", "latest")); err != nil {
		t.Errorf("no checkpoint kept: %v", err)
	}
}

func afterMillis(n int) <-chan time.Time { return time.After(time.Duration(n) * time.Millisecond) }
