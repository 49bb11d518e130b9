package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// startLM starts a language-model run on text FrozenLake in the harness
// and feeds it iters iterations: metrics as events, transcripts in its run
// directory as the trainer writes them.
func startLM(t *testing.T, w, h, iters int) *harness {
	t.Chdir(t.TempDir())
	hs := newHarnessWith(t, w, h, func(o *Options, _ *fakeHost) { o.Registry = lmRegistry })
	for range 4 {
		hs.press("down")
	}
	hs.press("enter", "enter", "s")
	if hs.fake == nil {
		t.Fatalf("no run started:\n%s", hs.view())
	}
	dir := hs.fake.info.RunDir
	writeLMRun(t, filepath.Dir(dir), filepath.Base(dir), 0)
	for i := 1; i <= iters; i++ {
		appendLMIteration(t, dir, i)
		hs.fake.publish(trainer.Event{Kind: trainer.EventMetrics, Time: epoch, Metrics: lmMetrics(i)})
	}
	hs.fake.publish(trainer.Event{Kind: trainer.EventEdit, Time: epoch,
		Edit:    trainer.Edit{Iter: iters, Step: int64(iters) * 64, Key: "rollout.temperature", Value: "0.7", Old: "1.0"},
		Message: "rollout.temperature = 0.7 (was 1.0)"})
	hs.pump()
	return hs
}

