package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestExitCodes: what each kind of outcome exits with, and where its words
// go: help on stdout with 0, usage and config errors on stderr with 2,
// interruptions 130.
func TestExitCodes(t *testing.T) {
	tmp := t.TempDir()
	empty := filepath.Join(tmp, "empty")
	os.Mkdir(empty, 0o755)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String() // nothing listens there once closed
	ln.Close()
	type tc struct {
		args         []string
		code         int
		stdout       string // in stdout ("" : stdout empty)
		stderr       string // in stderr ("" : stderr empty)
		ctxCancelled bool
	}
	tests := []tc{
		{args: []string{"--help"}, code: 0, stdout: "Usage:\n  agenttrainer [--config FILE]"},
		{args: []string{"-h"}, code: 0, stdout: "agenttrainer train "},
		{args: []string{"help"}, code: 0, stdout: "agenttrainer serve "},
		{args: []string{"--version"}, code: 0, stdout: "agenttrainer "},
		{args: []string{"trian"}, code: 2, stderr: "agenttrainer: unknown command \"trian\"\n\nagenttrainer trains"},
		{args: []string{"--bogus"}, code: 2, stderr: "flag provided but not defined: -bogus\nUsage: agenttrainer  [--config FILE]"},
		{args: []string{"train", "--bogus"}, code: 2, stderr: "flag provided but not defined: -bogus\nUsage: agenttrainer train"},
		{args: []string{"train", "--quiet=maybe"}, code: 2, stderr: "invalid boolean value"},
		{args: []string{"train", "ppo.learnig_rate=1e-3", "trainer.runs_dir=" + filepath.Join(tmp, "r")}, code: 2, stderr: "agenttrainer: ppo.learnig_rate: unknown key; did you mean ppo.learning_rate?"},
		{args: []string{"config", "ppo.num_minibatches=0"}, code: 2, stderr: "must be between 1 and 1048576"},
		{args: []string{"train", "env.id=Arithmetic-v0", "algorithm.adv_estimator=gae", "critic.cliprange_value=-1", "trainer.runs_dir=" + filepath.Join(tmp, "r")}, code: 2, stderr: "agenttrainer: critic.cliprange_value: must be between 0 and 1000, got -1"},
		// A mistake in env.args is the config's; a server that refuses is the world's.
		{args: []string{"train", "env.id=remote", `env.args.adress="` + closedPort + `"`, "trainer.runs_dir=" + filepath.Join(tmp, "r")}, code: 2, stderr: "did you mean address?"},
		{args: []string{"train", "env.id=remote", `env.args.address="` + closedPort + `"`, "trainer.runs_dir=" + filepath.Join(tmp, "r")}, code: 1, stderr: "connection refused"},
		{args: []string{"config", "--config", filepath.Join(tmp, "missing.toml")}, code: 2, stderr: "cannot read config file"},
		{args: []string{"eval"}, code: 2, stderr: "agenttrainer: eval takes one run directory"},
		{args: []string{"eval", empty}, code: 2, stderr: "agenttrainer: "},
		{args: []string{"export", empty}, code: 2, stderr: "is not a run directory with metrics"},
		{args: []string{"export"}, code: 2, stderr: "usage: agenttrainer export RUN_DIR [--out FILE]"},
		{args: []string{"export", empty, "--csv"}, code: 2, stderr: "is not a run directory with metrics"},
		{args: []string{"data"}, code: 2, stderr: "agenttrainer: data needs what to write: frozenlake, tasks or demos\nUsage: agenttrainer data frozenlake"},
		{args: []string{"data", "--no-such-flag"}, code: 2, stderr: "agenttrainer: data takes no flag --no-such-flag before what to write (frozenlake, tasks or demos)\nUsage: agenttrainer data frozenlake"},
		{args: []string{"data", "frozenlake", "--out", filepath.Join(tmp, "x.txt")}, code: 2, stderr: "name the file .jsonl or .csv"},
		{args: []string{"attach", "--runs-dir", empty}, code: 2, stderr: "no live training under"},
		{args: []string{"attach", "a", "b"}, code: 2, stderr: "attach takes one run directory"},
		{args: []string{"ps", "--runs-dir", empty}, code: 0, stdout: "no live training under"},
		{args: []string{"bench", "--runs", "0"}, code: 2, stderr: "--runs must be at least 1, got 0"},
		{args: []string{"serve", "--ssh", "2222"}, code: 2, stderr: "want HOST:PORT"},
		{args: []string{"list"}, code: 0, stdout: "CartPole-v1"},
		{args: []string{"train", "--quiet", "--run-dir", filepath.Join(tmp, "stopped")}, code: 130, stdout: "stopped after 0 iterations", ctxCancelled: true},
	}
	// Every command's --help (and -h) prints its usage on stdout and exits 0.
	for _, c := range commands() {
		tests = append(tests,
			tc{args: []string{c.name, "--help"}, code: 0, stdout: "Usage: agenttrainer " + c.name},
			tc{args: []string{c.name, "-h"}, code: 0, stdout: "Usage: agenttrainer " + c.name})
	}
	tests = append(tests, tc{args: []string{"data", "frozenlake", "--help"}, code: 0, stdout: "Usage: agenttrainer data frozenlake --n N"},
		tc{args: []string{"--help", "--config", "x"}, code: 0, stdout: "Usage:"})
	for _, tc := range tests {
		ctx := context.Background()
		if tc.ctxCancelled {
			ctx = cancelled
		}
		code, stdout, stderr := runCLI(ctx, tc.args...)
		ok := code == tc.code
		if tc.stdout == "" {
			ok = ok && stdout == ""
		} else {
			ok = ok && strings.Contains(stdout, tc.stdout)
		}
		if tc.stderr == "" {
			ok = ok && stderr == ""
		} else {
			ok = ok && strings.Contains(stderr, tc.stderr)
		}
		if !ok {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, cut(stdout), cut(stderr), tc.code, tc.stdout, tc.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "r")); !os.IsNotExist(err) {
		t.Error("a config error left a runs directory behind")
	}
}

func cut(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// TestUsageListsEveryCommand: the root help names every command of the table.
func TestUsageListsEveryCommand(t *testing.T) {
	u := usage()
	for _, c := range commands() {
		if !strings.Contains(u, "agenttrainer "+c.name+" ") {
			t.Errorf("usage lacks %s:\n%s", c.name, u)
		}
	}
}
