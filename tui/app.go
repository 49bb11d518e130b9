package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/internal/sweep"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Options configure the app.
type Options struct {
	// Config is the starting config (defaults, a config file, overrides).
	Config config.Config
	// Launch starts runs; nil means Local(context.Background(), …).
	Launch Launcher
	// Registry lists environments and agents; nil means the package
	// registries (tests pass fixed lists).
	Registry func() ([]EnvChoice, []AgentChoice)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// StartSweep starts a sweep in a process of its own (the sweeps
	// screen's n); nil: the app cannot start one.
	StartSweep SweepStarter
	// Redraw is the interval at which the dashboard takes in events and
	// redraws; 0 means 100 ms.
	Redraw time.Duration
	// Attach opens the app on a run that is already training (in another
	// process, say) instead of the picker; what it did before is read back
	// from its run directory.
	Attach *Link
	// Detachable says the runs live in processes of their own (started by
	// Launch, or attached to), so the app may leave them training: D, or d
	// when asked whether to stop.
	Detachable bool
	// Resolve builds the config for a picked environment and agent: the
	// env's preset under the user's config file and overrides. nil means
	// the preset alone (config.ForEnv).
	Resolve func(envID, agent string) (config.Config, error)
	// AttachTo connects the app to the training that runs in runDir (in a
	// process of its own): the runs browser's attach key opens the
	// dashboard on it, as Attach does at start. nil: the browser marks live
	// runs but cannot attach to them.
	AttachTo func(runDir string) (*Link, error)
	// Live reports whether a training answers in runDir; the runs browser
	// asks it from a tea.Cmd, for every run it lists. nil means dialling the
	// run's control socket (LiveControl).
	Live func(runDir string) bool
	// RunsRefresh is how often the runs browser looks again for new runs
	// and for trainings that started or ended, while it shows its list; 0
	// means 2 s, a negative value never.
	RunsRefresh time.Duration
	// Background lists the runs under a runs directory whose training
	// answers right now (started earlier, in the background); the app
	// attaches to them at start (with AttachTo) and says so. nil: none.
	Background func(runsDir string) []string
	// Cores is how many runs may train at once before each new one is
	// given trainer.threads=1; 0 means runtime.NumCPU().
	Cores int
	// Renderer draws the app's styles: an SSH session passes one for its
	// own terminal (colour profile, dark or light background). nil means
	// lipgloss's default renderer, for this process's terminal.
	Renderer *lipgloss.Renderer
}

// confirmKind is a question awaiting y or n.
type confirmKind int

const (
	confirmNone confirmKind = iota
	confirmQuit             // stop the trainings and quit
	confirmStop             // stop one training, stay in the app
)

// Messages of the root model.
type (
	// eventsMsg is every event that arrived since the last poll.
	eventsMsg struct {
		run    int // which run they belong to
		events []trainer.Event
		closed bool // the stream ended
	}
	// launchedMsg is the result of starting a run.
	launchedMsg struct {
		link       *Link
		info       trainer.Info
		err        error
		attached   bool // the run was already going
		fromRuns   bool // asked for in the runs browser (attach key)
		background bool // found training at start-up: not shown at once
	}
	// backgroundMsg lists the runs found training at start-up.
	backgroundMsg struct{ runs []launchedMsg }
	// backfillMsg is an attached run's history, read from its directory.
	backfillMsg struct {
		run     int
		metrics []trainer.Metrics
		edits   []trainer.Edit
	}
	// liveConfigMsg carries a run's running config for the live editor.
	liveConfigMsg struct {
		run int
		cfg config.Config
	}
	// interruptMsg is a signal to stop (SIGTERM, or SIGINT from outside).
	interruptMsg struct{}
)

// Model is the app's root model: it routes messages to the active screen,
// holds what the screens share (size, theme, keys, the runs) and the keys
// that work everywhere.
type Model struct {
	opts    Options
	th      theme
	keys    keyMap
	help    help.Model
	sh      *shared
	runs    runSet
	chart   chartOpts // the viewer's chart choices, shared by the screens
	w, h    int
	screens [numScreens]Screen
	active  int
	back    int // where esc from the runs browser returns

	cfg       config.Config // the config the next run starts from
	starting  bool
	confirm   confirmKind // what the user is asked to confirm
	stopRun   int         // the run confirmStop is about
	quitting  bool        // stopping the trainings, then quitting
	note      string
	threadsOf string // why the last run got trainer.threads=1
	result    Result
}

