package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// watchEpisodes is how many episodes the watch view plays before it stops.
const watchEpisodes = 5

// watcher plays a run's latest checkpoint and shows the environment's text
// rendering as it goes: `agenttrainer eval --render` inside the app. The
// episodes run in a goroutine; the view takes the newest frame at each tick,
// so a slow terminal only skips frames.
type watcher struct {
	sh     *shared
	th     *theme
	keys   *keyMap
	w, h   int
	runDir string
	cancel context.CancelFunc
	gen    int // which watch the ticks belong to

	mu      sync.Mutex
	frame   string
	episode int
	result  *trainer.EvalResult
	err     error
}

type watchTickMsg struct{ gen int }

// closeWatchMsg leaves the watch view, back to the runs browser.
type closeWatchMsg struct{}

func newWatcher(sh *shared) *watcher { return &watcher{sh: sh, th: sh.th, keys: sh.keys} }

func (w *watcher) Init() tea.Cmd   { return nil }
func (w *watcher) Title() string   { return "watch" }
func (w *watcher) Capturing() bool { return false }

// open starts playing the run in dir.
func (w *watcher) open(dir string) tea.Cmd {
	w.close()
	ctx, cancel := context.WithCancel(context.Background())
	w.runDir, w.cancel = dir, cancel
	w.gen++
	w.mu.Lock()
	w.frame, w.episode, w.result, w.err = "loading the latest checkpoint…", 0, nil, nil
	w.mu.Unlock()
	go func() {
		res, err := trainer.Evaluate(ctx, dir, trainer.EvalOptions{Episodes: watchEpisodes,
			Frame: func(ep int, frame string) error {
				w.mu.Lock()
				w.frame, w.episode = frame, ep
				w.mu.Unlock()
				select { // about 20 frames a second, like eval --render's default pace
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(50 * time.Millisecond):
					return nil
				}
			}})
		w.mu.Lock()
		defer w.mu.Unlock()
		if ctx.Err() == nil {
			w.result, w.err = &res, err
		}
	}()
	return w.tick()
}

func (w *watcher) tick() tea.Cmd {
	gen := w.gen
	return tea.Tick(50*time.Millisecond, func(time.Time) tea.Msg { return watchTickMsg{gen: gen} })
}

// close stops the episodes.
func (w *watcher) close() {
	if w.cancel != nil {
		w.cancel()
		w.cancel = nil
	}
}

func (w *watcher) SetSize(width, height int) { w.w, w.h = width, height }

// Update opens a run, redraws on its ticks until the episodes end; esc
// leaves.
func (w *watcher) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case watchRunMsg:
		return w.open(msg.dir)
	case tea.KeyMsg:
		if key.Matches(msg, w.keys.Back) {
			w.close()
			return func() tea.Msg { return closeWatchMsg{} }
		}
		return nil
	}
	if t, ok := msg.(watchTickMsg); ok && t.gen == w.gen {
		w.mu.Lock()
		done := w.result != nil || w.err != nil
		w.mu.Unlock()
		if !done {
			return w.tick()
		}
	}
	return nil
}

func (w *watcher) View() string {
	w.mu.Lock()
	frame, ep, res, err := w.frame, w.episode, w.result, w.err
	w.mu.Unlock()
	status := fmt.Sprintf("episode %d of %d", min(ep+1, watchEpisodes), watchEpisodes)
	switch {
	case err != nil:
		status = w.th.Bad.Render(err.Error())
	case res != nil:
		status = fmt.Sprintf("%d episodes: return %.2f ± %.2f", len(res.Returns), res.Mean(), res.Std())
		if res.HasSuccess {
			status += fmt.Sprintf(", success rate %.2f", float64(res.Successes)/float64(len(res.Returns)))
		}
	}
	title := "watch " + filepath.Base(w.runDir) + " · latest checkpoint"
	body := frame + "\n\n" + status
	return box(w.th, title, body, w.w, w.h)
}

func (w *watcher) Help() help.KeyMap {
	back := key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back"))
	return helpKeys{short: []key.Binding{back, w.keys.Help}, full: [][]key.Binding{{back, w.keys.Help}}}
}
