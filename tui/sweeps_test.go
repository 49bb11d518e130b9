package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/runs/sweep"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// trialSpec is a trial writeSweepOf writes: its learning rate, how high
// its return climbs, how long it ran, its state and why.
type trialSpec struct {
	lr, scale     float64
	iters         int
	state, reason string
}

// writeSweepOf writes a sweep directory as `agenttrainer sweep` leaves it:
// sweep.toml (a grid over the trials' learning rates, one seed),
// sweep.jsonl, and each trial's run directory. It returns the directory.
func writeSweepOf(t *testing.T, runs, name string, trials []trialSpec) string {
	t.Helper()
	dir := filepath.Join(runs, name)
	lrs := make([]string, len(trials))
	for i, tr := range trials {
		lrs[i] = strconv.FormatFloat(tr.lr, 'g', -1, 64)
	}
	spec, err := sweep.ParseSpecTOML("name = \""+name+"\"\nseeds = [1]\n[params.ppo]\nlearning_rate = ["+strings.Join(lrs, ", ")+"]\n", "spec.toml")
	if err == nil {
		err = spec.Check(config.Default(), "spec.toml", 2) // resolved, as the sweep writes it
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sweep.SpecFile), []byte(spec.TOML()), 0o644); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i, tr := range trials {
		id, lr := fmt.Sprintf("trial-%03d", i), tr.lr
		writeRun(t, dir, id, func(c *config.Config) { c.PPO.LearningRate = lr }, tr.iters, tr.scale, nil)
		rec := sweep.Record{Trial: id, Dir: filepath.Join(dir, id), Seed: 1, Params: map[string]any{"ppo.learning_rate": lr},
			State: tr.state, Reason: tr.reason, Steps: int64(tr.iters) * 512}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, sweep.ResultsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeSweep writes runs/lr-sweep: three trials whose returns end at
// different heights (trial-001 best, trial-002 failed early).
func writeSweep(t *testing.T, runs string) string {
	t.Helper()
	return writeSweepOf(t, runs, "lr-sweep", []trialSpec{{0.001, 0.5, 30, sweep.Done, ""}, {0.003, 1, 30, sweep.Done, ""},
		{0.01, 0.2, 4, sweep.Failed, "exit status 1: a NaN loss"}})
}

// writeSweepTrials writes a sweep whose trials have the given states (and
// reasons, when not nil), the learning rates 1.37e-4 apart.
func writeSweepTrials(t *testing.T, runs, name string, states []string, reasons []string) string {
	t.Helper()
	trials := make([]trialSpec, len(states))
	for i, st := range states {
		trials[i] = trialSpec{lr: 0.0001 * float64(i+1) * 1.37, scale: 0.2 + 0.05*float64(i), iters: 10 + i, state: st}
		trials[i].lr, _ = strconv.ParseFloat(strconv.FormatFloat(trials[i].lr, 'g', -1, 64), 64)
		if reasons != nil {
			trials[i].reason = reasons[i]
		}
	}
	return writeSweepOf(t, runs, name, trials)
}

// The sweeps screen lists sweeps, shows one's trials best first, overlays
// their curves, puts a trial's configuration into the editor, explains a
// failed trial, and checks a spec before starting it.
func TestSweepsScreen(t *testing.T) {
	t.Chdir(t.TempDir())
	writeSweep(t, "runs")
	hs := newHarness(t, 120, 40)
	hs.press("5")
	v := hs.view()
	for _, want := range []string{"[5 sweeps]", "Sweeps in runs · 1", "lr-sweep", "grid", "3", "249.3 ep_return_mean ↑"} {
		if !strings.Contains(v, want) {
			t.Errorf("the list lacks %q:\n%s", want, v)
		}
	}
	hs.press("enter")
	v = hs.view()
	i0, i1, i2 := strings.Index(v, "trial-000"), strings.Index(v, "trial-001"), strings.Index(v, "trial-002")
	if i1 < 0 || i0 < i1 || i2 < i0 {
		t.Errorf("trials are not best first (001, 000, 002):\n%s", v)
	}
	for _, want := range []string{"learning_rate", "0.003", "failed", "done"} {
		if !strings.Contains(v, want) {
			t.Errorf("the trials lack %q:\n%s", want, v)
		}
	}
	hs.press("G") // the failed trial says why
	if v := hs.view(); !strings.Contains(v, "trial-002: exit status 1: a NaN loss") {
		t.Errorf("no reason for the failed trial:\n%s", v)
	}
	hs.press("g", "e") // the best trial's configuration into the editor
	if hs.m.active != scrEditor || hs.m.draft().cfg.PPO.LearningRate != 0.003 {
		t.Fatalf("screen %s, learning rate %v after e on the best trial", hs.m.active, hs.m.draft().cfg.PPO.LearningRate)
	}
	if v := hs.view(); !strings.Contains(v, "from trial-001 of lr-sweep") {
		t.Errorf("the editor does not say where its config came from:\n%s", v)
	}
	hs.press("5", "c") // the trials' curves overlaid
	if hs.m.active != scrRuns || hs.m.rb().mode != runsCompare || len(hs.m.rb().loaded) != 3 {
		t.Fatalf("screen %s, mode %d, %d runs loaded after c", hs.m.active, hs.m.rb().mode, len(hs.m.rb().loaded))
	}
	if v := hs.view(); !strings.Contains(v, "Comparing 3 runs") || !strings.Contains(v, "ppo.learning_rate") {
		t.Errorf("no overlay of the trials:\n%s", v)
	}
	hs.press("esc", "5", "esc", "n", "type:nope.toml", "enter")
	if v := hs.view(); !strings.Contains(v, "not started") || !strings.Contains(v, "nope.toml") || len(hs.host.sweepCalls) != 0 {
		t.Errorf("a missing spec is not refused before starting (started %v):\n%s", hs.host.sweepCalls, v)
	}
	if err := os.WriteFile("spec.toml", []byte("seeds = [1]\n[params.ppo]\nent_coef = [0.0, 0.01]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hs.press("ctrl+u", "type:spec.toml", "enter")
	if v := hs.view(); len(hs.host.sweepCalls) != 1 || hs.host.sweepCalls[0] != "start spec.toml in runs" || !strings.Contains(v, "started the sweep of spec.toml") {
		t.Errorf("started %v:\n%s", hs.host.sweepCalls, v)
	}
}

func TestSweepsGolden(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Chdir(t.TempDir())
			writeSweep(t, "runs")
			hs := newHarness(t, size[0], size[1])
			hs.press("5")
			golden(t, fmt.Sprintf("sweeps-%dx%d", size[0], size[1]), hs.screenView())
			hs.press("enter")
			golden(t, fmt.Sprintf("sweeps-trials-%dx%d", size[0], size[1]), hs.screenView())
		})
	}
}

