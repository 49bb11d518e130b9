package tui

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

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
	// Renderer draws the app's styles: an SSH session passes one for its
	// own terminal (colour profile, dark or light background). nil means
	// lipgloss's default renderer, for this process's terminal.
	Renderer *lipgloss.Renderer
}

type screen int

// confirmKind is a question awaiting y or n.
type confirmKind int

const (
	confirmNone confirmKind = iota
	confirmQuit             // stop the training and quit
	confirmStop             // stop the training, stay in the app
)

const (
	scrPicker screen = iota
	scrEditor
	scrDashboard
	scrRuns
	scrWatch // a run's checkpoint playing in its environment
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
		link     *Link
		info     trainer.Info
		err      error
		attached bool // the run was already going
		fromRuns bool // asked for in the runs browser (attach key)
	}
	// backfillMsg is an attached run's history, read from its directory.
	backfillMsg struct {
		run     int
		metrics []trainer.Metrics
		edits   []trainer.Edit
	}
	// liveConfigMsg carries the running config for the live editor.
	liveConfigMsg struct{ cfg config.Config }
	// interruptMsg is a signal to stop (SIGTERM, or SIGINT from outside).
	interruptMsg struct{}
)

// Model is the app's root model: it owns the screens, the link to the
// running training and the keys that work everywhere.
type Model struct {
	opts   Options
	th     theme
	keys   keyMap
	help   help.Model
	w, h   int
	screen screen
	watch  watcher
	back   screen // where esc from the runs browser returns

	picker picker
	editor editor
	dash   dashboard
	runs   runsBrowser

	cfg      config.Config // the config the next run starts from
	link     *Link
	runID    int
	starting bool
	attached bool        // the run on the dashboard was attached to, not started here
	confirm  confirmKind // what the user is asked to confirm
	quitting bool        // stopping the training, then quitting
	note     string
	result   Result
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
	m := &Model{opts: opts, th: defaultTheme(opts.Renderer), keys: defaultKeys(), help: help.New(), cfg: opts.Config.Clone()}
	m.help.ShortSeparator = " · "
	m.help.Styles = m.th.helpStyles()
	m.picker = newPicker(&m.th, &m.keys, m.cfg.Env.ID, m.cfg.Agent.Name)
	m.editor = newEditor(&m.th, &m.keys)
	m.dash = newDashboard(&m.th, &m.keys, opts.Now)
	m.dash.detachable = opts.Detachable
	m.runs = newRunsBrowser(&m.th, &m.keys, opts.Live, opts.RunsRefresh)
	m.watch = newWatcher(&m.th, &m.keys)
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
	if link := m.opts.Attach; link != nil {
		cmds = append(cmds, func() tea.Msg {
			return launchedMsg{link: link, info: link.Trainer.Info(), attached: true}
		})
	}
	return tea.Batch(cmds...)
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.help.Width = msg.Width
		m.resize()
		return m, nil
	case registryMsg:
		m.picker.setRegistry(msg.envs, msg.agents)
		return m, nil
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
				m.dash.logf(m.opts.Now(), "cannot use %s with %s: %v", msg.env, msg.agent, err)
				return m, nil
			}
			m.cfg = cfg
		}
		if msg.start {
			return m, m.start(m.cfg)
		}
		m.editor.open(m.cfg, nil, msg.env+" · "+msg.agent)
		m.screen = scrEditor
		return m, nil
	case startMsg:
		m.cfg = msg.cfg.Clone()
		return m, m.start(msg.cfg)
	case launchedMsg:
		return m, m.launched(msg)
	case eventsMsg:
		return m, m.events(msg)
	case backfillMsg:
		if msg.run == m.runID {
			m.dash.backfill(msg.metrics, msg.edits)
		}
		return m, nil
	case closeEditorMsg:
		if m.editor.live != nil {
			m.screen = scrDashboard
		} else {
			m.cfg = m.editor.cfg.Clone()
			m.picker.focusAgents = false // back to choosing an environment
			m.screen = scrPicker
		}
		return m, nil
	case openLiveEditorMsg:
		if m.link == nil {
			return m, nil
		}
		t := m.link.Trainer
		return m, func() tea.Msg { return liveConfigMsg{cfg: t.Config()} }
	case liveConfigMsg:
		if m.link != nil && m.dash.active() {
			m.editor.open(msg.cfg, m.link.Trainer, m.dash.info.EnvID+" · "+m.dash.info.Agent)
			m.screen = scrEditor
		}
		return m, nil
	case editDoneMsg:
		return m, m.editor.Update(msg)
	case runsListedMsg, runsLoadedMsg:
		return m, m.runs.Update(msg)
	case runsTickMsg:
		if m.screen != scrRuns {
			return m, nil // the browser was left: it stops looking
		}
		return m, m.runs.Update(msg)
	case attachRunMsg:
		return m, m.attachRun(msg.dir)
	case watchRunMsg:
		m.screen = scrWatch
		return m, m.watch.open(msg.dir)
	case watchTickMsg:
		return m, m.watch.Update(msg)
	case closeRunsMsg:
		m.screen = m.back
		return m, nil
	case interruptMsg:
		if m.dash.active() {
			m.quitting = true
			return m, m.dash.stop()
		}
		return m, m.quit()
	}
	return m, nil
}

