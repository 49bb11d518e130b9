package spawn

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/control"
)

func TestTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	os.WriteFile(p, []byte("a\nb\nc\nd\n"), 0o644)
	if got := tail(p, 2); got != "c\nd" {
		t.Errorf("tail 2 = %q", got)
	}
	if got := tail(p, 10); got != "a\nb\nc\nd" {
		t.Errorf("tail 10 = %q", got)
	}
}

// TestNothingLive: no runs directory, or runs without a live training, list
// nothing; attaching to a directory without a training fails.
func TestNothingLive(t *testing.T) {
	dir := t.TempDir()
	if live := LiveRuns(filepath.Join(dir, "nope")); len(live) != 0 {
		t.Errorf("live runs in a missing directory: %v", live)
	}
	os.MkdirAll(filepath.Join(dir, "runs", "20260101-000000-CartPole-v1-mlp"), 0o755)
	if live := LiveRuns(filepath.Join(dir, "runs")); len(live) != 0 {
		t.Errorf("live runs without a training: %v", live)
	}
	if _, err := Attach(dir, false); err == nil {
		t.Error("attached to a directory without a training")
	}
	if _, err := Start(filepath.Join(dir, "missing", "run"), nil, true, nil, false); err == nil || !strings.Contains(err.Error(), LogFile) {
		t.Errorf("start in a missing directory: %v", err)
	}
}

// A training serves its socket before it writes its config: ps lists it
// from the first moment (under load that moment lasts).
func TestLiveBeforeTheConfigIsWritten(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "20260101-000000-CartPole-v1-mlp")
	cfg := config.Default()
	tr, err := trainer.New(cfg, trainer.Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	srv, err := control.Serve(tr, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	live := LiveRuns(runs)
	if len(live) != 1 || live[0].Dir != dir {
		t.Fatalf("live runs %+v, want %s", live, dir)
	}
}

// The sweeps screen finds a sweep's process by the mark it leaves, stops it
// with SIGTERM, and is not fooled by a mark left by a process that died
// (its pid may belong to another program now).
func TestSweepMark(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	dir := filepath.Join(t.TempDir(), "lr-sweep")
	var h Host
	if h.SweepRunning(dir) {
		t.Fatal("a sweep without a mark runs")
	}
	unmark, err := MarkSweep(dir) // this test binary: no sweep
	if err != nil {
		t.Fatal(err)
	}
	if h.SweepRunning(dir) {
		t.Error("a mark naming a process that is not a sweep counts")
	}
	unmark()
	// A process named like a sweep, marked.
	cmd := exec.Command("bash", "-c", "exec -a agenttrainer-sweep sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for { // until bash has become the named process
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		if strings.Contains(string(b), "sweep") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(dir, SweepPIDFile), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !h.SweepRunning(dir) {
		t.Fatal("the marked sweep is not seen running")
	}
	if err := h.ResumeSweep(dir); err == nil {
		t.Error("resuming a running sweep was not refused")
	}
	if err := h.StopSweep(dir); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the sweep did not get SIGTERM")
	}
	if h.SweepRunning(dir) {
		t.Error("a stopped sweep runs")
	}
	if err := h.StopSweep(dir); err == nil || !strings.Contains(err.Error(), "is not running") {
		t.Errorf("stopping a stopped sweep: %v", err)
	}
}
