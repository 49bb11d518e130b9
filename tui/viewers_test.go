package tui

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Every viewer sees the truth (issue 28, item 3).

// Defect 5: a run paused by another app shows as paused when attached to
// (not "starting"), and its p resumes it; a p that finds the trainer in
// the state asked for settles at once instead of waiting for an event
// that will not come.
func TestAttachedPausedRun(t *testing.T) {
	hs, fl := liveHarness(t, 120, 40, func(_ *Options, f *fakeHost) { f.paused[newerRun] = true })
	hs.press("4", "a")
	r := hs.m.cur()
	if r.state != stPaused || !strings.Contains(hs.view(), "‖ paused") {
		t.Fatalf("attached to a paused run: state %s\n%s", r.state, hs.view())
	}
	hs.press("p")
	if calls := fl.trainers[newerRun].Calls(); !slices.Equal(calls, []string{"resume"}) || r.state != stResuming {
		t.Fatalf("p on the paused run: calls %v, state %s", calls, r.state)
	}
	// Another viewer paused it meanwhile (no state event reaches this one):
	// p here finds it paused already and says so at once.
	tr := fl.trainers[newerRun]
	tr.publish(trainer.Event{Kind: trainer.EventState, State: trainer.StateRunning, Message: "resumed"})
	hs.pump()
	tr.setPaused(true)
	hs.press("p")
	if r.state != stPaused {
		t.Errorf("p on a run another viewer paused: state %s, want paused at once", r.state)
	}
}

// Defect 7: q in an app that started one run and watches another asks
// about the one it started only, and leaves the other training.
func TestQuitCountsOnlyOwnRuns(t *testing.T) {
	hs, fl := liveHarness(t, 120, 40, func(_ *Options, f *fakeHost) { f.detachable = true })
	training(hs, 10)
	hs.press("4", "a") // the newer run, started by another app
	hs.press("q")
	v := hs.view()
	if !strings.Contains(v, "Stop the training and quit (the runs you attached to go on)?") || strings.Contains(v, "2 trainings") {
		t.Fatalf("the quit question:\n%s", v)
	}
	hs.press("y")
	if calls := fl.trainers[newerRun].Calls(); len(calls) != 0 {
		t.Errorf("the attached run was asked to %v", calls)
	}
	if calls := hs.fake.Calls(); !slices.Equal(calls, []string{"stop"}) {
		t.Errorf("the app's own run: calls %v", calls)
	}
	hs.fake.finish(trainer.StateStopped)
	hs.pump()
	if !hs.quit || !hs.m.Result().Detached {
		t.Errorf("quit %v, detached %v: the attached run goes on", hs.quit, hs.m.Result().Detached)
	}
}

// Defect 30: the quit question says a paused run stays paused.
func TestQuitPausedRunStaysPaused(t *testing.T) {
	hs := newHarnessWith(t, 120, 40, func(_ *Options, f *fakeHost) { f.detachable = true })
	training(hs, 10)
	hs.press("p")
	hs.fake.publish(trainer.Event{Kind: trainer.EventState, State: trainer.StatePaused, Message: "paused"})
	hs.pump()
	hs.press("q")
	if v := hs.view(); !strings.Contains(v, "d: detach, it stays paused") {
		t.Errorf("the question for a paused run:\n%s", v)
	}
}

// Defects 22 and 26: a run deleted in the runs browser leaves the
// dashboard's list; a run attached again shows the log the trainer kept
// (the replay a subscription begins with).
func TestDeletedRunLeavesTheDashboard(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTwoRuns(t)
	hs := newHarness(t, 120, 40)
	training(hs, 10)
	dir := hs.fake.info.RunDir
	writeRun(t, "runs", filepath.Base(dir), nil, 10, 1, nil) // its directory, as the trainer left it
	hs.fake.finish(trainer.StateDone)
	hs.pump()
	hs.press("4")
	rb := hs.m.rb()
	for i, run := range rb.runs {
		if run.Dir == dir {
			rb.cursor = i
		}
	}
	hs.press("d", "y")
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("%s not deleted: %s", dir, rb.problem)
	}
	if len(hs.m.runs.runs) != 0 {
		t.Errorf("the deleted run is still in the dashboard's list: %d runs", len(hs.m.runs.runs))
	}
	hs.press("3")
	if v := hs.view(); !strings.Contains(v, "No training yet") {
		t.Errorf("the dashboard still shows it:\n%s", v)
	}
}