// key handles the keys that work everywhere, then hands the rest to the
// screen.
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
			m.quitting = ask == confirmQuit
			return m.dash.stop()
		case key.Matches(msg, k.No):
			m.confirm = confirmNone
		}
		return nil
	}
	capturing := m.capturing()
	switch {
	case !capturing && m.canDetach() && m.dash.active() && key.Matches(msg, k.Detach):
		return m.detach()
	case key.Matches(msg, k.ForceQuit), !capturing && key.Matches(msg, k.Quit):
		if m.dash.active() {
			m.confirm = confirmQuit
			return nil
		}
		return m.quit()
	case !capturing && key.Matches(msg, k.Help):
		m.help.ShowAll = !m.help.ShowAll
		m.resize()
		return nil
	case !capturing && key.Matches(msg, k.Runs) && m.screen != scrRuns:
		m.back = m.screen
		m.screen = scrRuns
		return m.runs.open(m.runsDir())
	}
	switch m.screen {
	case scrPicker:
		return m.picker.Update(msg)
	case scrEditor:
		return m.editor.Update(msg)
	case scrRuns:
		return m.runs.Update(msg)
	case scrWatch:
		if key.Matches(msg, k.Back) {
			m.watch.close()
			m.screen = scrRuns
		}
		return nil
	case scrDashboard:
		if !m.dash.active() && key.Matches(msg, k.NewRun) {
			m.picker.envList.chosen, m.picker.agentList.chosen = m.cfg.Env.ID, m.cfg.Agent.Name
			m.picker.focusAgents = false
			m.screen = scrPicker
			return nil
		}
		if m.dash.active() && key.Matches(msg, k.StopRun) {
			m.confirm = confirmStop
			return nil
		}
		return m.dash.Update(msg)
	}
	return nil
}

func (m *Model) capturing() bool {
	switch m.screen {
	case scrPicker:
		return m.picker.capturing()
	case scrEditor:
		return m.editor.capturing()
	}
	return false
}

func (m *Model) runsDir() string {
	if m.screen == scrEditor && m.editor.live == nil {
		return m.editor.cfg.Trainer.RunsDir // what the user is about to start with
	}
	return m.cfg.Trainer.RunsDir
}

// canDetach says whether the app may leave the run on the dashboard
// training: it lives in a process of its own.
func (m *Model) canDetach() bool { return m.opts.Detachable || m.attached }

