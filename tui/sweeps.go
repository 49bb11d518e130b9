package tui

import (
	"errors"
	"fmt"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/runs/sweep"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/control"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

const scrSweeps screenID = "sweeps"

// sweepSpecFile marks a sweep's directory.
const sweepSpecFile = sweep.SpecFile

// The sweeps screen: the sweeps under the runs directory (the directories
// `agenttrainer sweep` made, with their sweep.toml and sweep.jsonl) and, for
// one, its trials with their values, state, last and best metric, sorted by
// the metric. A whole sweep stops, resumes or goes (each asked first); a
// trial opens (its dashboard when it trains, its curves when not), the
// trials' curves overlay in the runs browser, a trial stops (asked first),
// and a trial's configuration goes into the editor. A new sweep starts from
// a spec file, checked here first.

// sweepsListKeys are the list of sweeps' bindings.
type sweepsListKeys struct {
	navKeys
	Open, New, Stop, Resume, Delete, Refresh key.Binding
}

func newSweepsListKeys() sweepsListKeys {
	return sweepsListKeys{navKeys: newNavKeys(),
		Open:    bind("enter", "trials", "enter"),
		New:     bind("n", "new sweep", "n"),
		Stop:    bind("x", "stop sweep", "x"),
		Resume:  bind("r", "resume sweep", "r"),
		Delete:  bind("d", "delete sweep", "d", "delete"),
		Refresh: bind("ctrl+r", "read again", "ctrl+r"),
	}
}

func (k sweepsListKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Open, k.New, k.Stop, k.Resume, k.Delete}
}

func (k sweepsListKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.navKeys.group(), {k.Open, k.New, k.Stop, k.Resume, k.Delete, k.Refresh}}
}

// trialKeys are a sweep's trial list's bindings.
type trialKeys struct {
	navKeys
	Open, Overlay, Stop, UseConfig, Back key.Binding
}

func newTrialKeys() trialKeys {
	return trialKeys{navKeys: newNavKeys(),
		Open:      bind("enter", "open trial", "enter"),
		Overlay:   bind("c", "overlay curves", "c"),
		Stop:      bind("x", "stop trial", "x"),
		UseConfig: bind("e", "config → editor", "e"),
		Back:      bind("esc", "sweeps", "esc"),
	}
}

func (k trialKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Open, k.Overlay, k.Stop, k.UseConfig, k.Back}
}

func (k trialKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.navKeys.group(), k.ShortHelp()}
}

type (
	sweepsReadMsg struct {
		gen    int
		sweeps []sweepSummary
		err    error
	}
	sweepsTickMsg   struct{ gen int }
	sweepStartedMsg struct {
		spec string
		err  error
	}
	// sweepDoneMsg says how an action on a sweep or a trial went.
	sweepDoneMsg struct {
		what string // "asked trial-003 of lr to stop"
		err  error
	}
	// useConfigMsg puts a trial's configuration in the draft.
	useConfigMsg struct {
		cfg  config.Config
		from string
	}
)

func (u useConfigMsg) apply(m *Model) tea.Cmd {
	if err := m.sh.draft.replace(u.cfg, u.from); err != nil {
		return m.deliver(scrSweeps, sweepDoneMsg{err: err})
	}
	return gotoMsg{to: scrEditor, msg: openEditorMsg{}}.apply(m)
}

// sweepSummary is one sweep as read from its directory.
type sweepSummary struct {
	dir, name string
	spec      *sweep.Spec
	trials    []trialRow
	running   bool // its sweep process is alive
	live      int  // trials training now
	err       error
}

// trialRow is a trial with its figures read from its run directory.
type trialRow struct {
	rec        *sweep.Record
	last, best float64 // the metric; NaN before its first value
	steps      int64
}

// handStopped is the reason the sweep gives a trial stopped from outside
// (here, or with `agenttrainer attach`): not early stopping's doing.
const handStopped = "stopped from outside the sweep"

// counts is how many trials are in each column of the list: done,
// running, cut by early stopping, stopped otherwise (by hand, cancelled,
// interrupted with the sweep), failed.
func (s sweepSummary) counts() (done, run, cut, stop, fail int) {
	for _, t := range s.trials {
		switch r := t.rec; {
		case r.State == sweep.Done:
			done++
		case r.State == sweep.Running:
			run++
		case r.State == sweep.Stopped && r.Reason != handStopped:
			cut++
		case r.State == sweep.Failed:
			fail++
		case r.State != sweep.Pending:
			stop++
		}
	}
	return
}