func TestReattachShowsTheKeptLog(t *testing.T) {
	hs, fl := liveHarness(t, 120, 40, nil)
	hs.press("4", "a")
	tr := fl.trainers[newerRun]
	// What a trainer's subscription begins with: its recent log.
	tr.publish(trainer.Event{Kind: trainer.EventStarted, Time: epoch, Message: newerRun},
		trainer.Event{Kind: trainer.EventLog, Time: epoch, Message: "training CartPole-v1 with mlp on cpu for 61440 steps"},
		trainer.Event{Kind: trainer.EventCheckpoint, Time: epoch, Message: "checkpoint saved: step-30720.safetensors"})
	hs.pump()
	if v := hs.view(); !strings.Contains(v, "training CartPole-v1 with mlp on cpu") || !strings.Contains(v, "step-30720") {
		t.Errorf("the log pane is empty after attaching:\n%s", v)
	}
}

// Defect 25: paused runs take no core: a third run on two cores keeps its
// threads while one of the others is paused.
func TestPausedRunsDoNotThrottle(t *testing.T) {
	hs := newHarnessWith(t, 120, 40, func(o *Options, _ *fakeHost) { o.Cores = 2 })
	training(hs, 10)
	hs.press("p")
	hs.fake.publish(trainer.Event{Kind: trainer.EventState, State: trainer.StatePaused, Message: "paused"})
	hs.pump()
	hs.press("n", "down", "s") // a second run (MountainCar-v0): 2 runs, one paused
	hs.press("n", "down", "s") // a third (Pendulum-v1): 3 runs on 2 cores, one paused
	started := hs.host.started
	if len(started) != 3 || started[2].Trainer.Threads == 1 {
		t.Fatalf("threads of the third run: %d (%d started)", started[len(started)-1].Trainer.Threads, len(started))
	}
	hs.press("n", "up", "up", "up", "s") // a fourth (Acrobot-v1): 3 training on 2 cores
	if started := hs.host.started; started[3].Trainer.Threads != 1 {
		t.Errorf("the fourth run was not throttled")
	}
	if logs := hs.m.cur().logs; len(logs) == 0 || !strings.Contains(logs[0], "3 runs on 2 cores") {
		t.Errorf("the log does not say why: %q", logs)
	}
}

// Defect 23: a zoom into one run's steps does not carry over to a run
// that has just started.
func TestZoomDoesNotCarryOver(t *testing.T) {
	hs := newHarness(t, 120, 40)
	training(hs, 100)
	hs.press("z", "z", "z", "Z", "type:40k-50k", "enter")
	if hs.m.chart.xr == nil {
		t.Fatal("the range did not apply")
	}
	hs.press("n", "down", "s")
	if hs.m.chart.xr != nil || hs.m.chart.zoom != 0 {
		t.Errorf("the zoom carried over: %+v", hs.m.chart)
	}
	hs.fake.publish(metricsEvents(1, 3)...)
	hs.pump()
	if v := hs.view(); strings.Contains(v, "no value yet") || strings.Contains(v, "40k-50k") {
		t.Errorf("the new run's chart:\n%s", v)
	}
}

