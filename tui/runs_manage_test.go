package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// rowsOf lists the run directories the browser shows, in order.
func rowsOf(r *runsBrowser) []string {
	var out []string
	for _, run := range r.runs {
		out = append(out, filepath.Base(run.Dir))
	}
	return out
}

func threeRuns(t *testing.T) {
	t.Helper()
	writeTwoRuns(t)
	writeRun(t, "runs", "20240104-090000-Acrobot-v1-mlp", func(c *config.Config) {
		c.Env.ID = "Acrobot-v1"
		c.PPO.TotalTimesteps = 1 << 20 // stopped early
	}, 10, 1, nil)
}

func TestRunsFilterAndSort(t *testing.T) {
	t.Chdir(t.TempDir())
	threeRuns(t)
	hs := newHarness(t, 120, 40)
	hs.press("4")
	r := hs.m.rb()
	if len(r.runs) != 3 || len(r.unread) != 0 || r.loading {
		t.Fatalf("runs %v, unread %d, loading %v", rowsOf(r), len(r.unread), r.loading)
	}
	// Filter by env: the root's keys (1–4, q) are typed into it.
	hs.press("/", "type:env:cartpole")
	if !r.Capturing() || len(r.runs) != 2 {
		t.Fatalf("capturing %v, rows %v", r.Capturing(), rowsOf(r))
	}
	hs.press("enter")
	v := hs.view()
	if !strings.Contains(v, `filter "env:cartpole" 2 of 3`) {
		t.Errorf("the header does not show the filter:\n%s", v)
	}
	hs.press("esc") // clears the filter, stays in the browser
	if len(r.runs) != 3 || hs.m.active != scrRuns {
		t.Fatalf("after esc: rows %v, screen %v", rowsOf(r), hs.m.active)
	}
	// Sort: s walks the columns (name, env, agent, steps, best…), S reverses.
	hs.press("s", "s", "s", "s", "s") // best, high first
	if got := rowsOf(r); r.runs[0].Best < r.runs[1].Best || !strings.HasPrefix(got[0], "20240102") {
		t.Errorf("sorted by best: %v", got)
	}
	v = hs.view()
	if !strings.Contains(v, "sort best ↓") || !strings.Contains(v, "BEST↓") {
		t.Errorf("the header does not show the order:\n%s", v)
	}
	hs.press("S")
	if got := rowsOf(r); !strings.HasPrefix(got[2], "20240102") {
		t.Errorf("reversed: %v", got)
	}
	// State: the Acrobot run stopped early; the others are done.
	hs.press("/", "type:state:stopped", "enter")
	if got := rowsOf(r); len(got) != 1 || !strings.Contains(got[0], "Acrobot") {
		t.Errorf("state:stopped: %v", got)
	}
}

func TestRunsTagRenameNote(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTwoRuns(t)
	hs := newHarness(t, 80, 24)
	hs.press("4", "down") // the older run
	hs.press("t", "type:baseline sweep", "enter")
	hs.press("n", "ctrl+u", "type:wide net q1", "enter") // q and 1 are typed, not quit or a screen
	hs.press("e", "type:the good one", "enter")
	if hs.m.active != scrRuns || hs.quit {
		t.Fatalf("screen %v, quit %v", hs.m.active, hs.quit)
	}
	m, err := runstore.ReadMeta(olderRun)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "wide net q1" || strings.Join(m.Tags, ",") != "baseline,sweep" || m.Note != "the good one" {
		t.Errorf("meta.json = %+v", m)
	}
	v := hs.view()
	if !strings.Contains(v, "▸    wide net q1") || !strings.Contains(v, "#baseline #sweep the good one") {
		t.Errorf("the list does not show the name, tags and note:\n%s", v)
	}
	golden(t, "runs-managed-80x24", hs.screenView())
	// The directory keeps its name; the filter finds the run by tag.
	if _, err := os.Stat(olderRun); err != nil {
		t.Fatal(err)
	}
	hs.press("/", "type:tag:sweep", "enter")
	if got := rowsOf(hs.m.rb()); len(got) != 1 || got[0] != filepath.Base(olderRun) {
		t.Errorf("tag:sweep: %v", got)
	}
	// Esc leaves a text field without saving.
	hs.press("esc", "e", "ctrl+u", "type:gone", "esc")
	if m, _ := runstore.ReadMeta(olderRun); m.Note != "the good one" {
		t.Errorf("esc saved the note: %+v", m)
	}
}

