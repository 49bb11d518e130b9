package tui

import (
	"fmt"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// writeTwoRuns writes two finished runs under ./runs that differ in
// ppo.ent_coef and in how well they learned, one with a live edit.
func writeTwoRuns(t *testing.T) {
	t.Helper()
	writeRun(t, "runs", "20240102-030405-CartPole-v1-mlp", nil, 150, 1, nil)
	writeRun(t, "runs", "20240103-101500-CartPole-v1-mlp", func(c *config.Config) { c.PPO.EntCoef = 0.05 }, 120, 0.8,
		[]trainer.Edit{{Iter: 60, Step: 30720, TimeS: 0.6, Key: "ppo.learning_rate", Value: "0.0001", Old: "0.00025"}})
}

// training starts a run on the fake trainer and feeds it iters iterations.
func training(hs *harness, iters int) {
	hs.press("enter", "enter", "s")
	f := hs.fake
	f.publish(trainer.Event{Kind: trainer.EventStarted, Time: epoch, Message: f.info.RunDir},
		trainer.Event{Kind: trainer.EventLog, Time: epoch, Message: "training CartPole-v1 with mlp on cpu (fake) for 102400 steps"})
	f.publish(metricsEvents(1, iters/2)...)
	f.publish(trainer.Event{Kind: trainer.EventEdit, Time: epoch,
		Edit:    trainer.Edit{Iter: iters / 2, Step: int64(iters/2) * 512, Key: "ppo.ent_coef", Value: "0.05", Old: "0.01"},
		Message: fmt.Sprintf("step %d: ppo.ent_coef = 0.05 (was 0.01)", (iters/2)*512)})
	f.publish(metricsEvents(iters/2+1, iters)...)
	hs.pump()
}

func TestGoldenViews(t *testing.T) {
	scenes := []struct {
		name  string
		drive func(hs *harness)
	}{
		{"picker", func(hs *harness) {}},
		{"picker-filter", func(hs *harness) { hs.press("/", "type:car") }},
		{"editor", func(hs *harness) { hs.press("enter", "enter") }},
		{"editor-error", func(hs *harness) {
			hs.press("enter", "enter", "/", "type:ent_coef", "enter", "enter", "ctrl+u", "type:lots", "enter")
		}},
		{"editor-problem", func(hs *harness) {
			hs.press("enter", "enter", "/", "type:minibatches", "enter", "enter", "ctrl+u", "type:3", "enter", "s")
		}},
		{"dashboard", func(hs *harness) { training(hs, 120) }},
		{"dashboard-paused", func(hs *harness) {
			training(hs, 60)
			hs.press("p")
			hs.fake.publish(trainer.Event{Kind: trainer.EventState, Time: epoch, State: trainer.StatePaused, Message: "paused at step 30720"})
			hs.pump()
		}},
		{"dashboard-done", func(hs *harness) {
			training(hs, 200)
			hs.fake.finish(trainer.StateDone)
			hs.pump()
		}},
		{"dashboard-help", func(hs *harness) { training(hs, 120); hs.press("?") }},
		{"dashboard-confirm-quit", func(hs *harness) { training(hs, 120); hs.press("q") }},
		{"live-editor", func(hs *harness) { training(hs, 120); hs.press("e", "down") }},
		{"live-editor-locked", func(hs *harness) { training(hs, 120); hs.press("e", "down", "enter") }},
		{"runs", func(hs *harness) { hs.press("4") }},
		{"runs-one", func(hs *harness) { hs.press("4", "down", "enter") }},
		{"runs-compare", func(hs *harness) { hs.press("4", "space", "space", "c") }},
	}
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, sc := range scenes {
			name := fmt.Sprintf("%s-%dx%d", sc.name, size[0], size[1])
			t.Run(name, func(t *testing.T) {
				// A relative runs directory keeps temporary paths out of the views.
				t.Chdir(t.TempDir())
				writeTwoRuns(t)
				hs := newHarness(t, size[0], size[1])
				sc.drive(hs)
				golden(t, name, hs.screenView())
			})
		}
	}
}