// Result is how the app ended, for the command line to report.
type Result struct {
	// Detached is set when the app left the training running.
	Detached bool
	RunDir   string
	State    string // "" when no run was started
	Steps    int64
	Return   float64
	Err      error
}

// New builds the app.
func New(opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Redraw <= 0 {
		opts.Redraw = 100 * time.Millisecond
	}
	if opts.Launch == nil {
		opts.Launch = Local(context.Background(), trainer.Options{})
	}
	if opts.Registry == nil {
		opts.Registry = Registry
	}
	if opts.Config.Env.ID == "" {
		opts.Config = config.Default()
	}
	if opts.Live == nil {
		opts.Live = LiveControl
	}
	if opts.RunsRefresh == 0 {
		opts.RunsRefresh = 2 * time.Second
	}
	if opts.Cores <= 0 {
		opts.Cores = runtime.NumCPU()
	}
	m := &Model{opts: opts, th: defaultTheme(opts.Renderer), keys: defaultKeys(), help: help.New(), cfg: opts.Config.Clone()}
	m.help.ShortSeparator = " · "
	m.help.Styles = m.th.helpStyles()
	m.chart = defaultChartOpts()
	m.sh = &shared{th: &m.th, keys: &m.keys, runs: &m.runs, chart: &m.chart, runsDir: m.cfg.Trainer.RunsDir, now: opts.Now, detachable: m.canDetach}
	m.screens[scrPicker] = newPicker(m.sh, m.cfg.Env.ID, m.cfg.Agent.Name)
	m.screens[scrEditor] = newEditor(m.sh, m.cfg, m.cfg.Env.ID+" · "+m.cfg.Agent.Name)
	m.screens[scrDashboard] = newDashboard(m.sh)
	m.screens[scrRuns] = newRunsBrowser(m.sh, opts.Live, opts.RunsRefresh)
	m.screens[scrWatch] = newWatcher(m.sh)
	m.screens[scrSweeps] = newSweepsScreen(m.sh, opts.StartSweep)
	return m
}

// resolve is the config a run on envID with agent starts from.
func (m *Model) resolve(envID, agent string) (config.Config, error) {
	if m.opts.Resolve != nil {
		return m.opts.Resolve(envID, agent)
	}
	cfg, err := config.ForEnv(envID)
	cfg.Agent.Name = agent
	return cfg, err
}

// Result reports how the app ended.
func (m *Model) Result() Result { return m.result }

// Interrupt is a message that stops the training (if any) and quits, for
// signals that arrive from outside the terminal.
func Interrupt() tea.Msg { return interruptMsg{} }

func (m *Model) Init() tea.Cmd {
	reg := m.opts.Registry
	cmds := []tea.Cmd{func() tea.Msg {
		es, as := reg()
		return registryMsg{envs: es, agents: as}
	}}
	for _, sc := range m.screens {
		cmds = append(cmds, sc.Init())
	}
	if link := m.opts.Attach; link != nil {
		cmds = append(cmds, func() tea.Msg {
			return launchedMsg{link: link, info: link.Trainer.Info(), attached: true}
		})
	}
	if find, attach := m.opts.Background, m.opts.AttachTo; find != nil && attach != nil {
		dir, skip := m.cfg.Trainer.RunsDir, ""
		if m.opts.Attach != nil {
			skip = m.opts.Attach.Trainer.Info().RunDir
		}
		cmds = append(cmds, func() tea.Msg {
			var msg backgroundMsg
			for _, d := range find(dir) {
				if skip != "" && cleanPath(d) == cleanPath(skip) {
					continue
				}
				if link, err := attach(d); err == nil {
					msg.runs = append(msg.runs, launchedMsg{link: link, info: link.Trainer.Info(), attached: true, background: true})
				}
			}
			return msg
		})
	}
	return tea.Batch(cmds...)
}

func (m *Model) screen() Screen { return m.screens[m.active] }

// show makes screen i the active one.
func (m *Model) show(i int) tea.Cmd {
	if i == m.active {
		return nil
	}
	if i == scrRuns && m.active != scrWatch {
		m.back = m.active
	}
	m.active = i
	m.resize()
	if f, ok := m.screens[i].(focuser); ok {
		return f.Focus()
	}
	return nil
}