// sweepDirs lists the directories under runsDir that hold a sweep.
func sweepDirs(runsDir string) []string {
	entries, _ := os.ReadDir(runsDir)
	var out []string
	for _, e := range entries {
		if dir := filepath.Join(runsDir, e.Name()); e.IsDir() && isSweepDir(dir) {
			out = append(out, dir)
		}
	}
	return out
}

// readSweeps reads every sweep under runsDir, newest first, each trial's
// figures from its metrics, and whether its process and trials live.
func readSweeps(runsDir string, gen int, host Host) tea.Cmd {
	return func() tea.Msg {
		if _, err := os.Stat(runsDir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return sweepsReadMsg{gen: gen, err: err}
		}
		var out []sweepSummary
		for _, dir := range sweepDirs(runsDir) {
			s := readSweep(dir)
			s.running = host.SweepRunning(dir)
			for _, t := range s.trials {
				if t.rec.State == sweep.Running && host.Live(t.rec.Dir) {
					s.live++
				}
			}
			out = append(out, s)
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].name > out[j].name })
		return sweepsReadMsg{gen: gen, sweeps: out}
	}
}

func readSweep(dir string) sweepSummary {
	s := sweepSummary{dir: dir, name: termtext.Clean(filepath.Base(dir))}
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

// sweepAsk is a question the screen awaits y or n for.
type sweepAsk struct {
	text string
	act  func() tea.Cmd
}

type sweepsScreen struct {
	sh         *shared
	th         *theme
	keys       sweepsListKeys
	trialKeys  trialKeys
	promptKeys textKeys
	askKeys    confirmKeys
	gen        int
	shown      bool
	w, h       int

	sweeps  []sweepSummary
	err     error
	loading bool
	listCursor
	open      string // the sweep whose trials show; "" for the list
	trials    listCursor
	trial     string // the trial under the cursor: it keeps it as the list re-sorts
	prompting bool
	input     promptInput
	lastSpec  string
	ask       *sweepAsk
	note      string
}

func newSweepsScreen(sh *shared) Screen {
	in := newPromptInput(sh.th, "spec file: ", "sweep.toml (see README: Sweeps)")
	in.CharLimit = 4096
	return &sweepsScreen{sh: sh, th: sh.th, keys: newSweepsListKeys(), trialKeys: newTrialKeys(),
		promptKeys: newTextKeys("check and start", "cancel"), askKeys: newConfirmKeys("yes", "no"), input: in}
}

func (s *sweepsScreen) Init() tea.Cmd   { return nil }
func (s *sweepsScreen) Title() string   { return "sweeps" }
func (s *sweepsScreen) Capturing() bool { return s.prompting }
func (s *sweepsScreen) SetSize(w, h int) {
	s.w, s.h = w, h
}

// Focus reads the sweeps again when the screen is shown, and looks again
// every second while it is.
func (s *sweepsScreen) Focus() tea.Cmd {
	s.shown = true
	s.gen++
	s.loading = true
	return readSweeps(s.sh.runsDir, s.gen, s.sh.host)
}

// Blur stops looking.
func (s *sweepsScreen) Blur() { s.shown = false }

func (s *sweepsScreen) tick() tea.Cmd {
	if !s.shown || s.sh.refresh < 0 {
		return nil
	}
	gen := s.gen
	every := min(s.sh.refresh, time.Second)
	return tea.Tick(every, func(time.Time) tea.Msg { return sweepsTickMsg{gen: gen} })
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

// follow keeps the trial cursor on the trial it was on, wherever the
// trial moved in the order.
func (s *sweepsScreen) follow() {
	cur := s.current()
	if cur == nil {
		return
	}
	for i, t := range cur.trials {
		if t.rec.Trial == s.trial {
			s.trials.cursor = i
			return
		}
	}
	s.trials.cursor = min(s.trials.cursor, max(len(cur.trials)-1, 0))
	s.remember()
}

// remember notes the trial under the cursor.
func (s *sweepsScreen) remember() {
	if cur := s.current(); cur != nil && s.trials.cursor < len(cur.trials) {
		s.trial = cur.trials[s.trials.cursor].rec.Trial
	}
}

func (s *sweepsScreen) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case sweepsReadMsg:
		if msg.gen != s.gen {
			return nil
		}
		s.sweeps, s.err, s.loading = msg.sweeps, msg.err, false
		s.cursor = min(s.cursor, max(len(s.sweeps)-1, 0))
		s.follow()
		return s.tick()
	case sweepsTickMsg:
		if msg.gen != s.gen || !s.shown {
			return nil
		}
		return readSweeps(s.sh.runsDir, s.gen, s.sh.host)
	case sweepStartedMsg:
		if msg.err != nil {
			s.note = "not started: " + msg.err.Error()
		} else {
			s.note = "started the sweep of " + msg.spec + "; its trials appear as they start"
		}
		return nil
	case sweepDoneMsg:
		if msg.err != nil {
			s.note = "cannot: " + msg.err.Error()
		} else {
			s.note = msg.what
		}
		return nil
	case launchFailedMsg:
		s.note = "cannot attach: " + msg.err.Error()
		return nil
	case tea.KeyMsg:
		if s.prompting {
			return s.updatePrompt(msg)
		}
		if s.ask != nil {
			ask := s.ask
			s.ask = nil
			if key.Matches(msg, s.askKeys.Yes) {
				return ask.act()
			}
			s.note = ""
			return nil
		}
		s.note = ""
		if s.open != "" {
			return s.updateTrials(msg)
		}
		return s.updateList(msg)
	default:
		if s.prompting {
			return s.input.update(msg)
		}
	}
	return nil
}

