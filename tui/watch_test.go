package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

func TestScaleDrawing(t *testing.T) {
	for _, tc := range []struct {
		name, drawing string
		w, h          int
		want          string
	}{
		{"room for twice", "ab\ncd\n", 5, 4, "aabb\naabb\nccdd\nccdd"},
		{"at most six times", "x\n", 100, 100, strings.Repeat("xxxxxx\n", 5) + "xxxxxx"},
		{"a flat drawing takes more rows", "ab\n", 4, 4, "aabb\naabb\naabb\naabb"},
		{"the same factor both ways", "ab\n", 6, 2, "aabb\naabb"},
		{"fits as it is", "abc\n", 5, 2, "abc"},
		{"too wide: every other column", "abcdef\n", 3, 5, "ace"},
		{"too tall: rows dropped evenly", "1\n2\n3\n4\n", 5, 2, "1\n3"},
		{"ragged lines keep their place", "a\nbcd\n", 6, 4, "aa\naa\nbbccdd\nbbccdd"},
		{"no room", "abc\n", 0, 3, ""},
		{"nothing to draw", "", 10, 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scaleDrawing(tc.drawing, tc.w, tc.h); got != tc.want {
				t.Errorf("scaleDrawing(%q, %d, %d) =\n%s\nwant\n%s", tc.drawing, tc.w, tc.h, got, tc.want)
			}
		})
	}
}

// trainedRun trains a small CartPole run for the watch tests.
func trainedRun(t *testing.T) string {
	t.Helper()
	cfg := config.Default()
	if err := cfg.ApplyArgs([]string{"ppo.total_timesteps=1024", "env.num_envs=2", "ppo.num_steps=128", "trainer.threads=1"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	tr, err := trainer.New(cfg, trainer.Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// eventually polls cond until it holds; the bound is for a broken watch,
// not for a slow machine.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Watching an agent: paused, each '.' lets exactly one step through; 'n'
// skips to the next episode and holds there; played at top speed it ends
// with the return of every episode listed.
func TestWatchPauseStepSkipAndReturns(t *testing.T) {
	dir := trainedRun(t)
	th := defaultTheme(lipgloss.DefaultRenderer())
	w := newWatcher(&shared{th: &th}).(*watcher)
	w.SetSize(80, 24)
	w.play(dir, true)
	frame := func() trainer.Frame { w.mu.Lock(); defer w.mu.Unlock(); return w.frame }
	eventually(t, "the first frame", func() bool { w.mu.Lock(); defer w.mu.Unlock(); return !w.loading })
	if f := frame(); f.Episode != 0 || f.Step != 0 || !strings.Contains(w.View(), "paused") {
		t.Fatalf("first frame: episode %d step %d, view\n%s", f.Episode, f.Step, w.View())
	}
	for i := 1; i <= 3; i++ {
		w.Update(keyMsg("."))
		eventually(t, fmt.Sprintf("step %d", i), func() bool { return frame().Step == i })
	}
	if f := frame(); f.Step != 3 || f.Episode != 0 {
		t.Fatalf("after three single steps: episode %d, step %d", f.Episode, f.Step)
	}
	w.Update(keyMsg("n"))
	eventually(t, "the next episode", func() bool { return frame().Episode == 1 })
	w.Update(keyMsg(".")) // still paused: one step of episode 1
	eventually(t, "a step of episode 1", func() bool { return frame().Step == 1 })
	if f := frame(); f.Episode != 1 {
		t.Fatalf("skipping ran past episode 1: episode %d", f.Episode)
	}
	w.Update(keyMsg(" "))
	for range watchSpeeds {
		w.Update(keyMsg("+"))
	}
	eventually(t, "the end of the episodes", w.finished)
	w.mu.Lock()
	returns, res, err := w.returns, w.result, w.err
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(returns) != fmt.Sprint(res.Returns) || len(returns) != watchEpisodes {
		t.Errorf("returns shown %v, evaluated %v", returns, res.Returns)
	}
	v := w.View()
	for _, want := range []string{"returns", "1: " + num(returns[0]), fmt.Sprintf("%d episodes: return", watchEpisodes), "r: play again"} {
		if !strings.Contains(v, want) {
			t.Errorf("the finished view lacks %q:\n%s", want, v)
		}
	}
	checkFits(t, v, 80, 24)
}

// The pace a watch holds frames to: a cancelled watch never stays held.
func TestPacerCancelReleasesAPausedFrame(t *testing.T) {
	p := newPacer()
	p.set(func(p *pacer) { p.paused = true })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.wait(ctx, 0, 1) }()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("a cancelled wait returned %v", err)
	}
}