// setCfg changes the config the next run starts from.
func (m *Model) setCfg(cfg config.Config) {
	m.cfg = cfg
	m.sh.runsDir = cfg.Trainer.RunsDir
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.help.Width = msg.Width
		m.resize()
		return m, nil
	case registryMsg:
		return m, m.screens[scrPicker].Update(msg)
	case tea.KeyMsg:
		// Keys typed quickly (or sent by a script) arrive as one message
		// with several runes; take them one at a time so that "/total"
		// opens the filter and then types into it.
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !(msg.Paste && m.capturing()) {
			var cmds []tea.Cmd
			for _, r := range msg.Runes {
				cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
			}
			return m, tea.Batch(cmds...)
		}
		return m, m.key(msg)
	case pickedMsg:
		if msg.env != m.cfg.Env.ID || msg.agent != m.cfg.Agent.Name {
			cfg, err := m.resolve(msg.env, msg.agent)
			if err != nil {
				m.note = fmt.Sprintf("cannot use %s with %s: %v", msg.env, msg.agent, err)
				return m, nil
			}
			m.note = carryEdits(m.cfg, &cfg)
			m.setCfg(cfg)
		}
		if msg.start {
			return m, m.start(m.cfg)
		}
		cmd := m.screens[scrEditor].Update(openEditorMsg{cfg: m.cfg, title: msg.env + " · " + msg.agent})
		return m, tea.Batch(cmd, m.show(scrEditor))
	case draftMsg:
		m.setCfg(msg.cfg)
		return m, nil
	case startMsg:
		m.setCfg(msg.cfg.Clone())
		return m, m.start(msg.cfg)
	case launchedMsg:
		return m, m.launched(msg)
	case backgroundMsg:
		var cmds []tea.Cmd
		for _, l := range msg.runs {
			cmds = append(cmds, m.launched(l))
		}
		return m, tea.Batch(cmds...)
	case eventsMsg:
		return m, m.events(msg)
	case backfillMsg:
		if r := m.runs.byID(msg.run); r != nil {
			r.backfill(msg.metrics, msg.edits)
		}
		return m, nil
	case closeEditorMsg:
		if m.active != scrEditor {
			return m, nil
		}
		if msg.live {
			return m, m.show(scrDashboard)
		}
		cmd := m.screens[scrPicker].Update(pickerResetMsg{env: m.cfg.Env.ID, agent: m.cfg.Agent.Name})
		return m, tea.Batch(cmd, m.show(scrPicker))
	case newRunMsg:
		cmd := m.screens[scrPicker].Update(pickerResetMsg{env: m.cfg.Env.ID, agent: m.cfg.Agent.Name})
		return m, tea.Batch(cmd, m.show(scrPicker))
	case openLiveEditorMsg:
		r := m.runs.byID(msg.run)
		if r == nil || !r.active() {
			return m, nil
		}
		t, id := r.t, r.id
		return m, func() tea.Msg { return liveConfigMsg{run: id, cfg: t.Config()} }
	case liveConfigMsg:
		r := m.runs.byID(msg.run)
		if r == nil || !r.active() {
			return m, nil
		}
		cmd := m.screens[scrEditor].Update(openEditorMsg{cfg: msg.cfg, live: r.t, title: r.info.EnvID + " · " + r.info.Agent})
		return m, tea.Batch(cmd, m.show(scrEditor))
	case askStopMsg:
		if r := m.runs.byID(msg.run); r != nil && r.active() {
			m.confirm, m.stopRun = confirmStop, msg.run
			m.resize()
		}
		return m, nil
	case editDoneMsg, liveEndedMsg:
		return m, m.screens[scrEditor].Update(msg)
	case runsListedMsg, runsLoadedMsg, runsSummarizedMsg, metaSavedMsg, runDeletedMsg, runDetailMsg, exportedMsg:
		return m, m.screens[scrRuns].Update(msg)
	case runsTickMsg:
		if m.active != scrRuns {
			return m, nil // the browser was left: it stops looking
		}
		return m, m.screens[scrRuns].Update(msg)
	case attachRunMsg:
		return m, m.attachRun(msg.dir)
	case watchRunMsg:
		return m, tea.Batch(m.screens[scrWatch].Update(msg), m.show(scrWatch))
	case watchTickMsg:
		return m, m.screens[scrWatch].Update(msg)
	case closeWatchMsg:
		return m, m.show(scrRuns)
	case sweepsReadMsg, sweepStartedMsg, trialStoppedMsg:
		return m, m.screens[scrSweeps].Update(msg)
	case sweepsTickMsg:
		if m.active != scrSweeps {
			return m, nil // the screen was left: it stops looking
		}
		return m, m.screens[scrSweeps].Update(msg)
	case showRunsMsg:
		show := m.show(scrRuns)
		return m, tea.Batch(show, m.screens[scrRuns].Update(msg))
	case useConfigMsg:
		m.setCfg(msg.cfg)
		m.note = "the configuration of " + msg.from + " is in the editor: s starts a run with it"
		cmd := m.screens[scrEditor].Update(openEditorMsg{cfg: m.cfg, title: m.cfg.Env.ID + " · " + m.cfg.Agent.Name + " · from " + msg.from})
		return m, tea.Batch(cmd, m.show(scrEditor))
	case closeRunsMsg:
		back := m.back
		if back == scrRuns || back == scrWatch {
			back = scrPicker
		}
		return m, m.show(back)
	case interruptMsg:
		if m.runs.active() > 0 {
			m.quitting = true
			return m, m.stopAll()
		}
		return m, m.quit()
	}
	return m, nil
}

