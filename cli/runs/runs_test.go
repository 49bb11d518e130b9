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
	out, err = run(t, "--runs-dir", root)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[2], "wide net") ||
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

// Text from run files reaches the terminal cleaned: an escape-laden
// meta.json, env id and directory name print as escapes, and the
// commands that set names, notes and tags refuse control characters.
func TestRunsEscapes(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "20240102-030405-CartPole-v1-mlp")
	os.MkdirAll(d, 0o755)
	cfg := config.Default()
	if err := runstore.WriteConfig(d, cfg); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(d, runstore.ConfigFile))
	os.WriteFile(filepath.Join(d, runstore.ConfigFile), bytes.Replace(b, []byte(`"CartPole-v1"`), []byte(`"CartPole\u001b]0;env\u0007"`), 1), 0o644)
	os.WriteFile(filepath.Join(d, runstore.MetaFile), []byte(`{"name":"n\u001b]0;title\u0007","note":"\u001b]52;c;ZXZpbA==\u0007","tags":["t\u001b[2J"]}`), 0o644)
	evil := filepath.Join(root, "20240103-030405-x\x1b]0;dir\a")
	os.MkdirAll(evil, 0o755)
	runstore.WriteConfig(evil, cfg)
	var out, errOut bytes.Buffer
	o, _ := Parse([]string{"--runs-dir", root})
	if err := Run(context.Background(), o, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	all := out.String() + errOut.String()
	if strings.ContainsAny(all, "\x1b\a") {
		t.Fatalf("raw escapes reached the output:\n%q", all)
	}
	for _, want := range []string{`n\x1b]0;title\x07`, `\x1b]52;c;ZXZpbA==\x07`, `t\x1b[2J`, `CartPole\x1b]0;env\x07`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the listing lacks %s:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errOut.String(), `not listed`) || !strings.Contains(errOut.String(), `x\x1b]0;dir\x07`) {
		t.Errorf("the directory with control characters is not named safely: %q", errOut.String())
	}
	for _, args := range [][]string{{"note", d, "a\x1b]0;x\a"}, {"name", d, "\x1b[2J"}, {"tag", d, "t\x07"}} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "control character") {
			t.Errorf("runs %s accepted %q: %v", args[0], args[2], err)
		}
	}
}
