package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/internal/sweep"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// writeSweep writes a sweep directory as `agenttrainer sweep` leaves it:
// sweep.toml, sweep.jsonl, and three trials' run directories whose returns
// end at different heights (trial-001 best, trial-002 failed early).
func writeSweep(t *testing.T, runs string) string {
	t.Helper()
	dir := filepath.Join(runs, "lr-sweep")
	spec, err := sweep.ParseSpecTOML("name = \"lr-sweep\"\nseeds = [1]\n[params.ppo]\nlearning_rate = [0.001, 0.003, 0.01]\n", "spec.toml")
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
	for i, tc := range []struct {
		lr    float64
		scale float64
		iters int
		state string
	}{{0.001, 0.5, 30, sweep.Done}, {0.003, 1, 30, sweep.Done}, {0.01, 0.2, 4, sweep.Failed}} {
		id := []string{"trial-000", "trial-001", "trial-002"}[i]
		lr := tc.lr
		writeRun(t, dir, id, func(c *config.Config) { c.PPO.LearningRate = lr }, tc.iters, tc.scale, nil)
		rec := sweep.Record{Trial: id, Dir: filepath.Join(dir, id), Seed: 1, Params: map[string]any{"ppo.learning_rate": lr},
			State: tc.state, Steps: int64(tc.iters) * 512}
		if tc.state == sweep.Failed {
			rec.Reason = "exit status 1: a NaN loss"
		}
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