// The dashboard of a language-model run shows the latest group of
// transcripts beside the curves at 120×40 — each sample's reward, the
// model's words and the environment's marked apart, FrozenLake's grid as
// the environment drew it — and T puts it in place of the chart at 80×24.
func TestDashboardShowsTranscripts(t *testing.T) {
	hs := startLM(t, 120, 40, 12)
	v := hs.view()
	for _, want := range []string{"transcripts · iter 12 · train task 0", "#0 ✓ reward 1", "model│", " env│", " _   O   _   _", "┊ 1 live edit, the last rollout.temperature"} {
		if !strings.Contains(v, want) {
			t.Errorf("the dashboard has no %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "value loss") {
		t.Errorf("the figures of a run with no value function show a value loss:\n%s", v)
	}
	golden(t, "dashboard-lm-120x40", hs.screenView())
	hs.press("T")
	if v := hs.view(); strings.Contains(v, "transcripts · iter") || !strings.Contains(v, "env/success_r") {
		t.Errorf("T does not hide the transcripts:\n%s", v)
	}

	small := startLM(t, 80, 24, 12)
	if v := small.view(); strings.Contains(v, "transcripts · iter") {
		t.Errorf("at 80×24 the transcripts take the chart's place before T:\n%s", v)
	}
	small.press("T")
	v = small.view()
	if !strings.Contains(v, "transcripts · iter 12") || !strings.Contains(v, "model│") {
		t.Errorf("T at 80×24 shows no transcripts:\n%s", v)
	}
	golden(t, "dashboard-lm-80x24", small.screenView())
}

// The runs browser opens a run's transcripts (T): an iteration at a time
// ([ and ]) or all (a), right or wrong ones only (c), scrolled.
func TestRunsBrowserTranscripts(t *testing.T) {
	for _, size := range []struct{ w, h int }{{120, 40}, {80, 24}} {
		t.Chdir(t.TempDir())
		writeLMRun(t, "runs", "20240102-030405-TextFrozenLake-v0-lm", 5)
		hs := newHarnessWith(t, size.w, size.h, func(o *Options, _ *fakeHost) { o.Registry = lmRegistry })
		hs.press("4")
		hs.press("T")
		v := hs.view()
		if !strings.Contains(v, "Transcripts · iteration 5 (5 of 5)") || !strings.Contains(v, "iteration 5 (5 of 5)") {
			t.Fatalf("T opens no transcripts at the latest iteration:\n%s", v)
		}
		if !strings.Contains(v, "── iteration 5") || strings.Contains(v, "── iteration 4") {
			t.Errorf("not iteration 5 alone:\n%s", v)
		}
		if strings.Contains(v, "FrozenLake Quick Guide") || !strings.Contains(v, "(system) You are Qwen") {
			t.Errorf("the system prompt is not cut to its first line:\n%s", v)
		}
		golden(t, "runs-transcripts-"+sizeName(size.w, size.h), hs.screenView())
		hs.press("s")
		if v := hs.view(); !strings.Contains(v, "FrozenLake Quick Guide") {
			t.Errorf("s does not show the system prompt whole:\n%s", v)
		}
		hs.press("s")
		hs.press("[", "c")
		v = hs.view()
		if !strings.Contains(v, "iteration 4 (4 of 5) · right only") || strings.Contains(v, " ✗ ") {
			t.Errorf("[ and c do not show iteration 4's right samples:\n%s", v)
		}
		hs.press("c", "a")
		if v := hs.view(); !strings.Contains(v, "all iterations · wrong only") || strings.Contains(v, " ✓ ") {
			t.Errorf("a and c do not show every wrong sample:\n%s", v)
		}
		hs.press("esc")
		if v := hs.view(); strings.Contains(v, "Transcripts ·") {
			t.Errorf("esc does not close the transcripts:\n%s", v)
		}
	}
}

func sizeName(w, h int) string { return fmt.Sprintf("%dx%d", w, h) }

// T pressed before the run wrote its first transcripts is kept: the panel
// says none are there yet, and shows them once they are (the trainer
// writes the metrics first).
func TestTranscriptsToggleBeforeTheFirst(t *testing.T) {
	hs := startLM(t, 80, 24, 0)
	hs.fake.publish(trainer.Event{Kind: trainer.EventMetrics, Time: epoch, Metrics: lmMetrics(1)})
	hs.pump()
	hs.press("T")
	if v := hs.view(); !strings.Contains(v, "no transcripts yet") {
		t.Fatalf("T before any transcript does not say so:\n%s", v)
	}
	appendLMIteration(t, hs.fake.info.RunDir, 1)
	if v := hs.view(); !strings.Contains(v, "transcripts · iter 1") {
		t.Errorf("the first transcripts do not show:\n%s", v)
	}
}

// The live editor of a language-model run offers the keys lmrl tags live
// (temperature, top_p, the learning rate, KL and clip coefficients) as
// any other live key, and sends an edit of one to the trainer.
func TestLiveEditorOffersLMKeys(t *testing.T) {
	hs := startLM(t, 120, 40, 3)
	hs.press("e")
	for _, k := range []string{"rollout.temperature", "rollout.top_p", "ppo.learning_rate", "actor.kl_loss_coef", "algorithm.kl_coef", "actor.clip_ratio_low", "actor.clip_ratio_high"} {
		hs.press("/", "ctrl+u", "type:"+k, "enter")
		v := hs.view()
		row := ""
		for _, line := range strings.Split(v, "\n") {
			if strings.Contains(line, "▸") && strings.Contains(line, k) {
				row = line
			}
		}
		if !strings.HasSuffix(strings.TrimSpace(row), "live") {
			t.Errorf("%s is not offered live: %q\n%s", k, row, v)
		}
		hs.press("esc")
	}
	hs.press("/", "ctrl+u", "type:rollout.temperature", "enter", "enter", "ctrl+u", "type:0.7", "enter")
	if calls := strings.Join(hs.fake.Calls(), "\n"); !strings.Contains(calls, "edit rollout.temperature=0.7") {
		t.Errorf("no edit of the temperature sent; calls:\n%s", calls)
	}
}

// Watching a language-model run replays its latest group turn by turn:
// the grid as the environment drew it, the model's answer and the reward
// under it; the episode's return is the sample's reward.
func TestWatchReplaysTranscripts(t *testing.T) {
	dir := writeLMRun(t, t.TempDir(), "lm", 5)
	var frames []trainer.Frame
	res, err := replayTranscripts(context.Background(), dir, trainer.EvalOptions{Episodes: 2,
		Frame: func(f trainer.Frame) error { frames = append(frames, f); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	group, _ := latestGroup(dir)
	if len(res.Returns) != 2 || res.Returns[0] != group[0].Reward || res.Returns[1] != group[1].Reward {
		t.Errorf("returns %v, want the first two samples' rewards", res.Returns)
	}
	if len(frames) != group[0].Turns+group[1].Turns+2 {
		t.Errorf("%d frames, want a turn each and an end each", len(frames))
	}
	f := frames[0]
	if !strings.Contains(f.Drawing, " _   ") || !strings.Contains(f.Caption, "model: ") || !strings.Contains(f.Caption, "reward ") {
		t.Errorf("first frame: drawing %q caption %q", f.Drawing, f.Caption)
	}
	if last := frames[group[0].Turns]; !last.Last || last.Return != group[0].Reward {
		t.Errorf("episode 1's last frame %+v", last)
	}
	if _, err := replayTranscripts(context.Background(), t.TempDir(), trainer.EvalOptions{Episodes: 1}); err == nil || !strings.Contains(err.Error(), "no transcripts yet") {
		t.Errorf("a run without transcripts: %v", err)
	}
}

// Watching a language-model run that has no checkpoint yet plays its
// latest samples instead, saying so, the grid and the words wrapped, not
// scaled (no letter lost).
func TestWatchLMRunWithoutCheckpoint(t *testing.T) {
	dir := writeLMRun(t, t.TempDir(), "lm", 3)
	th := defaultTheme(lipgloss.DefaultRenderer())
	w := newWatcher(&shared{th: &th}).(*watcher)
	w.SetSize(80, 24)
	w.pace.set(func(p *pacer) { p.speed = len(watchSpeeds) - 1 })
	w.play(dir, false)
	eventually(t, "the samples' end", w.finished)
	v := w.View()
	for _, want := range []string{"its latest samples", "episodes: return", "on the samples of"} {
		if !strings.Contains(v, want) {
			t.Errorf("the watch has no %q:\n%s", want, v)
		}
	}
	w.mu.Lock()
	f := w.frame
	w.mu.Unlock()
	if !strings.Contains(v, strings.Split(strings.TrimSpace(f.Drawing), "\n")[0]) {
		t.Errorf("the last frame's first line %q is not on screen whole:\n%s", f.Drawing, v)
	}
}
