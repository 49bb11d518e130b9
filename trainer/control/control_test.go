package control

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// startRun builds a long CartPole run in dir, serves it and starts it.
func startRun(t *testing.T, dir string) (*trainer.Trainer, *Server, func() trainer.Summary) {
	t.Helper()
	cfg := config.Default()
	if err := cfg.ApplyArgs([]string{"ppo.total_timesteps=50000000", "trainer.device=cpu", "trainer.save_freq=0", "trainer.threads=1"}); err != nil {
		t.Fatal(err)
	}
	tr, err := trainer.New(cfg, trainer.Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Serve(tr, dir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var sum trainer.Summary
	go func() {
		sum, _ = tr.Run(context.Background())
		close(done)
	}()
	wait := func() trainer.Summary {
		<-done
		return sum
	}
	t.Cleanup(func() {
		tr.Stop()
		wait()
		srv.Close()
	})
	return tr, srv, wait
}

func next(t *testing.T, events <-chan trainer.Event, kind trainer.EventKind, match func(trainer.Event) bool) trainer.Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("stream ended while waiting for event kind %d", kind)
			}
			if e.Kind == kind && (match == nil || match(e)) {
				return e
			}
		case <-deadline:
			t.Fatalf("no event of kind %d within 30 s", kind)
		}
	}
}

func TestSteerARunOverTheSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, srv, wait := startRun(t, dir)
	if st, err := os.Stat(srv.Socket()); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v, mode %v (want 0600)", srv.Socket(), err, st.Mode().Perm())
	}
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	events, unsubscribe := c.Subscribe(256)
	defer unsubscribe()
	m := next(t, events, trainer.EventMetrics, nil)
	if c.Info().EnvID != "CartPole-v1" || c.Config().PPO.TotalTimesteps != 50000000 {
		t.Fatalf("info %+v", c.Info())
	}
	// A second viewer sees the same run.
	c2, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	events2, unsubscribe2 := c2.Subscribe(256)
	next(t, events2, trainer.EventMetrics, func(e trainer.Event) bool { return e.Metrics.Iter > m.Metrics.Iter })
	unsubscribe2()
	c2.Close()

	if err := c.Edit("ppo.ent_coef", "0.03"); err != nil {
		t.Fatal(err)
	}
	ed := next(t, events, trainer.EventEdit, nil)
	if ed.Edit.Key != "ppo.ent_coef" || ed.Edit.Value != "0.03" {
		t.Fatalf("edit event %+v", ed.Edit)
	}
	for _, bad := range []struct{ key, val, want string }{
		{"env.num_envs", "8", "applies only when a run starts"},
		{"ppo.gamma", "7", "must be between 0 and 1"},
	} {
		err := c.Edit(bad.key, bad.val)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !config.IsConfigError(err) {
			t.Errorf("Edit(%s=%s) = %v", bad.key, bad.val, err)
		}
	}
	c.Pause()
	next(t, events, trainer.EventState, func(e trainer.Event) bool { return e.State == trainer.StatePaused })
	if !c.Paused() {
		t.Fatal("Paused() is false after pausing")
	}
	c.Resume()
	next(t, events, trainer.EventState, func(e trainer.Event) bool { return e.State == trainer.StateRunning && e.Message == "resumed" })
	c.Stop()
	end := next(t, events, trainer.EventDone, nil)
	if end.State != trainer.StateStopped {
		t.Fatalf("run ended %s", end.State)
	}
	if sum := wait(); sum.State != trainer.StateStopped {
		t.Fatalf("summary %+v", sum)
	}
	srv.Close()
	if _, err := os.Stat(filepath.Join(dir, InfoFile)); !os.IsNotExist(err) {
		t.Fatal("control.json left behind after the server closed")
	}
	if _, err := Dial(dir); err == nil || !strings.Contains(err.Error(), "no live training") {
		t.Fatalf("dial after the end: %v", err)
	}
}