func (s *sweepsScreen) updateList(msg tea.KeyMsg) tea.Cmd {
	k := s.keys
	host := s.sh.host
	switch {
	case s.move(k.navKeys, msg, len(s.sweeps), s.rows()):
	case key.Matches(msg, k.New):
		s.prompting = true
		s.input.fill(s.lastSpec)
		return s.input.Focus()
	case key.Matches(msg, k.Refresh):
		return s.Focus()
	case len(s.sweeps) == 0:
	case key.Matches(msg, k.Open):
		s.open, s.trials, s.trial = s.sweeps[s.cursor].dir, listCursor{}, ""
		s.remember()
	case key.Matches(msg, k.Stop):
		sw := s.sweeps[s.cursor]
		if !sw.running {
			s.note = sw.name + " is not running"
			return nil
		}
		dir, name := sw.dir, sw.name
		s.ask = &sweepAsk{text: fmt.Sprintf("Stop the sweep %s? Its %s stop with a checkpoint; r resumes it.", name, plural(sw.live, "running trial", "running trials")),
			act: func() tea.Cmd {
				return func() tea.Msg {
					return sweepDoneMsg{what: "asked the sweep " + name + " to stop; its trials write their checkpoints", err: host.StopSweep(dir)}
				}
			}}
	case key.Matches(msg, k.Resume):
		sw := s.sweeps[s.cursor]
		if sw.running {
			s.note = sw.name + " is running already"
			return nil
		}
		dir, name := sw.dir, sw.name
		return func() tea.Msg {
			return sweepDoneMsg{what: "resumed the sweep " + name + "; finished trials are kept", err: host.ResumeSweep(dir)}
		}
	case key.Matches(msg, k.Delete):
		sw := s.sweeps[s.cursor]
		if sw.running || sw.live > 0 {
			s.note = "not deleted: " + sw.name + " is running; stop it first (x)"
			return nil
		}
		dir, name := sw.dir, sw.name
		s.ask = &sweepAsk{text: fmt.Sprintf("Delete the sweep %s and its %s, with all their files?", name, plural(len(sw.trials), "trial", "trials")),
			act: func() tea.Cmd {
				return func() tea.Msg {
					return sweepDoneMsg{what: "deleted the sweep " + name, err: deleteSweep(dir, host.Live)}
				}
			}}
	}
	return nil
}

// deleteSweep removes a sweep's directory, each trial's as runstore.Delete
// would (never one that trains).
func deleteSweep(dir string, live func(string) bool) error {
	if !isSweepDir(dir) {
		return fmt.Errorf("%s holds no sweep (no %s); not deleting it", dir, sweepSpecFile)
	}
	recs, _ := sweep.ReadResults(dir)
	for _, r := range recs {
		if live(r.Dir) {
			return fmt.Errorf("%s is training; stop the sweep first", r.Trial)
		}
		if runstore.IsRunDir(r.Dir) {
			if err := runstore.Delete(r.Dir); err != nil {
				return err
			}
		}
	}
	return os.RemoveAll(dir)
}

