package spawn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