func TestRunsDirOf(t *testing.T) {
	t.Chdir(t.TempDir())
	writeSweep(t, "runs")
	for _, tc := range []struct{ run, want string }{
		{"runs/lr-sweep/trial-001", "runs"},
		{"runs/20240102-030405-CartPole-v1-mlp", "runs"},
		{"elsewhere/run", "elsewhere"},
	} {
		if got := runsDirOf(tc.run); got != tc.want {
			t.Errorf("runsDirOf(%q) = %q, want %q", tc.run, got, tc.want)
		}
	}
}

// Defect 6: the trial list re-sorts as results come in, and the cursor
// stays on its trial (enter, x and e act on the trial the user chose); x
// asks first.
func TestSweepCursorFollowsItsTrial(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := writeSweepTrials(t, "runs", "lr", []string{sweep.Running, sweep.Running, sweep.Running}, nil)
	hs := newHarnessWith(t, 120, 40, func(_ *Options, f *fakeHost) {
		for i := range 3 {
			f.live[filepath.Join("runs", "lr", fmt.Sprintf("trial-%03d", i))] = true
		}
	})
	hs.press("5", "enter")
	sw := hs.m.sw()
	cur := func() string { return hs.m.sw().current().trials[sw.trials.cursor].rec.Trial }
	first := cur()
	hs.press("down")
	chosen := cur()
	if chosen == first {
		t.Fatal("down did not move")
	}
	// trial-000 overtakes every other: it is now first, and the list moves.
	writeRun(t, dir, "trial-000", nil, 40, 3, nil)
	hs.send(*hs.sweepTick)
	if got := cur(); got != chosen {
		t.Fatalf("after the re-sort the cursor is on %s, was on %s", got, chosen)
	}
	hs.press("x")
	if v := hs.view(); !strings.Contains(v, "Stop "+chosen+" of lr?") {
		t.Fatalf("x does not ask:\n%s", v)
	}
	hs.press("n")
	if v := hs.view(); strings.Contains(v, "Stop ") {
		t.Errorf("n does not cancel:\n%s", v)
	}
}

// Defect 24: esc from a trial's curves goes back to the trial list.
func TestEscFromTrialCurvesGoesBack(t *testing.T) {
	t.Chdir(t.TempDir())
	writeSweep(t, "runs")
	hs := newHarness(t, 120, 40)
	hs.press("5", "enter", "down", "enter")
	if hs.m.active != scrRuns || hs.m.rb().mode != runsOne {
		t.Fatalf("enter on a finished trial: screen %s, mode %d", hs.m.active, hs.m.rb().mode)
	}
	hs.press("esc")
	if hs.m.active != scrSweeps || hs.m.sw().open == "" {
		t.Fatalf("esc went to %s (trials open: %v)", hs.m.active, hs.m.sw().open != "")
	}
	hs.press("c", "esc") // the overlay, likewise
	if hs.m.active != scrSweeps || hs.m.sw().open == "" {
		t.Fatalf("esc from the overlay went to %s", hs.m.active)
	}
	hs.press("4") // the runs browser reached by its tab shows its list
	if hs.m.rb().mode != runsList {
		t.Errorf("the runs tab opened on mode %d", hs.m.rb().mode)
	}
}