// runsDirOf is the runs directory a run belongs to: its parent, or, for a
// sweep's trial (runs/<sweep>/trial-003), the sweep's parent, so that new
// runs do not land among the trials.
func runsDirOf(runDir string) string {
	parent := filepath.Dir(runDir)
	if _, err := os.Stat(filepath.Join(parent, sweep.SpecFile)); err == nil {
		return filepath.Dir(parent)
	}
	return parent
}

// stopAll asks every live run to stop.
func (m *Model) stopAll() tea.Cmd {
	var cmds []tea.Cmd
	for _, r := range m.runs.runs {
		cmds = append(cmds, r.stop())
	}
	return tea.Batch(cmds...)
}

// key handles the keys that work everywhere, then hands the rest to the
// active screen.
func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := &m.keys
	if m.quitting {
		if key.Matches(msg, k.ForceQuit) {
			m.note = "quit without waiting for the trainer"
			return m.quit()
		}
		return nil
	}
	if m.confirm != confirmNone {
		ask := m.confirm
		switch {
		case ask == confirmQuit && m.canDetach() && (key.Matches(msg, k.Detach) || msg.String() == "d"):
			return m.detach()
		case key.Matches(msg, k.Yes), key.Matches(msg, k.ForceQuit):
			m.confirm = confirmNone
			m.resize()
			if ask == confirmQuit {
				m.quitting = true
				return m.stopAll()
			}
			if r := m.runs.byID(m.stopRun); r != nil {
				return r.stop()
			}
		case key.Matches(msg, k.No):
			m.confirm = confirmNone
			m.resize()
		}
		return nil
	}
	if m.capturing() {
		if key.Matches(msg, k.ForceQuit) {
			return m.askQuit()
		}
		return m.toScreen(msg)
	}
	switch {
	case m.canDetach() && m.runs.active() > 0 && key.Matches(msg, k.Detach):
		return m.detach()
	case key.Matches(msg, k.ForceQuit), key.Matches(msg, k.Quit):
		return m.askQuit()
	case key.Matches(msg, k.Help):
		m.help.ShowAll = !m.help.ShowAll
		m.resize()
		return nil
	case key.Matches(msg, k.Screens):
		return m.show(int(msg.Runes[0] - '1'))
	case key.Matches(msg, k.NextTab):
		return m.show((m.tab() + 1) % tabs)
	case key.Matches(msg, k.PrevTab):
		return m.show((m.tab() + tabs - 1) % tabs)
	case key.Matches(msg, k.Runs) && m.active != scrRuns:
		return m.show(scrRuns)
	}
	return m.toScreen(msg)
}

