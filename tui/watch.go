package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer"
)

// watchEpisodes is how many episodes the watch view plays before it stops.
const watchEpisodes = 5

// watchSpeeds are the paces a watch plays at, in frames a second; the
// default is 20, eval --render's pace.
var watchSpeeds = []int{1, 2, 5, 10, 20, 30, 60, 120, 240}

const defaultWatchSpeed = 4

// lastFrameHold is how many frames' time the last frame of an episode stays
// up, so the end can be seen before the next episode starts.
const lastFrameHold = 10

const scrWatch screenID = "watch"

// watchKeys are the watch view's bindings.
type watchKeys struct {
	PlayPause, StepFrame, Faster, Slower, NextEpisode, Replay, Back key.Binding
}

func newWatchKeys() watchKeys {
	return watchKeys{
		PlayPause:   bind("space", "pause/play", " ", "space"),
		StepFrame:   bind(".", "one step", ".", "right"),
		Faster:      bind("+", "faster", "+", "="),
		Slower:      bind("-", "slower", "-", "_"),
		NextEpisode: bind("n", "next episode", "n"),
		Replay:      bind("r", "play again", "r"),
		Back:        bind("esc", "back", "esc"),
	}
}

func (k watchKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.PlayPause, k.StepFrame, k.Faster, k.Slower, k.NextEpisode, k.Replay, k.Back}
}

func (k watchKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.PlayPause, k.StepFrame, k.NextEpisode, k.Replay}, {k.Faster, k.Slower, k.Back}}
}

// watcher plays a run's latest checkpoint and shows the environment's text
// rendering as it goes: `agenttrainer eval --render` inside the app, with
// pause, single steps, speed and skipping to the next episode. The episodes
// run in a goroutine held between frames by a pacer; the view takes the
// newest frame at each tick, so a slow terminal only skips frames.
type watcher struct {
	sh     *shared
	th     *theme
	keys   watchKeys
	back   helpKeys // without a checkpoint, esc is all there is
	w, h   int
	runDir string
	cancel context.CancelFunc
	gen    int // which watch the ticks belong to
	pace   *pacer

	words bool // the run is a language model's: words, wrapped rather than scaled

	mu      sync.Mutex
	frame   trainer.Frame
	loading bool
	returns []float64 // of the episodes that ended, in order
	result  *trainer.EvalResult
	err     error
	// replaying: its transcripts are played, having no checkpoint to play
	replaying bool
}

type watchTickMsg struct{ gen int }

func newWatcher(sh *shared) Screen {
	k := newWatchKeys()
	return &watcher{sh: sh, th: sh.th, keys: k, back: helpKeys{short: []key.Binding{k.Back}}, pace: newPacer()}
}

func (w *watcher) Init() tea.Cmd   { return nil }
func (w *watcher) Title() string   { return "watch" }
func (w *watcher) Capturing() bool { return false }

// open starts playing the run in dir from its first episode; the speed
// carries over.
func (w *watcher) open(dir string) tea.Cmd { return w.play(dir, false) }

// play starts the episodes of the run in dir, paused on the first frame or
// playing.
func (w *watcher) play(dir string, paused bool) tea.Cmd {
	w.close()
	ctx, cancel := context.WithCancel(context.Background())
	w.runDir, w.cancel = dir, cancel
	w.gen++
	w.pace.set(func(p *pacer) { p.paused, p.steps, p.skipTo = paused, 0, 0 })
	w.mu.Lock()
	w.frame, w.loading, w.returns, w.result, w.err, w.replaying = trainer.Frame{}, true, nil, nil, nil, false
	w.mu.Unlock()
	pace := w.pace
	words := hasTranscripts(dir)
	w.words = words
	go func() {
		shown := false
		o := trainer.EvalOptions{Episodes: watchEpisodes,
			Frame: func(f trainer.Frame) error {
				w.mu.Lock()
				w.frame, w.loading, shown = f, false, true
				if f.Last {
					w.returns = append(w.returns, f.Return)
				}
				w.mu.Unlock()
				hold := 1
				if f.Last {
					hold = lastFrameHold
				}
				return pace.wait(ctx, f.Episode, hold)
			}}
		res, err := evaluate(ctx, dir, o)
		if err != nil && words && !shown && ctx.Err() == nil {
			// A language model's run with no checkpoint to play yet (or one
			// that cannot be played here): its latest samples instead.
			w.mu.Lock()
			w.replaying = true
			w.mu.Unlock()
			res, err = replayTranscripts(ctx, dir, o)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if ctx.Err() == nil {
			w.result, w.err, w.loading = &res, err, false
		}
	}()
	return w.tick()
}

// Blur stops the episodes, and their redraws, when another screen shows.
func (w *watcher) Blur() {
	w.close()
	w.gen++ // the ticks of the watch that was on show stop
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

// finished reports whether the episodes ended (or failed).
func (w *watcher) finished() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.result != nil || w.err != nil
}

// Update opens a run, redraws on its ticks until the episodes end, and
// drives the pace from the keys; esc leaves.
func (w *watcher) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case watchRunMsg:
		return w.open(msg.dir)
	case watchTickMsg:
		if msg.gen == w.gen && !w.finished() {
			return w.tick()
		}
	case tea.KeyMsg:
		return w.key(msg)
	}
	return nil
}