func TestRunsDelete(t *testing.T) {
	t.Run("finished run, after yes", func(t *testing.T) {
		hs, _ := liveHarness(t, 120, 40, nil)
		hs.press("4", "down", "d")
		v := hs.view()
		if !strings.Contains(v, "Delete 20240102-030405-CartPole-v1-mlp and all its files?") || !strings.Contains(v, "y delete") {
			t.Fatalf("no confirmation:\n%s", v)
		}
		hs.press("n")
		if _, err := os.Stat(olderRun); err != nil {
			t.Fatalf("n deleted the run: %v", err)
		}
		hs.press("d", "y")
		if _, err := os.Stat(olderRun); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the run is still there: %v", err)
		}
		if r := hs.m.rb(); len(r.runs) != 1 || !strings.Contains(hs.view(), "deleted "+olderRun) {
			t.Errorf("rows %v:\n%s", rowsOf(r), hs.view())
		}
	})
	t.Run("live run (control socket)", func(t *testing.T) {
		hs, _ := liveHarness(t, 120, 40, nil)
		hs.press("4", "d")
		if v := hs.view(); !strings.Contains(v, "not deleted: it is training now") {
			t.Errorf("no refusal:\n%s", v)
		}
		if _, err := os.Stat(newerRun); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("live run (lock held)", func(t *testing.T) {
		hs, _ := liveHarness(t, 120, 40, nil)
		l, err := runstore.Acquire(olderRun)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release()
		hs.press("4", "down", "d", "y")
		if v := hs.view(); !strings.Contains(v, "not deleted: it is training now") {
			t.Errorf("no refusal:\n%s", v)
		}
		if _, err := os.Stat(olderRun); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRunsDetail(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		name := fmt.Sprintf("runs-detail-%dx%d", size[0], size[1])
		t.Run(name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			writeTwoRuns(t)
			ck := filepath.Join(newerRun, runstore.CheckpointsDir)
			for _, step := range []int64{30720, 61440} {
				if _, err := runstore.WriteCheckpoint(ck, step, []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			if err := runstore.Pin(ck, 30720); err != nil {
				t.Fatal(err)
			}
			hs := newHarness(t, size[0], size[1])
			hs.press("4", "i")
			v := hs.view()
			for _, want := range []string{"ppo.ent_coef", "0.05", "(default 0.01)", "step-61440.safetensors  latest",
				"step-30720.safetensors  [pinned]", "ppo.learning_rate: 0.00025 → 0.0001", "SPS"} {
				if !strings.Contains(v, want) {
					t.Errorf("no %q:\n%s", want, v)
				}
			}
			golden(t, name, hs.screenView())
			hs.press("esc")
			if hs.m.rb().mode != runsList {
				t.Error("esc does not go back to the list")
			}
		})
	}
}

// TestRunsListShowsProgress: the list shows as soon as the directory is
// scanned; summaries follow in chunks, with the count in the header.
func TestRunsListShowsProgress(t *testing.T) {
	t.Chdir(t.TempDir())
	for i := range summaryChunk + 8 {
		writeRun(t, "runs", fmt.Sprintf("20240101-%06d-CartPole-v1-mlp", i), nil, 3, 1, nil)
	}
	hs := newHarness(t, 120, 40)
	_, cmd := hs.m.Update(keyMsg("4"))
	hs.run(nil)
	listed := cmd().(addressed).msg.(runsListedMsg) // the scan alone
	r := hs.m.rb()
	more := r.Update(listed)
	if len(r.runs) != summaryChunk+8 || len(r.unread) != summaryChunk+8 {
		t.Fatalf("rows %d, unread %d", len(r.runs), len(r.unread))
	}
	v := hs.view()
	if !strings.Contains(v, fmt.Sprintf("reading 0/%d…", summaryChunk+8)) || !strings.Contains(v, "…        …") {
		t.Errorf("no progress:\n%s", v)
	}
	next := address(scrRuns, r.Update(more().(runsSummarizedMsg)))
	if !strings.Contains(hs.view(), fmt.Sprintf("reading %d/%d…", summaryChunk, summaryChunk+8)) || next == nil {
		t.Errorf("no progress after a chunk:\n%s", hs.view())
	}
	hs.run(next)
	if v := hs.view(); len(r.unread) != 0 || strings.Contains(v, "reading") || r.loading {
		t.Errorf("unread %d:\n%s", len(r.unread), v)
	}
}

// TestDashboardShowsHistoryLoading: an attached run's chart says its past
// is being read instead of drawing the few records that came live.
func TestDashboardShowsHistoryLoading(t *testing.T) {
	hs, _ := liveHarness(t, 120, 40, nil)
	_, cmd := hs.m.Update(keyMsg("4"))
	hs.run(cmd)
	_, cmd = hs.m.Update(keyMsg("a"))
	launched := cmd().(attachRunMsg)
	_, cmd = hs.m.Update(launched)
	msg := cmd().(launchedMsg)
	_, cmd = hs.m.Update(msg)
	_ = cmd // the backfill and the poll, held back
	hs.m.cur().handle(metricsEvents(121, 122))
	v := hs.view()
	if !strings.Contains(v, "reading the run's history…") {
		t.Errorf("no loading sign:\n%s", v)
	}
}
