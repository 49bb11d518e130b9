package tui

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/internal/sweep"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/control"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// The sweeps screen: the sweeps under the runs directory (the directories
// `agenttrainer sweep` made, with their sweep.toml and sweep.jsonl) and, for
// one, its trials with their values, state, last and best metric, sorted by
// the metric. From there a trial opens (its dashboard when it trains, its
// curves when not), the trials' curves overlay in the runs browser, a trial
// stops, and a trial's configuration goes into the editor. A new sweep
// starts from a spec file, checked here first.

// sweepRefresh is how often the screen reads the sweeps again.
const sweepRefresh = time.Second

type (
	sweepsReadMsg struct {
		gen    int
		sweeps []sweepSummary
		err    error
	}
	sweepsTickMsg struct{ gen int }
	// showRunsMsg asks the runs browser for the curves of dirs: one run's,
	// or several overlaid.
	showRunsMsg struct{ dirs []string }
	// useConfigMsg puts a configuration into the editor.
	useConfigMsg struct {
		cfg  config.Config
		from string
	}
	sweepStartedMsg struct {
		spec string
		err  error
	}
	trialStoppedMsg struct {
		trial string
		err   error
	}
)

// SweepStarter starts `agenttrainer sweep SPEC` over runsDir in a process of
// its own (it outlives the app) after the app has checked the spec.
type SweepStarter func(spec, runsDir string) error

// sweepSummary is one sweep as read from its directory.
type sweepSummary struct {
	dir, name string
	spec      *sweep.Spec
	trials    []trialRow
	err       error
}

// trialRow is a trial with its figures read from its run directory.
type trialRow struct {
	rec        *sweep.Record
	last, best float64 // the metric; NaN before its first value
	steps      int64
}

// counts is how many trials are in each state.
func (s sweepSummary) counts() map[string]int {
	n := map[string]int{}
	for _, t := range s.trials {
		n[t.rec.State]++
	}
	return n
}

// readSweeps reads every sweep under runsDir (a directory with a
// sweep.toml), newest first, each trial's figures from its metrics.
func readSweeps(runsDir string, gen int) tea.Cmd {
	return func() tea.Msg {
		entries, err := os.ReadDir(runsDir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return sweepsReadMsg{gen: gen, err: err}
		}
		var out []sweepSummary
		for _, e := range entries {
			dir := filepath.Join(runsDir, e.Name())
			if !e.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, sweep.SpecFile)); err != nil {
				continue
			}
			out = append(out, readSweep(dir))
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].name > out[j].name })
		return sweepsReadMsg{gen: gen, sweeps: out}
	}
}

func readSweep(dir string) sweepSummary {
	s := sweepSummary{dir: dir, name: filepath.Base(dir)}
	s.spec, s.err = sweep.ParseSpec(filepath.Join(dir, sweep.SpecFile))
	if s.err != nil {
		return s
	}
	recs, err := sweep.ReadResults(dir)
	if err != nil {
		s.err = err
	}
	for _, r := range recs {
		row := trialRow{rec: r, last: math.NaN(), best: math.NaN(), steps: r.Steps}
		if ms, err := runstore.ReadMetrics(r.Dir); err == nil && len(ms) > 0 {
			if last, best, ok := sweep.Summary(ms, s.spec.Metric, s.spec.Maximize()); ok {
				row.last, row.best = last, best
			}
			row.steps = ms[len(ms)-1].Step
		}
		s.trials = append(s.trials, row)
	}
	sortTrials(s.trials, s.spec.Maximize())
	return s
}

// sortTrials orders trials best first by their best metric; trials with
// no value yet come last, in trial order.
func sortTrials(ts []trialRow, maximize bool) {
	sort.SliceStable(ts, func(i, j int) bool {
		a, b := ts[i].best, ts[j].best
		switch {
		case math.IsNaN(a) || math.IsNaN(b):
			return !math.IsNaN(a) && math.IsNaN(b)
		case maximize:
			return a > b
		}
		return a < b
	})
}

type sweepsScreen struct {
	sh    *shared
	th    *theme
	keys  *keyMap
	start SweepStarter
	gen   int
	w, h  int

	sweeps  []sweepSummary
	err     error
	loading bool
	listCursor
	open      string // the sweep whose trials show; "" for the list
	trials    listCursor
	prompting bool
	input     textinput.Model
	note      string
}

func newSweepsScreen(sh *shared, start SweepStarter) *sweepsScreen {
	in := sh.th.newInput("spec file: ", "sweep.toml (see README: Sweeps)")
	in.CharLimit = 4096
	return &sweepsScreen{sh: sh, th: sh.th, keys: sh.keys, start: start, input: in}
}