func (s *sweepsScreen) updateTrials(msg tea.KeyMsg) tea.Cmd {
	k := s.trialKeys
	cur := s.current()
	if cur == nil {
		s.open = ""
		return nil
	}
	if key.Matches(msg, k.Back) {
		s.open = ""
		return nil
	}
	if s.trials.move(k.navKeys, msg, len(cur.trials), s.rows()) || len(cur.trials) == 0 {
		s.remember()
		return nil
	}
	t := cur.trials[s.trials.cursor]
	dir, host := t.rec.Dir, s.sh.host
	switch {
	case key.Matches(msg, k.Open):
		running := t.rec.State == sweep.Running
		return func() tea.Msg {
			if running && host.Live(dir) {
				return attachRunMsg{dir: dir, from: scrSweeps}
			}
			return gotoMsg{to: scrRuns, msg: showRunsMsg{dirs: []string{dir}}}
		}
	case key.Matches(msg, k.Overlay):
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
		return send(gotoMsg{to: scrRuns, msg: showRunsMsg{dirs: dirs}})
	case key.Matches(msg, k.Stop):
		if t.rec.State != sweep.Running {
			s.note = t.rec.Trial + " is not running (" + t.rec.State + ")"
			return nil
		}
		name := t.rec.Trial + " of " + cur.name
		s.ask = &sweepAsk{text: "Stop " + name + "? It writes a checkpoint; the sweep goes on with the others.",
			act: func() tea.Cmd {
				return func() tea.Msg {
					c, err := control.Dial(dir)
					if err != nil {
						return sweepDoneMsg{err: errors.New(name + " is not training now")}
					}
					defer c.Close()
					c.Stop()
					return sweepDoneMsg{what: "asked " + name + " to stop; the sweep records it as stopped"}
				}
			}}
	case key.Matches(msg, k.UseConfig):
		from := t.rec.Trial + " of " + cur.name
		return func() tea.Msg {
			cfg, err := runstore.ReadConfig(dir)
			if err != nil {
				return sweepDoneMsg{err: fmt.Errorf("cannot read its config: %w", err)}
			}
			return useConfigMsg{cfg: cfg, from: from}
		}
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
		s.note = ""
		return nil
	case tea.KeyEnter:
		spec := strings.TrimSpace(s.input.Value())
		if spec == "" {
			s.note = "type the path of a sweep spec (a TOML file; see README: Sweeps), or esc"
			return nil
		}
		s.lastSpec = spec
		if _, err := sweep.Prepare(sweep.Options{Spec: spec, Overrides: []string{"trainer.runs_dir=" + s.sh.runsDir}}); err != nil {
			s.note = "not started: " + err.Error()
			return nil
		}
		s.prompting = false
		s.input.Blur()
		host, runsDir := s.sh.host, s.sh.runsDir
		return func() tea.Msg { return sweepStartedMsg{spec: spec, err: host.StartSweep(spec, runsDir)} }
	}
	s.note = ""
	return s.input.update(msg)
}

func (s *sweepsScreen) rows() int { return max(s.h-4, 1) }