// attachRun opens the dashboard on the training that runs in dir, the way
// Options.Attach does at start; a run this app was showing goes on without
// it (when it lives in a process of its own).
func (m *Model) attachRun(dir string) tea.Cmd {
	if m.link != nil && m.dash.info.RunDir != "" && filepath.Clean(m.dash.info.RunDir) == filepath.Clean(dir) && !m.dash.state.ended() {
		m.screen = scrDashboard // already watching it
		return nil
	}
	switch {
	case m.opts.AttachTo == nil:
		m.runs.problem = "this app cannot attach to runs; `agenttrainer attach " + dir + "` can"
		return nil
	case m.starting:
		return nil
	case m.dash.active() && !m.canDetach():
		m.runs.problem = "a training runs inside this app: stop it (x on the dashboard) before attaching to another"
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

// detach quits and leaves the training running in its own process.
func (m *Model) detach() tea.Cmd {
	m.confirm = confirmNone
	m.result.State = "detached"
	m.result.Detached = true
	return m.quit()
}

func (m *Model) quit() tea.Cmd {
	if m.link != nil && m.link.Close != nil {
		m.link.Close()
	}
	return tea.Quit
}

// start launches a run in a tea.Cmd: building the environments and the
// device may take a while, or talk to another process.
func (m *Model) start(cfg config.Config) tea.Cmd {
	if m.starting || m.dash.active() {
		return nil
	}
	m.starting = true
	m.note = "starting…"
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
	m.starting = false
	m.note = ""
	if msg.err != nil {
		if msg.fromRuns {
			m.runs.problem = "cannot attach: " + msg.err.Error()
			return nil
		}
		if m.screen != scrEditor {
			m.editor.open(m.cfg, nil, m.cfg.Env.ID+" · "+m.cfg.Agent.Name)
			m.screen = scrEditor
		}
		m.editor.startFailed(msg.err)
		return nil
	}
	if old := m.link; old != nil && old != msg.link && old.Close != nil {
		old.Close() // the previous run's subscription; the run itself goes on
	}
	m.link = msg.link
	m.attached = msg.attached
	m.runID++
	m.dash.attach(msg.link.Trainer, msg.info)
	m.dash.detachable = m.canDetach()
	m.result = Result{State: string(stStarting)}
	m.screen = scrDashboard
	if !msg.attached {
		return m.poll(0)
	}
	m.cfg.Trainer.RunsDir = filepath.Dir(msg.info.RunDir)
	m.dash.awaitBackfill()
	dir, id := msg.info.RunDir, m.runID
	return tea.Batch(m.poll(0), func() tea.Msg {
		ms, _ := runstore.ReadMetrics(dir) // what cannot be read is simply not drawn
		edits, _ := runstore.ReadEdits(dir)
		return backfillMsg{run: id, metrics: ms, edits: edits}
	})
}

// poll takes in every event queued since the last poll, after waiting
// wait: one message per redraw however fast the trainer publishes, and the
// trainer's subscription absorbs the bursts (it drops, never blocks).
func (m *Model) poll(wait time.Duration) tea.Cmd {
	events, id := m.link.Events, m.runID
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
	if msg.run != m.runID {
		return nil // a previous run's stream
	}
	m.dash.handle(msg.events)
	m.result.RunDir, m.result.State = m.dash.info.RunDir, string(m.dash.state)
	m.result.Steps, m.result.Return, m.result.Err = m.dash.last.Step, float64(m.dash.last.EpReturnMean), m.dash.err
	if msg.closed {
		m.dash.closed()
		m.result.State = string(m.dash.state)
		if m.screen == scrEditor && m.editor.live != nil {
			m.screen = scrDashboard // nothing left to edit live
		}
		if m.quitting {
			return tea.Quit
		}
		m.confirm = confirmNone
		return nil
	}
	return m.poll(m.opts.Redraw)
}

func (m *Model) resize() {
	bw, bh := m.w, m.bodyHeight()
	m.picker.SetSize(bw, bh)
	m.editor.SetSize(bw, bh)
	m.dash.SetSize(bw, bh)
	m.runs.SetSize(bw, bh)
	m.watch.SetSize(bw, bh)
}

// The smallest terminal the app draws in; below it, it says so.
const minW, minH = 40, 12

func (m *Model) footer() string {
	switch m.confirm {
	case confirmQuit:
		if m.canDetach() {
			return m.th.Bad.Render("Stop the training and quit?") + " y: stop, keep a checkpoint, quit · d: detach, it keeps training · n: go back"
		}
		return m.th.Bad.Render("Stop the training and quit?") + " y: stop, keep a checkpoint, quit · n: go back"
	case confirmStop:
		return m.th.Bad.Render("Stop the training?") + " y: stop and keep a checkpoint · n: go back"
	}
	if m.quitting {
		return m.th.Warn.Render("Stopping: waiting for the trainer to finish the iteration and save… ") + m.th.Dim.Render("ctrl+c quits at once")
	}
	return m.help.View(m.screenHelp())
}

func (m *Model) bodyHeight() int {
	return max(m.h-1-lipgloss.Height(m.footer()), 1)
}

func (m *Model) screenHelp() help.KeyMap {
	switch m.screen {
	case scrEditor:
		return m.editor.help()
	case scrDashboard:
		return m.dash.help()
	case scrRuns:
		return m.runs.help()
	case scrWatch:
		return m.watch.help()
	}
	return m.picker.help()
}

func (m *Model) View() string {
	if m.w == 0 || m.h == 0 {
		return ""
	}
	if m.w < minW || m.h < minH {
		return fit("agenttrainer needs a terminal of at least 40×12; this one is "+
			itoa(m.w)+"×"+itoa(m.h)+".", m.w, m.h)
	}
	var body string
	switch m.screen {
	case scrPicker:
		body = m.picker.View()
	case scrEditor:
		body = m.editor.View()
	case scrDashboard:
		body = m.dash.View()
	case scrRuns:
		body = m.runs.View()
	case scrWatch:
		body = m.watch.View()
	}
	footer := m.footer()
	// The footer height may change with the screen (full help); keep the
	// body in step with it.
	bh := max(m.h-1-lipgloss.Height(footer), 1)
	return m.header() + "\n" + fit(body, m.w, bh) + "\n" + fit(footer, m.w, m.h-1-bh)
}

// header shows where the user is, and the training's state from any screen.
func (m *Model) header() string {
	th := &m.th
	tabs := []struct {
		s    screen
		name string
	}{{scrPicker, "pick"}, {scrEditor, "config"}, {scrDashboard, "train"}, {scrRuns, "runs"}}
	current := m.screen
	if current == scrWatch {
		current = scrRuns // watching is part of the runs browser
	}
	var parts []string
	for _, t := range tabs {
		if t.s == current {
			parts = append(parts, th.Title.Render("["+t.name+"]"))
		} else {
			parts = append(parts, th.Dim.Render(" "+t.name+" "))
		}
	}
	left := th.Title.Render("agenttrainer") + " " + strings.Join(parts, "")
	right := m.note
	if m.link != nil && m.screen != scrDashboard {
		right = "training: " + string(m.dash.state)
		if m.dash.have && m.dash.total > 0 {
			right += " " + itoa(int(100*min(float64(m.dash.last.Step)/float64(m.dash.total), 1))) + "%"
		}
	}
	gap := m.w - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 1 {
		return fitLine(left, m.w)
	}
	return left + strings.Repeat(" ", gap) + th.Dim.Render(right)
}

func itoa(n int) string { return strconv.Itoa(n) }
