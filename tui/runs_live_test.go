package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Run directories written by writeTwoRuns, newest first as the browser
// lists them.
var (
	newerRun = filepath.Join("runs", "20240103-101500-CartPole-v1-mlp")
	olderRun = filepath.Join("runs", "20240102-030405-CartPole-v1-mlp")
)

// fakeLive stands in for the control-socket probe and for attaching.
type fakeLive struct {
	mu       sync.Mutex
	live     map[string]bool
	probes   int
	attached []string
	closed   []string
	err      error
	trainers map[string]*fakeTrainer
}

func newFakeLive(dirs ...string) *fakeLive {
	f := &fakeLive{live: map[string]bool{}, trainers: map[string]*fakeTrainer{}}
	for _, d := range dirs {
		f.live[d] = true
	}
	return f
}

func (f *fakeLive) isLive(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes++
	return f.live[dir]
}

func (f *fakeLive) set(dir string, live bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live[dir] = live
}

func (f *fakeLive) probeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.probes
}

func (f *fakeLive) attach(dir string) (*Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attached = append(f.attached, dir)
	if f.err != nil {
		return nil, f.err
	}
	cfg := config.Default()
	cfg.PPO.TotalTimesteps = 1 << 20
	tr := newFakeTrainer(cfg)
	tr.info.RunDir = dir
	f.trainers[dir] = tr
	return &Link{Trainer: tr, Events: tr.events, Close: func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.closed = append(f.closed, dir)
	}}, nil
}

// liveHarness is a harness on writeTwoRuns' runs where the newer one is
// training in another process.
func liveHarness(t *testing.T, w, h int, opts func(*Options)) (*harness, *fakeLive) {
	t.Helper()
	t.Chdir(t.TempDir())
	writeTwoRuns(t)
	fl := newFakeLive(newerRun)
	hs := newHarnessWith(t, w, h, func(o *Options) {
		o.Live, o.AttachTo = fl.isLive, fl.attach
		if opts != nil {
			opts(o)
		}
	})
	return hs, fl
}

func TestRunsLiveGolden(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		name := fmt.Sprintf("runs-live-%dx%d", size[0], size[1])
		t.Run(name, func(t *testing.T) {
			hs, _ := liveHarness(t, size[0], size[1], nil)
			hs.press("R")
			golden(t, name, hs.view())
		})
	}
}

// TestRunsLiveProbeIsACommand: the browser dials nothing in Update or View;
// the probe runs in the listing's tea.Cmd.
func TestRunsLiveProbeIsACommand(t *testing.T) {
	hs, fl := liveHarness(t, 120, 40, nil)
	_, cmd := hs.m.Update(keyMsg("R"))
	hs.m.View()
	if n := fl.probeCount(); n != 0 {
		t.Fatalf("probed %d runs before the command ran", n)
	}
	hs.run(cmd)
	if n := fl.probeCount(); n != 2 {
		t.Errorf("probed %d runs, want both", n)
	}
	v := hs.view()
	if !strings.Contains(v, "1 training now ◆") || !strings.Contains(v, "▸◆") {
		t.Errorf("the live run is not marked:\n%s", v)
	}
	if !strings.Contains(v, "a attach") {
		t.Errorf("the help line does not show the attach key:\n%s", v)
	}
}

func TestRunsAttachOpensTheDashboard(t *testing.T) {
	hs, fl := liveHarness(t, 120, 40, nil)
	hs.press("R", "a")
	if len(fl.attached) != 1 || fl.attached[0] != newerRun {
		t.Fatalf("attached to %v, want [%s]", fl.attached, newerRun)
	}
	m := hs.m
	if m.active != scrDashboard {
		t.Fatalf("screen = %d, want the dashboard", m.active)
	}
	// As Options.Attach does: its past is read back from the run directory,
	// its present comes from the events.
	if n := m.cur().hist.records; n != 120 {
		t.Errorf("history holds %d records, want the 120 of metrics.jsonl", n)
	}
	tr := fl.trainers[newerRun]
	tr.publish(metricsEvents(121, 125)...)
	hs.pump()
	if m.cur().last.Iter != 125 {
		t.Errorf("last iteration %d, want 125", m.cur().last.Iter)
	}
	v := hs.view()
	if !strings.Contains(v, newerRun) {
		t.Errorf("the dashboard does not name the run:\n%s", v)
	}
	// A run attached to lives in its own process: quitting may leave it.
	hs.press("q")
	if v := hs.view(); !strings.Contains(v, "d: detach") {
		t.Errorf("quitting an attached run does not offer to detach:\n%s", v)
	}
	hs.press("d")
	if !hs.quit || !m.Result().Detached || len(tr.Calls()) != 0 {
		t.Errorf("quit %v, detached %v, trainer calls %v", hs.quit, m.Result().Detached, tr.Calls())
	}
}