func (s *sweepsScreen) View() string {
	th := s.th
	if cur := s.current(); cur != nil {
		return s.viewTrials(cur)
	}
	head := th.Title.Render("Sweeps in "+s.sh.runsDir) + th.Dim.Render(fmt.Sprintf(" · %d", len(s.sweeps)))
	var b strings.Builder
	switch {
	case s.err != nil:
		b.WriteString(th.Bad.Render(s.err.Error()))
	case s.loading && len(s.sweeps) == 0:
		b.WriteString(th.Dim.Render("reading the sweeps…"))
	case len(s.sweeps) == 0:
		b.WriteString(th.Dim.Render(wrapWords("No sweep yet. n starts one from a spec file (as `agenttrainer sweep SPEC.toml` does); its trials run in processes of their own.", s.w, 3)))
	default:
		nameW := max(min(s.w-60, 40), 12)
		b.WriteString(th.Heading.Render(fitLine("  "+fitLine("NAME", nameW)+fitLine("METHOD", 8)+fitLine("TRIALS", 7)+
			fitLine("DONE", 5)+fitLine("RUN", 4)+fitLine("CUT", 4)+fitLine("STOP", 5)+fitLine("FAIL", 5)+"BEST", s.w)))
		s.listCursor.follow(len(s.sweeps), s.rows())
		for i := s.offset; i < len(s.sweeps) && i < s.offset+s.rows(); i++ {
			sw := s.sweeps[i]
			name := sw.name
			if sw.running {
				name = string(liveMark) + " " + name
			}
			line := fitLine(cut(name, nameW-1), nameW)
			if sw.err != nil || sw.spec == nil {
				line += th.Warn.Render(cut("! "+fmt.Sprint(sw.err), max(s.w-nameW-2, 1)))
			} else {
				done, run, cutN, stop, fail := sw.counts()
				best := "-"
				if len(sw.trials) > 0 && !math.IsNaN(sw.trials[0].best) {
					best = num(sw.trials[0].best) + " " + sw.spec.Metric + arrow(sw.spec.Maximize())
				}
				line += fitLine(sw.spec.Method, 8) + fitLine(fmt.Sprint(len(sw.trials)), 7) + fitLine(fmt.Sprint(done), 5) +
					fitLine(fmt.Sprint(run), 4) + fitLine(fmt.Sprint(cutN), 4) + fitLine(fmt.Sprint(stop), 5) +
					fitLine(fmt.Sprint(fail), 5) + best
			}
			b.WriteString("\n" + s.mark(i == s.cursor, line))
		}
	}
	return fit(head+"\n"+b.String()+s.foot(), s.w, s.h)
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

// foot is the question, the prompt, or the last note, at the bottom.
func (s *sweepsScreen) foot() string {
	switch {
	case s.ask != nil:
		return "\n\n" + s.th.Bad.Render(wrapWords(s.ask.text, s.w, 2)) + "\n" + s.th.Dim.Render("y: yes · n: no")
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
		state := "stopped"
		if sw.running {
			state = "running"
		}
		title += th.Dim.Render(fmt.Sprintf(" · %s · %s · %s · %s%s · best first", state, sw.spec.Method,
			plural(len(sw.trials), "trial", "trials"), sw.spec.Metric, arrow(sw.spec.Maximize())))
	}
	b.WriteString(th.Title.Render(cut(title, s.w)))
	var keys []string
	if sw.spec != nil {
		keys = sw.spec.Keys()
	}
	// Columns as wide as what they hold; the parameters share what is left.
	const trialW, seedW = 11, 6
	stateW, stepsW, lastW, bestW := len("STATE")+1, len("STEPS")+1, len("LAST")+1, len("BEST")
	for _, t := range sw.trials {
		stateW = max(stateW, len(trialState(t))+1)
		stepsW = max(stepsW, len(steps(float64(t.steps)))+1)
		lastW = max(lastW, len(num(t.last))+1)
		bestW = max(bestW, len(num(t.best)))
	}
	valW := 0
	if len(keys) > 0 {
		valW = max(min((s.w-2-trialW-seedW-stateW-stepsW-lastW-bestW)/len(keys), 22), 6)
	}
	header := fitLine("TRIAL", trialW)
	for _, k := range keys {
		header += fitLine(cut(shortKey(k), valW-1), valW)
	}
	header += fitLine("SEED", seedW) + fitLine("STATE", stateW) + fitLine("STEPS", stepsW) + fitLine("LAST", lastW) + "BEST"
	b.WriteString("\n" + th.Heading.Render(fitLine("  "+header, s.w)))
	s.trials.follow(len(sw.trials), s.rows())
	for i := s.trials.offset; i < len(sw.trials) && i < s.trials.offset+s.rows(); i++ {
		t := sw.trials[i]
		line := fitLine(t.rec.Trial, trialW)
		for _, k := range keys {
			line += fitLine(cut(paramValue(t.rec.Params[k]), valW-1), valW)
		}
		line += fitLine(fmt.Sprint(t.rec.Seed), seedW) + fitLine(trialState(t), stateW) + fitLine(steps(float64(t.steps)), stepsW) +
			fitLine(num(t.last), lastW) + num(t.best)
		b.WriteString("\n" + s.mark(i == s.trials.cursor, line))
	}
	if len(sw.trials) > 0 && s.note == "" && s.ask == nil {
		if t := sw.trials[s.trials.cursor]; t.rec.Reason != "" { // why it was stopped, failed, …
			b.WriteString("\n\n" + th.Dim.Render(wrapWords(t.rec.Trial+": "+t.rec.Reason, s.w, 2)))
		}
	}
	return fit(b.String()+s.foot(), s.w, s.h)
}

// trialState is a trial's state, * when it has a reason to read.
func trialState(t trialRow) string {
	state := t.rec.State
	if t.rec.Reason != "" && state != sweep.Done {
		state += "*"
	}
	return state
}

// paramValue prints a value compactly: numbers to four significant digits
// (a log-uniform draw has sixteen), the rest as TOML.
func paramValue(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
	return formatValue(v)
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
	switch {
	case s.prompting:
		return s.promptKeys
	case s.ask != nil:
		return s.askKeys
	case s.open != "":
		return s.trialKeys
	}
	return s.keys
}

func (s *sweepsScreen) KeyMaps() []help.KeyMap {
	return []help.KeyMap{s.keys, s.trialKeys, s.promptKeys, s.askKeys}
}
