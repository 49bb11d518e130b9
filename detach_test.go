package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/cli"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/control"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// TestDetachAttachEditStop detaches a training, lists it, watches it from
// a second process view, edits a live key over the socket, stops it, and
// checks that metrics.jsonl has every iteration once.
func TestDetachAttachEditStop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a background training process")
	}
	t.Setenv("AGENTTRAINER_RUN_MAIN", "1") // the detached child is this binary running main
	runs := t.TempDir()
	code, out, stderr := runCLI("train", "--detach", "trainer.runs_dir="+runs, "ppo.total_timesteps=100000000", "trainer.save_freq=20")
	if code != 0 {
		t.Fatalf("detach: exit %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`run directory: (\S+)`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "agenttrainer attach") {
		t.Fatalf("detach printed:\n%s", out)
	}
	dir := m[1]
	stopped := false
	defer func() {
		if !stopped { // never leave a training behind
			if c, err := control.Dial(dir); err == nil {
				c.Stop()
				c.Close()
			}
		}
	}()

	if code, out, _ := runCLI("ps", "--runs-dir", runs); code != 0 || !strings.Contains(out, dir) || !strings.Contains(out, "running") {
		t.Fatalf("ps: exit %d\n%s", code, out)
	}

	// Watch headless until a progress line comes; interrupting leaves the
	// training going.
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe() // attach writes from two goroutines; the pipe takes one write at a time
	progressed, watchedText := make(chan struct{}), make(chan string, 1)
	go func() {
		var b []byte
		buf := make([]byte, 4096)
		for seen := false; ; {
			n, err := pr.Read(buf)
			b = append(b, buf[:n]...)
			if !seen && bytes.Contains(b, []byte("steps/s")) {
				seen = true
				close(progressed)
			}
			if err != nil {
				break
			}
		}
		watchedText <- string(b)
	}()
	var errBuf bytes.Buffer
	attached := make(chan int, 1)
	go func() {
		code := cli.Main(ctx, []string{"attach", dir}, pw, &errBuf)
		pw.Close()
		attached <- code
	}()
	select {
	case <-progressed:
	case <-time.After(60 * time.Second):
	}
	cancel()
	code = <-attached
	watched, errb := <-watchedText, errBuf.String()
	if code != 0 || !strings.Contains(watched, "steps/s") || !strings.Contains(watched, "detached; the training in") {
		t.Fatalf("attach: exit %d\n%s%s", code, watched, errb)
	}

	c, err := control.Dial(dir)
	if err != nil {
		t.Fatalf("the training did not survive its watcher: %v", err)
	}
	defer c.Close()
	events, unsubscribe := c.Subscribe(1024)
	defer unsubscribe()
	if err := c.Edit("ppo.ent_coef", "0.02"); err != nil {
		t.Fatal(err)
	}
	// An edit is applied at the start of the next iteration; a stop that
	// lands first ends the run without it, so stop once it is recorded.
	for wait := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(dir, runstore.EditsFile)); len(bytes.TrimSpace(b)) > 0 {
			break
		}
		if time.Now().After(wait) {
			t.Fatal("the edit was not applied within 30 s")
		}
	}
	c.Stop()
	deadline := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case e, ok := <-events:
			if !ok || e.Kind == trainer.EventDone {
				if ok && e.State != trainer.StateStopped {
					t.Fatalf("run ended %s: %v", e.State, e.Err)
				}
				done = true
			}
		case <-deadline:
			t.Fatal("the run did not stop")
		}
	}
	stopped = true
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, control.InfoFile)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the training process did not clean up its control socket")
		}
	}

	recs, err := runstore.ReadMetrics(dir)
	if err != nil || len(recs) == 0 {
		t.Fatalf("metrics: %v", err)
	}
	for i, r := range recs {
		if r.Iter != i+1 {
			t.Fatalf("metrics record %d has iter %d: a gap or a repeat", i, r.Iter)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, runstore.EditsFile))
	var edit trainer.Edit
	if err := json.Unmarshal(bytes.TrimSpace(b), &edit); err != nil || edit.Key != "ppo.ent_coef" || edit.Value != "0.02" {
		t.Fatalf("edits.jsonl: %q (%v)", b, err)
	}
	t.Logf("%d iterations, edit at step %d, stopped cleanly", len(recs), edit.Step)
}

// TestDetachIntoANewRunDir detaches a training into a --run-dir that does
// not exist yet: the directory is made, the run trains there to the end.
func TestDetachIntoANewRunDir(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a background training process")
	}
	t.Setenv("AGENTTRAINER_RUN_MAIN", "1")
	dir := filepath.Join(t.TempDir(), "new", "run")
	code, out, stderr := runCLI("train", "--detach", "--run-dir", dir, "ppo.total_timesteps=2048")
	if code != 0 {
		t.Fatalf("detach into %s: exit %d: %s%s", dir, code, out, stderr)
	}
	defer func() {
		if c, err := control.Dial(dir); err == nil {
			c.Stop()
			c.Close()
		}
	}()
	if !strings.Contains(out, dir) {
		t.Fatalf("detach did not name %s:\n%s", dir, out)
	}
	// The training ends by itself; wait for its last metrics record, with
	// no clock: the run's end closes its socket.
	for deadline := time.Now().Add(5 * time.Minute); ; {
		c, err := control.Dial(dir)
		if err == nil {
			c.Close()
		} else if _, err := os.Stat(filepath.Join(dir, runstore.MetricsFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the detached training in %s did not finish", dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dir, runstore.MetricsFile)); err != nil {
		t.Fatalf("no metrics in %s: %v", dir, err)
	}
}