// toScreen hands a key to the active screen and resizes the screens when
// the key help it shows changes height (a mode with fewer keys).
func (m *Model) toScreen(msg tea.KeyMsg) tea.Cmd {
	before := m.bodyHeight()
	cmd := m.screen().Update(msg)
	if m.bodyHeight() != before {
		m.resize()
	}
	return cmd
}

// tab is the tab the active screen belongs to.
func (m *Model) tab() int {
	if m.active == scrWatch {
		return scrRuns // watching is part of the runs browser
	}
	return m.active
}

func (m *Model) askQuit() tea.Cmd {
	if n := m.runs.active(); n > 0 {
		m.confirm = confirmQuit
		m.resize()
		return nil
	}
	return m.quit()
}

func (m *Model) capturing() bool { return m.screen().Capturing() }

// canDetach says whether the app may leave its live runs training: they
// live in processes of their own.
func (m *Model) canDetach() bool {
	if m.opts.Detachable {
		return true
	}
	for _, r := range m.runs.runs {
		if r.active() && !r.attached {
			return false
		}
	}
	return len(m.runs.runs) > 0
}

// attachRun shows the training that runs in dir, attaching to it the way
// Options.Attach does at start when the app does not watch it yet.
func (m *Model) attachRun(dir string) tea.Cmd {
	if r := m.runs.byDir(dir); r != nil && r.active() {
		m.runs.focus = r.id // already watching it
		return m.show(scrDashboard)
	}
	switch {
	case m.opts.AttachTo == nil:
		return m.screens[scrRuns].Update(runsProblemMsg{"this app cannot attach to runs; `agenttrainer attach " + dir + "` can"})
	case m.starting:
		return nil
	}
	m.starting = true
	m.note = "attaching…"
	attach := m.opts.AttachTo
	return func() tea.Msg {
		link, err := attach(dir)
		if err != nil {
			return launchedMsg{err: err, attached: true, fromRuns: true}
		}
		return launchedMsg{link: link, info: link.Trainer.Info(), attached: true, fromRuns: true}
	}
}

// detach quits and leaves the trainings running in their own processes.
func (m *Model) detach() tea.Cmd {
	m.confirm = confirmNone
	m.result.State = "detached"
	m.result.Detached = true
	return m.quit()
}

func (m *Model) quit() tea.Cmd {
	for _, r := range m.runs.runs {
		if r.link != nil && r.link.Close != nil {
			r.link.Close()
		}
	}
	return tea.Quit
}

// start launches a run in a tea.Cmd: building the environments and the
// device may take a while, or talk to another process. When more runs would
// train than the machine has cores, each new one trains on one thread.
func (m *Model) start(cfg config.Config) tea.Cmd {
	if m.starting {
		return nil
	}
	m.starting = true
	m.note = "starting…"
	m.threadsOf = ""
	if n := m.runs.active() + 1; n > 1 && n > m.opts.Cores {
		cfg = cfg.Clone()
		cfg.Trainer.Threads = 1
		m.threadsOf = fmt.Sprintf("%d runs on %d cores: this one trains with trainer.threads=1", n, m.opts.Cores)
	}
	launch := m.opts.Launch
	return func() tea.Msg {
		link, err := launch(cfg)
		if err != nil {
			return launchedMsg{err: err}
		}
		return launchedMsg{link: link, info: link.Trainer.Info()}
	}
}