func (w *watcher) key(msg tea.KeyMsg) tea.Cmd {
	k := w.keys
	switch {
	case key.Matches(msg, k.Back):
		w.close()
		return send(backMsg{fallback: scrRuns})
	case key.Matches(msg, k.Replay), key.Matches(msg, k.PlayPause) && w.finished():
		if w.runDir != "" {
			return w.open(w.runDir)
		}
	case key.Matches(msg, k.PlayPause):
		w.pace.set(func(p *pacer) { p.paused, p.steps = !p.paused, 0 })
	case key.Matches(msg, k.StepFrame):
		w.pace.set(func(p *pacer) {
			if p.paused {
				p.steps++
			} else {
				p.paused = true // the first press stops on the frame at hand
			}
		})
	case key.Matches(msg, k.Faster):
		w.pace.set(func(p *pacer) { p.speed = min(p.speed+1, len(watchSpeeds)-1) })
	case key.Matches(msg, k.Slower):
		w.pace.set(func(p *pacer) { p.speed = max(p.speed-1, 0) })
	case key.Matches(msg, k.NextEpisode):
		w.mu.Lock()
		ep := w.frame.Episode
		w.mu.Unlock()
		w.pace.set(func(p *pacer) { p.skipTo = max(p.skipTo, ep+1) })
	}
	return nil
}

func (w *watcher) View() string {
	w.mu.Lock()
	f, loading, returns, res, err := w.frame, w.loading, append([]float64(nil), w.returns...), w.result, w.err
	replaying := w.replaying
	w.mu.Unlock()
	inner := max(w.w-2, 1)
	var top, bottom []string
	switch {
	case err != nil:
		title := "watch " + filepath.Base(w.runDir)
		msg := w.th.Bad.Render(wrapWords(err.Error(), inner, max(w.h-4, 1))) + "\n\n" + w.th.Dim.Render("esc goes back")
		return box(w.th, title, msg, w.w, w.h)
	case loading:
		top = append(top, "loading the latest checkpoint…")
	default:
		line := w.pace.describe(w.th, res != nil, f.Episode) + " · " +
			fmt.Sprintf("episode %d of %d · step %d · return %s", f.Episode+1, watchEpisodes, f.Step, num(f.Return))
		if f.Last {
			line += " · " + w.th.Heading.Render("episode over")
		}
		top = append(top, line)
	}
	top = append(top, "")
	if len(returns) > 0 {
		items := make([]string, len(returns))
		for i, r := range returns {
			items[i] = fmt.Sprintf("%d: %s", i+1, num(r))
		}
		bottom = append(bottom, "", wrapItems(append([]string{"returns"}, items...), "   ", inner, 2))
	}
	if res != nil && err == nil {
		line := fmt.Sprintf("%s: return %s", plural(len(res.Returns), "episode", "episodes"), numPM(res.Mean(), res.Std()))
		if res.HasSuccess {
			line += fmt.Sprintf(", success rate %.2f", float64(res.Successes)/float64(len(res.Returns)))
		}
		bottom = append(bottom, line+", "+tasksPhrase(res.Tasks))
	}
	caption := strings.TrimSuffix(f.Caption, "\n")
	used := len(top) + len(bottom) + strings.Count(caption, "\n") + 1
	drawing := centre(scaleDrawing(f.Drawing, inner, w.h-2-used), inner)
	if w.words {
		// words are not scaled (a column dropped is a letter lost): wrapped
		drawing = strings.TrimSuffix(ansi.Wrap(f.Drawing, inner, ""), "\n")
		caption = ansi.Wrap(caption, inner, "")
	}
	if len(f.Colours) > 0 { // after scaling and centring: they count cells
		paint := func(s string, c int) string {
			return w.th.r.NewStyle().Foreground(lipgloss.Color(strconv.Itoa(c))).Render(s)
		}
		drawing, caption = envs.Paint(drawing, f.Colours, false, paint), envs.Paint(caption, f.Colours, true, paint)
	}
	body := strings.Join(top, "\n") + "\n" + drawing + "\n" + caption
	if len(bottom) > 0 {
		body += "\n" + strings.Join(bottom, "\n")
	}
	title := "watch " + filepath.Base(w.runDir) + " · latest checkpoint"
	switch {
	case replaying:
		title = "watch " + filepath.Base(w.runDir) + " · its latest samples"
	case res != nil:
		title = "watch " + filepath.Base(w.runDir) + " · " + filepath.Base(res.Checkpoint)
	}
	return box(w.th, title, body, w.w, w.h)
}

