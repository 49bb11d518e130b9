package runs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	o, err := Parse(args)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	err = Run(context.Background(), o, &out, &out)
	return out.String(), err
}

func TestRunsCommand(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for _, name := range []string{"20240102-030405-CartPole-v1-mlp", "20240103-030405-Acrobot-v1-mlp"} {
		d := filepath.Join(root, name)
		os.MkdirAll(d, 0o755)
		cfg := config.Default()
		if strings.Contains(name, "Acrobot") {
			cfg.Env.ID = "Acrobot-v1"
		}
		if err := runstore.WriteConfig(d, cfg); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, runstore.MetricsFile), []byte(`{"iter":1,"step":512,"time_s":1,"ep_return_mean":21.5}`+"\n"), 0o644)
		dirs = append(dirs, d)
	}
	if _, err := run(t, "tag", dirs[0], "baseline", "sweep"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "note", dirs[0], "the", "good", "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "name", dirs[0], "wide net"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "untag", dirs[0], "sweep")
	if err != nil || !strings.Contains(out, `name "wide net", tags [baseline], note "the good one"`) {
		t.Fatalf("%v: %s", err, out)
	}
	// A sweep's trial is listed too, named by its sweep.
	trial := filepath.Join(root, "lr-sweep", "trial-000")
	os.MkdirAll(trial, 0o755)
	os.WriteFile(filepath.Join(root, "lr-sweep", "sweep.toml"), []byte("name = \"lr-sweep\"\n"), 0o644)
	if err := runstore.WriteConfig(trial, config.Default()); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "--runs-dir", root)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "lr-sweep/trial-000") {
		t.Errorf("the sweep's trial is not listed:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[2], "wide net") ||
		!strings.Contains(lines[2], "baseline") || !strings.Contains(lines[2], "the good one") || !strings.Contains(lines[2], "21.5") ||
		!strings.Contains(lines[1], "Acrobot-v1") {
		t.Errorf("list:\n%s", out)
	}
	out, _ = run(t, "--runs-dir", root, "--tag", "baseline")
	if strings.Count(out, "\n") != 2 || !strings.Contains(out, "wide net") {
		t.Errorf("--tag baseline:\n%s", out)
	}
	out, _ = run(t, "--runs-dir", root, "--tag", "nope")
	if !strings.Contains(out, `no run under `+root+` is tagged "nope"`) {
		t.Errorf("--tag nope:\n%s", out)
	}
	var usage *cmdutil.UsageError
	for _, args := range [][]string{{"tag", dirs[0]}, {"frob", dirs[0]}, {"note", root, "x"}, {"tag", dirs[0], "two words"}} {
		if _, err := run(t, args...); !errors.As(err, &usage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