func (s *sweepsScreen) Init() tea.Cmd   { return nil }
func (s *sweepsScreen) Title() string   { return "sweeps" }
func (s *sweepsScreen) Capturing() bool { return s.prompting }
func (s *sweepsScreen) SetSize(w, h int) {
	s.w, s.h = w, h
}

// Focus reads the sweeps again when the screen is shown.
func (s *sweepsScreen) Focus() tea.Cmd {
	s.gen++
	s.loading = true
	return readSweeps(s.sh.runsDir, s.gen)
}

func (s *sweepsScreen) tick() tea.Cmd {
	gen := s.gen
	return tea.Tick(sweepRefresh, func(time.Time) tea.Msg { return sweepsTickMsg{gen: gen} })
}

// current is the open sweep, or nil.
func (s *sweepsScreen) current() *sweepSummary {
	for i := range s.sweeps {
		if s.sweeps[i].dir == s.open {
			return &s.sweeps[i]
		}
	}
	return nil
}

func (s *sweepsScreen) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case sweepsReadMsg:
		if msg.gen != s.gen {
			return nil
		}
		s.sweeps, s.err, s.loading = msg.sweeps, msg.err, false
		s.cursor = min(s.cursor, max(len(s.sweeps)-1, 0))
		if cur := s.current(); cur != nil {
			s.trials.cursor = min(s.trials.cursor, max(len(cur.trials)-1, 0))
		}
		return s.tick()
	case sweepsTickMsg:
		if msg.gen != s.gen {
			return nil
		}
		return readSweeps(s.sh.runsDir, s.gen)
	case sweepStartedMsg:
		if msg.err != nil {
			s.note = "not started: " + msg.err.Error()
		} else {
			s.note = "started the sweep of " + msg.spec + "; its trials appear as they start"
		}
		return nil
	case trialStoppedMsg:
		if msg.err != nil {
			s.note = "cannot stop " + msg.trial + ": " + msg.err.Error()
		} else {
			s.note = "asked " + msg.trial + " to stop; the sweep records it as stopped"
		}
		return nil
	case tea.KeyMsg:
		if s.prompting {
			return s.updatePrompt(msg)
		}
		s.note = ""
		if s.open != "" {
			return s.updateTrials(msg)
		}
		return s.updateList(msg)
	}
	return nil
}

func (s *sweepsScreen) updateList(msg tea.KeyMsg) tea.Cmd {
	k := s.keys
	switch {
	case s.move(k, msg, len(s.sweeps), s.rows()):
	case key.Matches(msg, k.Choose) && len(s.sweeps) > 0:
		s.open, s.trials = s.sweeps[s.cursor].dir, listCursor{}
	case key.Matches(msg, k.NewRun):
		s.prompting = true
		return s.input.Focus()
	case key.Matches(msg, k.Refresh):
		return s.Focus()
	}
	return nil
}

func (s *sweepsScreen) updateTrials(msg tea.KeyMsg) tea.Cmd {
	k := s.keys
	cur := s.current()
	if cur == nil {
		s.open = ""
		return nil
	}
	if key.Matches(msg, k.Back) {
		s.open = ""
		return nil
	}
	if s.trials.move(k, msg, len(cur.trials), s.rows()) || len(cur.trials) == 0 {
		return nil
	}
	t := cur.trials[s.trials.cursor]
	dir := t.rec.Dir
	switch {
	case key.Matches(msg, k.Choose):
		if t.rec.State == sweep.Running && LiveControl(dir) {
			return func() tea.Msg { return attachRunMsg{dir: dir} }
		}
		return func() tea.Msg { return showRunsMsg{dirs: []string{dir}} }
	case key.Matches(msg, k.Compare):
		var dirs []string
		for _, tr := range cur.trials {
			if runstore.IsRunDir(tr.rec.Dir) {
				dirs = append(dirs, tr.rec.Dir)
			}
		}
		if len(dirs) == 0 {
			s.note = "no trial has started yet"
			return nil
		}
		return func() tea.Msg { return showRunsMsg{dirs: dirs} }
	case key.Matches(msg, k.StopRun):
		trial := t.rec.Trial
		return func() tea.Msg {
			c, err := control.Dial(dir)
			if err != nil {
				return trialStoppedMsg{trial: trial, err: errors.New("it is not training now")}
			}
			defer c.Close()
			c.Stop()
			return trialStoppedMsg{trial: trial}
		}
	case key.Matches(msg, k.UseConfig):
		cfg, err := runstore.ReadConfig(dir)
		if err != nil {
			s.note = "cannot read its config: " + err.Error()
			return nil
		}
		from := t.rec.Trial + " of " + cur.name
		return func() tea.Msg { return useConfigMsg{cfg: cfg, from: from} }
	}
	return nil
}