func TestRunsAttachRefusals(t *testing.T) {
	t.Run("not live", func(t *testing.T) {
		hs, fl := liveHarness(t, 120, 40, nil)
		hs.press("R", "down", "a")
		if len(fl.attached) != 0 || hs.m.active != scrRuns {
			t.Fatalf("attached to %v, screen %d", fl.attached, hs.m.active)
		}
		if v := hs.view(); !strings.Contains(v, "not training now; `agenttrainer train --resume "+olderRun) {
			t.Errorf("no explanation:\n%s", v)
		}
		hs.press("up")
		if v := hs.view(); strings.Contains(v, "not training now") {
			t.Errorf("the explanation outlives the next key:\n%s", v)
		}
	})
	t.Run("no AttachTo", func(t *testing.T) {
		hs, _ := liveHarness(t, 120, 40, func(o *Options) { o.AttachTo = nil })
		hs.press("R", "a")
		if hs.m.active != scrRuns {
			t.Fatalf("screen = %d", hs.m.active)
		}
		if v := hs.view(); !strings.Contains(v, "this app cannot attach to runs; `agenttrainer attach "+newerRun+"` can") {
			t.Errorf("no explanation:\n%s", v)
		}
	})
	t.Run("attach fails", func(t *testing.T) {
		hs, fl := liveHarness(t, 120, 40, nil)
		fl.err = errors.New("the training in runs/x (pid 7) is not running any more")
		hs.press("R", "a")
		if hs.m.active != scrRuns || len(hs.m.runs.runs) != 0 || hs.m.starting {
			t.Fatalf("screen %d, runs %d, starting %v", hs.m.active, len(hs.m.runs.runs), hs.m.starting)
		}
		if v := hs.view(); !strings.Contains(v, "cannot attach: the training in runs/x (pid 7) is not running") {
			t.Errorf("no error shown:\n%s", v)
		}
	})
	t.Run("a run trains inside the app", func(t *testing.T) {
		hs, fl := liveHarness(t, 120, 40, nil) // Launch trains "in process", Detachable is false
		training(hs, 10)
		hs.press("R", "a") // a second run, beside the first
		if len(fl.attached) != 1 || hs.m.active != scrDashboard || len(hs.m.runs.runs) != 2 {
			t.Fatalf("attached to %v, screen %d, %d runs", fl.attached, hs.m.active, len(hs.m.runs.runs))
		}
		if hs.m.runs.runs[0].t != hs.fake || !hs.m.runs.runs[0].active() {
			t.Error("the run trained inside the app was lost")
		}
	})
	t.Run("several attached runs", func(t *testing.T) {
		hs, fl := liveHarness(t, 120, 40, func(o *Options) { o.Detachable = true })
		fl.set(olderRun, true)
		hs.press("R", "a") // the newer run
		first := hs.m.runs.focus
		hs.press("R", "down", "a")
		if len(fl.attached) != 2 || fl.attached[1] != olderRun || hs.m.runs.focus == first || len(hs.m.runs.runs) != 2 {
			t.Fatalf("attached to %v", fl.attached)
		}
		if len(fl.closed) != 0 {
			t.Errorf("closed %v: both runs stay watched", fl.closed)
		}
		if calls := fl.trainers[newerRun].Calls(); len(calls) != 0 {
			t.Errorf("the first run was steered: %v", calls)
		}
		// ] and [ switch the dashboard between them.
		hs.press("]")
		if hs.m.runs.focus != first {
			t.Errorf("] focused run %d, want %d", hs.m.runs.focus, first)
		}
		// Attaching to a run already watched only shows it.
		hs.press("R", "down", "a")
		if len(fl.attached) != 2 || hs.m.active != scrDashboard || hs.m.cur().info.RunDir != olderRun {
			t.Errorf("attached again: %v, screen %d", fl.attached, hs.m.active)
		}
	})
}

// TestRunsLookAgain: while the list shows, the browser looks again for new
// runs and for trainings that start or end, from a command; a finished run
// is not read again.
func TestRunsLookAgain(t *testing.T) {
	hs, fl := liveHarness(t, 120, 40, nil)
	hs.press("R", "down") // cursor on the older run
	if hs.tick == nil {
		t.Fatal("the browser does not look again")
	}
	// The live run ends; another starts; the finished run's files change
	// (they cannot, but if they did, the cached summary stands).
	fl.set(newerRun, false)
	third := writeRun(t, "runs", "20240104-090000-Acrobot-v1-mlp", func(c *config.Config) { c.Env.ID = "Acrobot-v1" }, 10, 1, nil)
	fl.set(third, true)
	if err := os.WriteFile(filepath.Join(olderRun, runstore.MetricsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	probes := fl.probeCount()
	hs.lookAgain()
	if fl.probeCount() != probes+3 {
		t.Errorf("probed %d runs, want 3", fl.probeCount()-probes)
	}
	r := hs.m.rb()
	if len(r.runs) != 3 || r.runs[0].Dir != third {
		t.Fatalf("runs after looking again: %+v", r.runs)
	}
	if !r.live[third] || r.live[newerRun] {
		t.Errorf("live = %v", r.live)
	}
	if r.runs[r.cursor].Dir != olderRun {
		t.Errorf("the cursor moved to %s", r.runs[r.cursor].Dir)
	}
	if r.runs[2].Steps == 0 {
		t.Errorf("the finished run was read again")
	}
	v := hs.view()
	for _, line := range strings.Split(v, "\n") {
		marked := strings.HasPrefix(line, " ◆") || strings.HasPrefix(line, "▸◆")
		if strings.Contains(line, "Acrobot-v1") != marked && strings.Contains(line, "CartPole-v1") == marked {
			t.Errorf("row %q: live mark %v, want it on the Acrobot run alone", line, marked)
		}
	}
	// Once the browser is left, it stops looking.
	hs.press("esc")
	hs.lookAgain()
	if hs.tick != nil {
		t.Error("the browser still looks again after it was left")
	}
}