func (m *Model) launched(msg launchedMsg) tea.Cmd {
	if !msg.background {
		m.starting = false
		m.note = ""
	}
	if msg.err != nil {
		if msg.fromRuns {
			return m.screens[scrRuns].Update(runsProblemMsg{"cannot attach: " + msg.err.Error()})
		}
		ed := m.screens[scrEditor]
		var cmds []tea.Cmd
		if m.active != scrEditor {
			cmds = append(cmds, ed.Update(openEditorMsg{cfg: m.cfg, title: m.cfg.Env.ID + " · " + m.cfg.Agent.Name}), m.show(scrEditor))
		}
		cmds = append(cmds, ed.Update(startFailedMsg{err: msg.err}))
		return tea.Batch(cmds...)
	}
	if r := m.runs.byDir(msg.info.RunDir); msg.info.RunDir != "" && r != nil && r.active() {
		if msg.link.Close != nil {
			msg.link.Close() // watched already
		}
		return nil
	}
	r := m.runs.add(msg.link, msg.info, m.opts.Now)
	r.attached, r.background = msg.attached, msg.background
	if m.threadsOf != "" && !msg.attached {
		r.logf(m.opts.Now(), "%s", m.threadsOf)
		m.threadsOf = ""
	}
	var cmds []tea.Cmd
	if !msg.background || m.runs.focus == 0 {
		m.runs.focus = r.id
	}
	if !msg.background {
		m.result = Result{State: string(stStarting)}
		cmds = append(cmds, m.show(scrDashboard))
	}
	cmds = append(cmds, m.poll(r, 0))
	if !msg.attached {
		return tea.Batch(cmds...)
	}
	if !msg.background {
		m.setCfg(m.cfg.Clone())
		m.cfg.Trainer.RunsDir = runsDirOf(msg.info.RunDir)
		m.sh.runsDir = m.cfg.Trainer.RunsDir
	}
	r.awaitBackfill()
	dir, id := msg.info.RunDir, r.id
	return tea.Batch(append(cmds, func() tea.Msg {
		ms, _ := runstore.ReadMetrics(dir) // what cannot be read is simply not drawn
		edits, _ := runstore.ReadEdits(dir)
		return backfillMsg{run: id, metrics: ms, edits: edits}
	})...)
}

// poll takes in every event of r queued since the last poll, after waiting
// wait: one message per redraw however fast the trainer publishes, and the
// trainer's subscription absorbs the bursts (it drops, never blocks).
func (m *Model) poll(r *run, wait time.Duration) tea.Cmd {
	events, id := r.link.Events, r.id
	return func() tea.Msg {
		if wait > 0 {
			time.Sleep(wait)
		}
		msg := eventsMsg{run: id}
		for {
			select {
			case e, ok := <-events:
				if !ok {
					msg.closed = true
					return msg
				}
				msg.events = append(msg.events, e)
			default:
				return msg
			}
		}
	}
}

func (m *Model) events(msg eventsMsg) tea.Cmd {
	r := m.runs.byID(msg.run)
	if r == nil {
		return nil
	}
	r.handle(msg.events)
	if r.id == m.runs.focus {
		m.result.RunDir, m.result.State = r.info.RunDir, string(r.state)
		m.result.Steps, m.result.Return, m.result.Err = r.last.Step, float64(r.last.EpReturnMean), r.err
	}
	if !msg.closed {
		// The run on screen is taken in at the redraw rate; the others only
		// move a line of the run list: a fifth as often costs a fifth of
		// the redraws, which the app pays for each message.
		wait := m.opts.Redraw
		if r.id != m.runs.focus {
			wait *= 5
		}
		return m.poll(r, wait)
	}
	r.closed()
	if r.id == m.runs.focus {
		m.result.State = string(r.state)
	}
	if m.quitting && m.runs.active() == 0 {
		return tea.Quit
	}
	if m.confirm == confirmStop && m.stopRun == r.id || m.confirm == confirmQuit && m.runs.active() == 0 {
		m.confirm = confirmNone
		m.resize()
	}
	return m.screens[scrEditor].Update(liveEndedMsg{t: r.t})
}

func (m *Model) resize() {
	bw, bh := m.w, m.bodyHeight()
	for _, sc := range m.screens {
		sc.SetSize(bw, bh)
	}
}

// The smallest terminal the app draws in; below it, it says so.
const minW, minH = 40, 12

// footer is the question being asked, or the active screen's key help,
// wrapped to the width rather than cut.
func (m *Model) footer() string {
	th := &m.th
	switch m.confirm {
	case confirmQuit:
		n := m.runs.active()
		q := "Stop the training and quit?"
		if n > 1 {
			q = fmt.Sprintf("Stop the %d trainings and quit?", n)
		}
		opts := []string{"y: stop, keep a checkpoint, quit", "n: go back"}
		short := []string{"y: stop & quit", "n: back"}
		if m.canDetach() {
			opts = []string{opts[0], "d: detach, it keeps training", opts[1]}
			short = []string{short[0], "d: detach", short[1]}
		}
		return m.ask(q, opts, short)
	case confirmStop:
		name := ""
		if r := m.runs.byID(m.stopRun); r != nil && len(m.runs.runs) > 1 {
			name = " " + r.name()
		}
		return m.ask("Stop the training"+name+"?", []string{"y: stop and keep a checkpoint", "n: go back"}, []string{"y: stop", "n: back"})
	}
	if m.quitting {
		return wrapWords(th.Warn.Render("Stopping: waiting for the trainer to finish the iteration and save…")+" "+th.Dim.Render("ctrl+c quits at once"), m.w, 2)
	}
	if m.help.ShowAll {
		return m.help.View(m.screen().Help())
	}
	return helpLine(th, m.screen().Help(), m.w, 2)
}