// updatePrompt edits the spec file's path; enter checks the spec here
// (every mistake the sweep command would refuse) and starts it.
func (s *sweepsScreen) updatePrompt(msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEsc:
		s.prompting = false
		s.input.Blur()
		return nil
	case tea.KeyEnter:
		spec := strings.TrimSpace(s.input.Value())
		if spec == "" {
			return nil
		}
		if s.start == nil {
			s.note = "this app cannot start processes; run `agenttrainer sweep " + spec + "` in a terminal"
			return nil
		}
		if _, err := sweep.Prepare(sweep.Options{Spec: spec, Overrides: []string{"trainer.runs_dir=" + s.sh.runsDir}}); err != nil {
			s.note = "not started: " + err.Error()
			return nil
		}
		s.prompting = false
		s.input.Blur()
		start, runsDir := s.start, s.sh.runsDir
		return func() tea.Msg { return sweepStartedMsg{spec: spec, err: start(spec, runsDir)} }
	}
	var cmd tea.Cmd
	s.input, cmd = s.input.Update(msg)
	return cmd
}

func (s *sweepsScreen) rows() int { return max(s.h-4, 1) }

func (s *sweepsScreen) View() string {
	th := s.th
	var head []string
	if cur := s.current(); cur != nil {
		return s.viewTrials(cur)
	}
	head = append(head, th.Title.Render("Sweeps in "+s.sh.runsDir)+th.Dim.Render(fmt.Sprintf(" · %d", len(s.sweeps))))
	var b strings.Builder
	switch {
	case s.err != nil:
		b.WriteString(th.Bad.Render(s.err.Error()))
	case s.loading && len(s.sweeps) == 0:
		b.WriteString(th.Dim.Render("reading the sweeps…"))
	case len(s.sweeps) == 0:
		b.WriteString(th.Dim.Render(wrapWords("No sweep yet. n starts one from a spec file (as `agenttrainer sweep SPEC.toml` does); its trials run in processes of their own.", s.w, 3)))
	default:
		nameW := max(min(s.w-58, 40), 12)
		b.WriteString(th.Heading.Render(fitLine("  "+fitLine("NAME", nameW)+fitLine("METHOD", 8)+fitLine("TRIALS", 8)+
			fitLine("DONE", 6)+fitLine("RUN", 5)+fitLine("CUT", 5)+fitLine("FAIL", 6)+"BEST", s.w)))
		s.follow(len(s.sweeps), s.rows())
		for i := s.offset; i < len(s.sweeps) && i < s.offset+s.rows(); i++ {
			sw := s.sweeps[i]
			line := fitLine(cut(sw.name, nameW-1), nameW)
			if sw.err != nil || sw.spec == nil {
				line += th.Warn.Render(cut("! "+fmt.Sprint(sw.err), max(s.w-nameW-2, 1)))
			} else {
				n := sw.counts()
				best := "-"
				if len(sw.trials) > 0 && !math.IsNaN(sw.trials[0].best) {
					best = num(sw.trials[0].best) + " " + sw.spec.Metric + arrow(sw.spec.Maximize())
				}
				line += fitLine(sw.spec.Method, 8) + fitLine(fmt.Sprint(len(sw.trials)), 8) + fitLine(fmt.Sprint(n[sweep.Done]), 6) +
					fitLine(fmt.Sprint(n[sweep.Running]), 5) + fitLine(fmt.Sprint(n[sweep.Stopped]+n[sweep.Cancelled]), 5) +
					fitLine(fmt.Sprint(n[sweep.Failed]), 6) + best
			}
			b.WriteString("\n" + s.mark(i == s.cursor, line))
		}
	}
	return fit(strings.Join(head, "\n")+"\n"+b.String()+s.foot(), s.w, s.h)
}

func arrow(maximize bool) string {
	if maximize {
		return " ↑"
	}
	return " ↓"
}

// mark draws a row, selected or not, w wide.
func (s *sweepsScreen) mark(selected bool, line string) string {
	if selected {
		return s.th.Selected.Render(fitLine("▸ "+line, s.w))
	}
	return fitLine("  "+line, s.w)
}

