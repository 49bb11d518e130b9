package spawn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