func (w *watcher) Help() help.KeyMap {
	w.mu.Lock()
	failed := w.err != nil
	w.mu.Unlock()
	if failed {
		return w.back
	}
	return w.keys
}

// tasksPhrase says what the episodes were played on: the environment as
// its config builds it (env.args), or the run's task rows.
func tasksPhrase(tasks string) string {
	if tasks == "" || tasks == "env.args" {
		return "on the environment as configured"
	}
	return "on " + tasks
}

// pacer holds the episodes' goroutine between frames: at the chosen speed,
// frame by frame while paused, or not at all while skipping to the next
// episode.
type pacer struct {
	mu      sync.Mutex
	paused  bool
	speed   int           // index into watchSpeeds
	steps   int           // frames to let through while paused
	skipTo  int           // frames of episodes before this one pass at once
	changed chan struct{} // closed (and replaced) on every change
}

func newPacer() *pacer { return &pacer{speed: defaultWatchSpeed, changed: make(chan struct{})} }

// set changes the pace and wakes a waiting frame to look at it.
func (p *pacer) set(change func(*pacer)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	change(p)
	close(p.changed)
	p.changed = make(chan struct{})
}

// wait holds a frame of episode ep for hold frames' time at the current
// speed, until a step while paused, or not at all when skipping past ep.
func (p *pacer) wait(ctx context.Context, ep, hold int) error {
	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p.mu.Lock()
		changed, playing := p.changed, !p.paused
		var left time.Duration
		switch {
		case ep < p.skipTo:
			p.mu.Unlock()
			return nil
		case p.paused && p.steps > 0:
			p.steps--
			p.mu.Unlock()
			return nil
		case playing:
			left = time.Duration(hold)*time.Second/time.Duration(watchSpeeds[p.speed]) - time.Since(start)
			if left <= 0 {
				p.mu.Unlock()
				return nil
			}
		}
		p.mu.Unlock()
		var timeout <-chan time.Time // none while paused
		if playing {
			timer.Reset(left)
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			return nil
		case <-changed: // paused, played, sped up or skipped: look again
		}
	}
}

// describe is the pace in a few words: playing at what speed, paused, or
// skipping.
func (p *pacer) describe(th *theme, done bool, ep int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case done:
		return "■ done (r: play again)"
	case ep < p.skipTo:
		return "⏭ to the next episode"
	case p.paused:
		return th.Warn.Render("⏸ paused")
	}
	return fmt.Sprintf("▶ %d fps", watchSpeeds[p.speed])
}

// centre moves a block of lines right to the middle of w columns, keeping
// its lines aligned with each other.
func centre(block string, w int) string {
	lines := strings.Split(block, "\n")
	width := 0
	for _, l := range lines {
		width = max(width, len([]rune(l)))
	}
	pad := strings.Repeat(" ", max(w-width, 0)/2)
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}

// scaleDrawing fits a text drawing into w×h cells: blown up by a whole
// factor where there is room (the same across and down, up to 6, so shapes
// keep their proportions), its rows then repeated up to twice more (a cell
// is twice as tall as wide, so a flat drawing such as CartPole's uses the
// rows it is given), and thinned by dropping rows or columns evenly along
// an axis where it does not fit.
func scaleDrawing(d string, w, h int) string {
	lines := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
	rows := make([][]rune, len(lines))
	dw, dh := 0, len(lines)
	for i, l := range lines {
		rows[i] = []rune(l)
		dw = max(dw, len(rows[i]))
	}
	if dw == 0 || w <= 0 || h <= 0 {
		return ""
	}
	tw, th := min(dw, w), min(dh, h)
	if k := min(w/dw, h/dh, 6); k > 1 {
		tw, th = dw*k, dh*min(h/dh, 2*k, 6)
	}
	out := make([]string, th)
	line := make([]rune, tw)
	for y := range th {
		src := rows[y*dh/th]
		for x := range line {
			line[x] = ' '
			if c := x * dw / tw; c < len(src) {
				line[x] = src[c]
			}
		}
		out[y] = strings.TrimRight(string(line), " ")
	}
	return strings.Join(out, "\n")
}

func (w *watcher) KeyMaps() []help.KeyMap { return []help.KeyMap{w.keys, w.back} }
