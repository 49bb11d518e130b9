package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/cli"
	"github.com/agenttrainer/agenttrainer/trainer/control"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// waitUntil polls cond until it holds or a generous deadline passes (the
// machine may be busy; nothing here is timed).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Defect 1: a headless training whose terminal closes (SIGHUP: tmux
// kill-session, a dropped SSH login) ends as SIGTERM ends it: a checkpoint,
// its socket removed, exit 130; attach then says it can be resumed, and
// resuming works.
func TestHangupKeepsACheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a training process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	dir := filepath.Join(runs, "hup")
	cmd := exec.Command(exe, "train", "--run-dir", dir, "trainer.runs_dir="+runs, "ppo.total_timesteps=100000000", "trainer.save_freq=1000000")
	cmd.Env = append(os.Environ(), "AGENTTRAINER_RUN_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	waitUntil(t, "a few iterations", func() bool {
		ms, _ := runstore.ReadMetrics(dir)
		return len(ms) >= 3
	})
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the training did not end after SIGHUP:\n%s", out.String())
	}
	if code != 130 {
		t.Errorf("exit %d after SIGHUP, want 130 (interrupted):\n%s", code, out.String())
	}
	if cks, _ := runstore.Checkpoints(filepath.Join(dir, runstore.CheckpointsDir)); len(cks) == 0 {
		t.Errorf("no checkpoint after SIGHUP:\n%s", out.String())
	}
	for _, f := range []string{control.SocketFile, control.InfoFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s left behind", f)
		}
	}
	code, _, stderr := runCLI("attach", dir)
	if code != 2 || !strings.Contains(stderr, "is not running") || !strings.Contains(stderr, "agenttrainer train --resume "+dir) {
		t.Errorf("attach to the ended run: exit %d\n%s", code, stderr)
	}
}

// Defect 14 and item 4: attach to a directory that is not there says so
// (not "--resume"); to a run that ended without a checkpoint, that it
// cannot be resumed.
func TestAttachToNothing(t *testing.T) {
	code, _, stderr := runCLI("attach", "/nonexistent")
	if code != 2 || !strings.Contains(stderr, "/nonexistent does not exist") || strings.Contains(stderr, "--resume") {
		t.Errorf("attach /nonexistent: exit %d\n%s", code, stderr)
	}
	runs := t.TempDir()
	code, out, stderr := runCLI("train", "--quiet", "trainer.runs_dir="+runs, "ppo.total_timesteps=1024", "trainer.save_freq=1000000")
	if code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	dir := regexp.MustCompile(`run directory: (\S+)`).FindStringSubmatch(out)[1]
	if err := os.RemoveAll(filepath.Join(dir, runstore.CheckpointsDir)); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI("attach", dir)
	if code != 2 || !strings.Contains(stderr, "wrote no checkpoint, so it cannot be resumed") {
		t.Errorf("attach to a run without a checkpoint: exit %d\n%s", code, stderr)
	}
	code, _, stderr = runCLI("attach", runs)
	if code != 2 || !strings.Contains(stderr, "holds no run") {
		t.Errorf("attach to the runs directory itself: exit %d\n%s", code, stderr)
	}
}

// Defect 13: eval --render into a pipe writes plain frames, one after
// another, with no escape sequences; defects 28 and 30: one episode is one
// episode, and what it was played on reads as words.
func TestEvalRenderIntoAPipe(t *testing.T) {
	runs := t.TempDir()
	code, out, stderr := runCLI("train", "--quiet", "trainer.runs_dir="+runs, "ppo.total_timesteps=1024")
	if code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	dir := regexp.MustCompile(`run directory: (\S+)`).FindStringSubmatch(out)[1]
	code, out, stderr = runCLI("eval", dir, "--render", "--episodes", "1", "--fps", "1000")
	if code != 0 {
		t.Fatalf("eval: exit %d\n%s", code, stderr)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape sequences written into a pipe: %q", out[:min(len(out), 200)])
	}
	if n := strings.Count(out, "episode 1/1"); n < 2 {
		t.Errorf("%d frames, want one per step", n)
	}
	if !strings.Contains(out, ": 1 episode, return") || !strings.Contains(out, "on the environment as configured") {
		t.Errorf("the result line:\n%s", out[strings.LastIndex(out, "CartPole"):])
	}
}

// Defect 14: headless attach to a paused run says it is paused at once,
// and shows the run's recent log kept by the trainer.
func TestHeadlessAttachToAPausedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a background training process")
	}
	t.Setenv("AGENTTRAINER_RUN_MAIN", "1")
	runs := t.TempDir()
	code, out, stderr := runCLI("train", "--detach", "trainer.runs_dir="+runs, "ppo.total_timesteps=100000000")
	if code != 0 {
		t.Fatalf("detach: exit %d: %s", code, stderr)
	}
	dir := regexp.MustCompile(`run directory: (\S+)`).FindStringSubmatch(out)[1]
	c, err := control.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Stopped, the run writes its last checkpoint on the way out: wait
		// for the process to end (its lock free) before the temporary
		// directory goes, or its removal races the checkpoint.
		c.Stop()
		c.Close()
		waitUntil(t, "the run to end", func() bool { return runstore.CheckFree(dir) == nil })
	}()
	c.Pause()
	waitUntil(t, "the pause", c.Paused)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errb bytes.Buffer
		done <- cli.Main(ctx, []string{"attach", dir}, pw, &errb)
		pw.Close()
	}()
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte("paused (resume")) {
		n, err := pr.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("attach ended before saying the run is paused:\n%s", got)
		}
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if code := <-done; code != 0 {
		t.Errorf("attach exit %d", code)
	}
	text := string(got)
	if !strings.Contains(text, "attached to "+dir+": CartPole-v1 · mlp, paused") {
		t.Errorf("no state line:\n%s", text)
	}
}

// Defect 31: the help texts name their placeholders as such, and sweep
// takes --runs-dir as every other command does.
func TestHelpTexts(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"eval", "--help"}, []string{"-episodes N", "-tasks SET"}, []string{"-episodes episodes", "  -tasks val\n"}},
		{[]string{"export", "--help"}, []string{"the only format there is"}, []string{"so the default"}},
		{[]string{"sweep", "--help"}, []string{"-runs-dir dir"}, nil},
	} {
		code, out, stderr := runCLI(tc.args...)
		text := out + stderr
		if code != 0 {
			t.Errorf("%v: exit %d", tc.args, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%v lacks %q:\n%s", tc.args, w, text)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(text, n) {
				t.Errorf("%v says %q:\n%s", tc.args, n, text)
			}
		}
	}
}
