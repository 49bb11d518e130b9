package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Run directories written by writeTwoRuns, newest first as the browser
// lists them.
var (
	newerRun = filepath.Join("runs", "20240103-101500-CartPole-v1-mlp")
	olderRun = filepath.Join("runs", "20240102-030405-CartPole-v1-mlp")
)

// liveHarness is a harness on writeTwoRuns' runs where the newer one is
// training in another process.
func liveHarness(t *testing.T, w, h int, opts func(*Options, *fakeHost)) (*harness, *fakeHost) {
	t.Helper()
	t.Chdir(t.TempDir())
	writeTwoRuns(t)
	hs := newHarnessWith(t, w, h, func(o *Options, f *fakeHost) {
		f.live[newerRun] = true
		if opts != nil {
			opts(o, f)
		}
	})
	return hs, hs.host
}

func TestRunsLiveGolden(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		name := fmt.Sprintf("runs-live-%dx%d", size[0], size[1])
		t.Run(name, func(t *testing.T) {
			hs, _ := liveHarness(t, size[0], size[1], nil)
			hs.press("4")
			golden(t, name, hs.screenView())
		})
	}
}

// TestRunsLiveProbeIsACommand: the browser dials nothing in Update or View;
// the probe runs in the listing's tea.Cmd.
func TestRunsLiveProbeIsACommand(t *testing.T) {
	hs, fl := liveHarness(t, 120, 40, nil)
	_, cmd := hs.m.Update(keyMsg("4"))
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
	hs.press("4", "a")
	if len(fl.attached) != 1 || fl.attached[0] != newerRun {
		t.Fatalf("attached to %v, want [%s]", fl.attached, newerRun)
	}
	m := hs.m
	if m.active != scrDashboard {
		t.Fatalf("screen = %v, want the dashboard", m.active)
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
	// A run attached to, not started here, is left training by q, without
	// a question (defect 7).
	hs.press("q")
	if !hs.quit || !m.Result().Detached || len(tr.Calls()) != 0 {
		t.Errorf("quit %v, detached %v, trainer calls %v", hs.quit, m.Result().Detached, tr.Calls())
	}
}

// TestRunsAttachRacesStartupLook: a attaches to a run that start-up's look
// for background runs (findBackground) also attaches to; on a loaded
// machine either dial may answer first. Whichever does, the run is watched
// once and a opens its dashboard (the runs browser stayed, after
// "attaching…", when the look answered first).
func TestRunsAttachRacesStartupLook(t *testing.T) {
	for _, tt := range []struct {
		name        string
		lookAnswers func(hs *harness, fl *fakeHost, look tea.Cmd) // around the press of a
	}{
		{"the look answers first", func(hs *harness, fl *fakeHost, look tea.Cmd) {
			fl.beforeAttach = func(string) {
				fl.beforeAttach = nil
				hs.run(look) // while a's dial is under way
			}
			hs.press("a")
		}},
		{"a answers first", func(hs *harness, fl *fakeHost, look tea.Cmd) {
			hs.press("a")
			hs.run(look)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hs, fl := liveHarness(t, 120, 40, nil)
			hs.press("4")
			fl.background = []string{newerRun}
			look := hs.m.findBackground() // start-up's, still dialling
			tt.lookAnswers(hs, fl, look)
			m := hs.m
			if len(fl.attached) != 2 {
				t.Fatalf("attached to %v, want %s by the look and by a", fl.attached, newerRun)
			}
			if m.active != scrDashboard || m.starting {
				t.Errorf("screen %v, starting %v; want the dashboard:\n%s", m.active, m.starting, hs.view())
			}
			if len(m.runs.runs) != 1 || m.cur() == nil || m.cur().info.RunDir != newerRun {
				t.Fatalf("%d runs, want %s once", len(m.runs.runs), newerRun)
			}
			if len(fl.closed) != 1 || fl.closed[0] != newerRun {
				t.Errorf("closed %v, want the second link to %s", fl.closed, newerRun)
			}
			if v := hs.view(); strings.Contains(v, "attaching…") || !strings.Contains(v, newerRun) {
				t.Errorf("the dashboard does not show the run:\n%s", v)
			}
		})
	}
}

func TestRunsAttachRefusals(t *testing.T) {
	t.Run("not live", func(t *testing.T) {
		hs, fl := liveHarness(t, 120, 40, nil)
		hs.press("4", "down", "a")
		if len(fl.attached) != 0 || hs.m.active != scrRuns {
			t.Fatalf("attached to %v, screen %v", fl.attached, hs.m.active)
		}
		if v := hs.view(); !strings.Contains(v, "not training now; r resumes it from its latest checkpoint") {
			t.Errorf("no explanation:\n%s", v)
		}
		hs.press("up")
		if v := hs.view(); strings.Contains(v, "not training now") {
			t.Errorf("the explanation outlives the next key:\n%s", v)
		}
	})
	t.Run("attach fails", func(t *testing.T) {
		hs, fl := liveHarness(t, 120, 40, nil)
		fl.attachErr = errors.New("the training in runs/x (pid 7) is not running any more")
		hs.press("4", "a")
		if hs.m.active != scrRuns || len(hs.m.runs.runs) != 0 || hs.m.starting {
			t.Fatalf("screen %v, runs %d, starting %v", hs.m.active, len(hs.m.runs.runs), hs.m.starting)
		}
		if v := hs.view(); !strings.Contains(v, "cannot attach: the training in runs/x (pid 7) is not running") {
			t.Errorf("no error shown:\n%s", v)
		}
	})
	t.Run("a run trains inside the app", func(t *testing.T) {
		hs, fl := liveHarness(t, 120, 40, nil) // Start trains "in process", Detachable is false
		training(hs, 10)
		hs.press("4", "a") // a second run, beside the first
		if len(fl.attached) != 1 || hs.m.active != scrDashboard || len(hs.m.runs.runs) != 2 {
			t.Fatalf("attached to %v, screen %v, %d runs", fl.attached, hs.m.active, len(hs.m.runs.runs))
		}
		if hs.m.runs.runs[0].t != hs.fake || !hs.m.runs.runs[0].active() {
			t.Error("the run trained inside the app was lost")
		}
	})
	t.Run("several attached runs", func(t *testing.T) {
		hs, fl := liveHarness(t, 120, 40, func(_ *Options, f *fakeHost) { f.detachable = true })
		fl.set(olderRun, true)
		hs.press("4", "a") // the newer run
		first := hs.m.runs.focus
		hs.press("4", "down", "a")
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
		hs.press("4", "down", "a")
		if len(fl.attached) != 2 || hs.m.active != scrDashboard || hs.m.cur().info.RunDir != olderRun {
			t.Errorf("attached again: %v, screen %v", fl.attached, hs.m.active)
		}
	})
}

// TestRunsLookAgain: while the list shows, the browser looks again for new
// runs and for trainings that start or end, from a command; a finished run
// is not read again.
func TestRunsLookAgain(t *testing.T) {
	hs, fl := liveHarness(t, 120, 40, nil)
	hs.press("4", "down") // cursor on the older run
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