// foot is the prompt, or the last note, at the bottom.
func (s *sweepsScreen) foot() string {
	switch {
	case s.prompting:
		return "\n\n" + cut(s.input.View(), s.w) + s.noteLine()
	case s.note != "":
		return "\n" + s.noteLine()
	}
	return ""
}

func (s *sweepsScreen) noteLine() string {
	if s.note == "" {
		return ""
	}
	return "\n" + s.th.Warn.Render(wrapWords(s.note, s.w, 3))
}

func (s *sweepsScreen) viewTrials(sw *sweepSummary) string {
	th := s.th
	var b strings.Builder
	title := "Sweep " + sw.name
	if sw.spec != nil {
		title += th.Dim.Render(fmt.Sprintf(" · %s · %d trials · %s%s · best first", sw.spec.Method, len(sw.trials), sw.spec.Metric, arrow(sw.spec.Maximize())))
	}
	b.WriteString(th.Title.Render(cut(title, s.w)))
	var keys []string
	if sw.spec != nil {
		keys = sw.spec.Keys()
	}
	valW := 0
	if len(keys) > 0 {
		valW = max(min((s.w-62)/len(keys), 22), 8)
	}
	header := fitLine("TRIAL", 11)
	for _, k := range keys {
		header += fitLine(cut(shortKey(k), valW-1), valW)
	}
	header += fitLine("SEED", 6) + fitLine("STATE", 12) + fitLine("STEPS", 8) + fitLine("LAST", 10) + "BEST"
	b.WriteString("\n" + th.Heading.Render(fitLine("  "+header, s.w)))
	s.trials.follow(len(sw.trials), s.rows())
	for i := s.trials.offset; i < len(sw.trials) && i < s.trials.offset+s.rows(); i++ {
		t := sw.trials[i]
		line := fitLine(t.rec.Trial, 11)
		for _, k := range keys {
			line += fitLine(cut(paramValue(t.rec.Params[k]), valW-1), valW)
		}
		state := t.rec.State
		if t.rec.Reason != "" && state != sweep.Done {
			state += "*"
		}
		line += fitLine(fmt.Sprint(t.rec.Seed), 6) + fitLine(state, 12) + fitLine(steps(float64(t.steps)), 8) +
			fitLine(num(t.last), 10) + num(t.best)
		b.WriteString("\n" + s.mark(i == s.trials.cursor, line))
	}
	if len(sw.trials) > 0 && s.note == "" {
		if t := sw.trials[s.trials.cursor]; t.rec.Reason != "" { // why it was stopped, failed, …
			b.WriteString("\n\n" + th.Dim.Render(wrapWords(t.rec.Trial+": "+t.rec.Reason, s.w, 2)))
		}
	}
	return fit(b.String()+s.foot(), s.w, s.h)
}

// paramValue prints a trial's value of a key: numbers to four significant
// digits (a log-uniform draw has sixteen), the rest as TOML.
func paramValue(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
	return config.FormatValue(v)
}

// shortKey is a config key without its table when that is enough
// (ppo.learning_rate: learning_rate).
func shortKey(k string) string {
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[i+1:]
	}
	return k
}

func (s *sweepsScreen) Help() help.KeyMap {
	k := s.keys
	if s.prompting {
		start, cancel := k.Choose, k.Back
		start.SetHelp("enter", "check and start")
		cancel.SetHelp("esc", "cancel")
		return helpKeys{short: []key.Binding{start, cancel}}
	}
	if s.open != "" {
		open, back, overlay, stop := k.Choose, k.Back, k.Compare, k.StopRun
		open.SetHelp("enter", "open trial")
		back.SetHelp("esc", "sweeps")
		overlay.SetHelp("c", "overlay curves")
		stop.SetHelp("x", "stop trial")
		short := []key.Binding{open, overlay, stop, k.UseConfig, back, k.Screens, k.Quit, k.Help}
		return helpKeys{short: short, full: [][]key.Binding{{k.Up, k.Down, open, overlay}, {stop, k.UseConfig, back}, {k.Screens, k.Help, k.Quit}}}
	}
	open, newSweep := k.Choose, k.NewRun
	open.SetHelp("enter", "trials")
	newSweep.SetHelp("n", "new sweep")
	short := []key.Binding{open, newSweep, k.Refresh, k.Screens, k.Quit, k.Help}
	return helpKeys{short: short, full: [][]key.Binding{{k.Up, k.Down, open, newSweep, k.Refresh}, {k.Screens, k.Help, k.Quit}}}
}