// A viewer that subscribes and never reads must not slow the training.
func TestStalledViewerDoesNotBlock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	tr, srv, _ := startRun(t, dir)
	conn, err := net.Dial("unix", srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte(`{"op":"subscribe","buffer":16}` + "\n")) // and never read again
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	events, unsubscribe := c.Subscribe(64)
	defer unsubscribe()
	first := next(t, events, trainer.EventMetrics, nil)
	later := next(t, events, trainer.EventMetrics, func(e trainer.Event) bool { return e.Metrics.Iter > first.Metrics.Iter+200 })
	if later.Metrics.Iter <= first.Metrics.Iter {
		t.Fatal("training did not advance")
	}
	_ = tr
}

func TestRefusesOtherUsers(t *testing.T) {
	if err := checkUID(1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := checkUID(1001, 1000); !errors.Is(err, errOtherUser) {
		t.Fatalf("another uid: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	_, srv, _ := startRun(t, dir)
	srv.sameUser = func(net.Conn) error { return checkUID(4242, os.Getuid()) } // as if another user connected
	_, err := Dial(dir)
	if err == nil || !strings.Contains(err.Error(), "refused: the training belongs to another user") {
		t.Fatalf("dial as another user: %v", err)
	}
}

func TestLongRunDirUsesAShortSocketPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("a-very-long-directory-name-", 5), "run")
	_, srv, _ := startRun(t, dir)
	if filepath.Dir(srv.Socket()) == dir || len(srv.Socket()) > maxSocketPath {
		t.Fatalf("socket at %s", srv.Socket())
	}
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// When the training process vanishes, viewers learn it, with the way to
// continue the run.
func TestVanishedTrainingEndsTheStream(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, srv, _ := startRun(t, dir)
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := c.Subscribe(64)
	next(t, events, trainer.EventMetrics, nil)
	srv.Close() // the connections drop as if the process had died
	end := next(t, events, trainer.EventDone, nil)
	if end.State != trainer.StateFailed || !strings.Contains(end.Message, "--resume") {
		t.Fatalf("end %+v", end)
	}
}

// A stream the training cuts while it trains on (it drops a viewer too
// slow to read, on a loaded machine) is taken up again: the viewer sees
// the run go on, not a run it lost.
func TestCutStreamIsResubscribed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, srv, _ := startRun(t, dir)
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	events, unsubscribe := c.Subscribe(64)
	defer unsubscribe()
	first := next(t, events, trainer.EventMetrics, nil)
	srv.mu.Lock()
	cut := len(srv.conns)
	for conn := range srv.conns { // as a write that timed out does
		conn.Close()
	}
	srv.mu.Unlock()
	if cut == 0 {
		t.Fatal("no connection to cut")
	}
	later := next(t, events, trainer.EventMetrics, func(e trainer.Event) bool {
		return e.Metrics.Iter > first.Metrics.Iter+50
	})
	if later.Metrics.Iter <= first.Metrics.Iter {
		t.Fatal("training did not advance")
	}
}

// Viewers cannot make a training hold unbounded memory: connections are
// limited, and a refused viewer is told why; the limit frees up as viewers
// leave.
func TestViewersAreBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, srv, _ := startRun(t, dir)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for len(held) < MaxConnections {
		c, err := net.Dial("unix", srv.Socket())
		if err != nil {
			t.Fatal(err)
		}
		// A subscriber that never reads its events.
		if _, err := c.Write([]byte(`{"op":"subscribe","buffer":1000000}` + "\n")); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The server has counted every held connection once the last one's
	// subscription is acknowledged.
	if _, err := bufio.NewReader(held[len(held)-1]).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(dir); err == nil || !strings.Contains(err.Error(), "too many connections") {
		t.Fatalf("dial past the limit: %v", err)
	}
	held[0].Close()
	held = held[1:]
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := Dial(dir)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room after a viewer left: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