// Item 5: a whole sweep stops, resumes and goes from the sweeps tab, each
// asked first where it cannot be undone; defect 30: a trial stopped by
// hand is not counted as cut by early stopping; defect 31: an empty spec
// prompt says what it wants.
func TestSweepWholeActions(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := writeSweepTrials(t, "runs", "lr", []string{sweep.Done, sweep.Stopped, sweep.Stopped, sweep.Running},
		[]string{"", "median rule: below the median at 25%", handStopped, ""})
	hs := newHarnessWith(t, 120, 40, func(_ *Options, f *fakeHost) { f.sweeps[filepath.Join("runs", "lr")] = true })
	hs.press("5")
	v := hs.view()
	if !strings.Contains(v, "CUT STOP") || !regexp.MustCompile(`lr\s+grid\s+4\s+1\s+1\s+1\s+1\s+0`).MatchString(v) {
		t.Errorf("counts (done 1, run 1, cut 1, stop 1, fail 0):\n%s", v)
	}
	hs.press("r")
	if v := hs.view(); !strings.Contains(v, "is running already") {
		t.Errorf("resume of a running sweep:\n%s", v)
	}
	hs.press("x")
	if v := hs.view(); !strings.Contains(v, "Stop the sweep lr?") || len(hs.host.sweepCalls) != 0 {
		t.Fatalf("x does not ask first:\n%s", v)
	}
	hs.press("y")
	if !slices.Equal(hs.host.sweepCalls, []string{"stop " + dir}) {
		t.Fatalf("sweep calls %v", hs.host.sweepCalls)
	}
	hs.press("ctrl+r")
	hs.press("r")
	if !slices.Equal(hs.host.sweepCalls, []string{"stop " + dir, "resume " + dir}) {
		t.Fatalf("sweep calls %v", hs.host.sweepCalls)
	}
	hs.host.sweeps[dir] = false
	hs.press("ctrl+r", "d")
	if v := hs.view(); !strings.Contains(v, "Delete the sweep lr and its 4 trials") {
		t.Fatalf("d does not ask first:\n%s", v)
	}
	hs.press("n")
	if _, err := os.Stat(dir); err != nil {
		t.Fatal("n deleted it")
	}
	hs.press("d", "y")
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("not deleted: %s", hs.m.sw().note)
	}
	hs.press("n", "enter")
	if v := hs.view(); !strings.Contains(v, "type the path of a sweep spec") {
		t.Errorf("an empty spec says nothing:\n%s", v)
	}
}

// Item 5: a sweep's trials are in the runs browser, named by their sweep.
func TestTrialsInTheRunsBrowser(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTwoRuns(t)
	writeSweep(t, "runs")
	hs := newHarness(t, 120, 40)
	hs.press("4")
	if n := len(hs.m.rb().runs); n != 5 {
		t.Fatalf("%d runs listed, want 2 and 3 trials", n)
	}
	if v := hs.view(); !strings.Contains(v, "lr-sweep/trial-001") {
		t.Errorf("the trials are not named by their sweep:\n%s", v)
	}
}

// Defect 18: sixteen trials overlaid keep their learning rates readable,
// sixteen colours, and sixteen end labels that do not collide.
func TestSixteenTrialsOverlaid(t *testing.T) {
	t.Chdir(t.TempDir())
	states := make([]string, 16)
	for i := range states {
		states[i] = sweep.Done
	}
	writeSweepTrials(t, "runs", "lr16", states, nil)
	hs := newHarness(t, 120, 40)
	hs.press("5", "enter", "c")
	v := hs.view()
	if strings.Contains(v, "0.00…") || !strings.Contains(v, "0.001233") || !strings.Contains(v, "0.002192") || !strings.Contains(v, "more runs") {
		t.Errorf("learning rates cut:\n%s", v)
	}
	labels := regexp.MustCompile(`[⠀-⣿](\d+)`).FindAllStringSubmatch(v, -1)
	seen := map[string]bool{}
	for _, l := range labels {
		seen[l[1]] = true
	}
	for i := 1; i <= 16; i++ {
		if !seen[strconv.Itoa(i)] {
			t.Errorf("end label %d missing or merged into another (labels %v):\n%s", i, labels, v)
			break
		}
	}
	th := defaultTheme(nil)
	colours := map[string]bool{}
	for _, st := range th.Palette {
		colours[fmt.Sprint(st.GetForeground())] = true
	}
	if len(colours) < 16 {
		t.Errorf("%d colours for 16 curves", len(colours))
	}
}