// ask prints a question and its answers: the long answers when they fit
// on a line, else the short ones, wrapped.
func (m *Model) ask(q string, long, short []string) string {
	line := m.th.Bad.Render(q) + " " + strings.Join(long, " · ")
	if lipgloss.Width(line) <= m.w {
		return line
	}
	return wrapWords(m.th.Bad.Render(q)+" "+strings.Join(short, " · "), m.w, 2)
}

func (m *Model) bodyHeight() int {
	return max(m.h-1-lipgloss.Height(m.footer()), 1)
}

func (m *Model) View() string {
	if m.w == 0 || m.h == 0 {
		return ""
	}
	if m.w < minW || m.h < minH {
		return fit("agenttrainer needs a terminal of at least 40×12; this one is "+
			itoa(m.w)+"×"+itoa(m.h)+".", m.w, m.h)
	}
	body := m.screen().View()
	footer := m.footer()
	// The footer height may change with the screen (full help); keep the
	// body in step with it.
	bh := max(m.h-1-lipgloss.Height(footer), 1)
	return m.header() + "\n" + fit(body, m.w, bh) + "\n" + fit(footer, m.w, m.h-1-bh)
}

// header is the tab bar (1–5) and the state of the trainings, from any
// screen; narrow terminals get shorter names.
func (m *Model) header() string {
	th := &m.th
	right := m.note
	if r := m.runs.focused(); r != nil && (m.active != scrDashboard || len(m.runs.runs) > 1) {
		right = string(r.state) + " " + r.percent()
		if n := m.runs.active(); n > 1 {
			right = fmt.Sprintf("%d training · #%d %s", n, r.id, right)
		} else {
			right = "training: " + right
		}
	}
	for _, short := range []bool{false, true} {
		var parts []string
		for i := 0; i < tabs; i++ {
			name := m.screens[i].Title()
			if short {
				name = name[:1]
			}
			label := itoa(i+1) + " " + name
			if i == m.tab() {
				parts = append(parts, th.Title.Render("["+label+"]"))
			} else {
				parts = append(parts, th.Dim.Render(" "+label+" "))
			}
		}
		left := th.Title.Render("agenttrainer") + " " + strings.Join(parts, "")
		if short {
			left = strings.Join(parts, "")
		}
		gap := m.w - lipgloss.Width(left) - lipgloss.Width(right)
		if gap >= 1 {
			return left + strings.Repeat(" ", gap) + th.Dim.Render(right)
		}
		if short {
			return fitLine(left+" "+th.Dim.Render(cut(right, max(m.w-lipgloss.Width(left)-1, 0))), m.w)
		}
	}
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

// carryEdits applies to next (a newly picked environment's config) the
// keys the user changed in prev (those that differ from prev's env preset),
// so picking another environment does not discard them; it says what it
// kept and what the new environment refused.
func carryEdits(prev config.Config, next *config.Config) string {
	var kept, refused []string
	for _, k := range config.Schema() {
		if k.Name == "env.id" || k.Name == "agent.name" || k.Name == "env.args" {
			continue // env.args belong to the environment they were written for
		}
		was, _ := prev.Get(k.Name)
		if config.FormatValue(was) == config.FormatValue(presetDefault(prev.Env.ID, k)) {
			continue
		}
		trial := next.Clone()
		if err := trial.Set(k.Name, was); err != nil {
			refused = append(refused, k.Name)
			continue
		}
		*next = trial
		kept = append(kept, k.Name)
	}
	switch {
	case len(kept) == 0 && len(refused) == 0:
		return ""
	case len(refused) == 0:
		return fmt.Sprintf("kept your changes: %s", strings.Join(kept, ", "))
	}
	return fmt.Sprintf("kept your changes: %s; %s does not take %s", strings.Join(kept, ", "), next.Env.ID, strings.Join(refused, ", "))
}