// A notice line says when a run ends, until the next key.
func TestRunEndNotice(t *testing.T) {
	hs := newHarness(t, 120, 40)
	training(hs, 10)
	hs.press("1")
	hs.fake.finish(trainer.StateDone)
	hs.pump()
	v := hs.view()
	if !strings.Contains(v, "✓ #1 CartPole-v1·mlp done at 5,120 steps, return") {
		t.Fatalf("no notice:\n%s", v)
	}
	hs.press("down")
	if strings.Contains(hs.view(), "✓ #1") {
		t.Error("the notice outlives a key")
	}
	// Unanswered, it goes when its time is up.
	hs.press("3", "n", "down", "s")
	hs.fake.finish(trainer.StateFailed)
	hs.pump()
	if !strings.Contains(hs.view(), "✗ #2 MountainCar-v0·mlp failed") || hs.noticeDone == nil {
		t.Fatalf("no notice of the failure:\n%s", hs.view())
	}
	hs.send(*hs.noticeDone)
	if strings.Contains(hs.view(), "✗ #2") {
		t.Error("the notice outlives its time")
	}
}

// Item 5: a stopped run resumes from the runs browser (r) when it has a
// checkpoint, and says why not when it has none; its dashboard opens.
func TestResumeFromTheRunsBrowser(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTwoRuns(t)
	if err := os.WriteFile(filepath.Join(olderRun, runstore.CheckpointsDir, "step-61440.safetensors"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, 120, 40)
	hs.press("4", "r") // the newer run: no checkpoint
	if v := hs.view(); !strings.Contains(v, "cannot resume: it has no checkpoint") || len(hs.host.resumed) != 0 {
		t.Fatalf("resume without a checkpoint:\n%s", v)
	}
	hs.press("down", "r")
	if len(hs.host.resumed) != 1 || hs.host.resumed[0] != olderRun || hs.m.active != scrDashboard {
		t.Fatalf("resumed %v, screen %s", hs.host.resumed, hs.m.active)
	}
	if r := hs.m.cur(); r.attached || r.info.RunDir != olderRun {
		t.Errorf("the resumed run: attached %v (it is the app's own), dir %s", r.attached, r.info.RunDir)
	}
}

// Defect 10: a run whose total is not a multiple of its batch ended done
// at its last whole iteration: the browser says done, not 57.3k/60k.
func TestRunDoneShortOfItsTotal(t *testing.T) {
	t.Chdir(t.TempDir())
	writeRun(t, "runs", "20240102-030405-CartPole-v1-mlp", func(c *config.Config) {
		c.PPO.TotalTimesteps = 60000 // batch 512: 117 iterations, 59,904 steps
	}, 117, 1, nil)
	writeRun(t, "runs", "20240103-030405-CartPole-v1-mlp", func(c *config.Config) {
		c.PPO.TotalTimesteps = 60000
	}, 50, 1, nil) // stopped by hand
	hs := newHarness(t, 120, 40)
	hs.press("4")
	rb := hs.m.rb()
	states := map[string]string{}
	for _, run := range rb.runs {
		states[filepath.Base(run.Dir)] = rb.runState(run)
	}
	if states["20240102-030405-CartPole-v1-mlp"] != "done" || states["20240103-030405-CartPole-v1-mlp"] != "stopped" {
		t.Errorf("states %v", states)
	}
	v := hs.view()
	if strings.Contains(v, "59.9k/60k") || !strings.Contains(v, "25.6k/60k") {
		t.Errorf("the steps column:\n%s", v)
	}
}

// Defect 9: the figure beside a sparkline is the last record's value, not
// the mean of the last bucket.
func TestRunFiguresAreTheLastValues(t *testing.T) {
	t.Chdir(t.TempDir())
	writeRun(t, "runs", "20240102-030405-CartPole-v1-mlp", nil, 1200, 1, nil) // buckets of two records
	hs := newHarness(t, 120, 40)
	hs.press("4", "enter")
	want := num(float64(fakeMetrics(1200).Entropy))
	for _, line := range strings.Split(hs.view(), "\n") {
		if strings.HasPrefix(line, "entropy") {
			if !strings.Contains(line, " "+want+" ") {
				t.Errorf("entropy figure %q, want the last value %s", line, want)
			}
			return
		}
	}
	t.Errorf("no entropy line:\n%s", hs.view())
}
