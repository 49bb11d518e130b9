package tui

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// Options configure the app.
type Options struct {
	// Config is the starting config (defaults, a config file, overrides).
	Config config.Config
	// Host starts, attaches to, resumes and lists runs; nil means Local
	// (this process, context.Background()).
	Host Host
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
	// RunsRefresh is how often the runs browser and the sweeps screen look
	// again while they are shown; 0 means 2 s, a negative value never.
	RunsRefresh time.Duration
	// Notice is how long the line saying a run ended stays up without a
	// key press; 0 means 15 s.
	Notice time.Duration
	// Cores is how many runs may train at once before each new one is
	// given trainer.threads=1; 0 means runtime.NumCPU().
	Cores int
	// Renderer draws the app's styles: an SSH session passes one for its
	// own terminal (colour profile, dark or light background). nil means
	// lipgloss's default renderer, for this process's terminal.
	Renderer *lipgloss.Renderer
}

// confirmKind is a question of the app's awaiting y or n.
type confirmKind int

const (
	confirmNone confirmKind = iota
	confirmQuit             // stop the trainings this app started and quit
	confirmStop             // stop one training, stay in the app
)

// Model is the app's root: it draws the tab bar and the footer, handles the
// keys that work everywhere, and forwards the rest (see route.go). It holds
// the screens and what they share; it never reaches into a screen.
type Model struct {
	opts    Options
	th      theme
	keys    globalKeys
	answer  confirmKeys
	helpv   helpView
	sh      *shared
	runs    runSet
	chart   chartOpts
	screens map[screenID]Screen
	order   []screenID // the registry's order
	tabs    []screenID // those in the tab bar
	active  screenID
	history []screenID // where backMsg returns to
	w, h    int

	starting  bool
	confirm   confirmKind
	stopRun   int  // the run confirmStop is about
	quitting  bool // stopping the trainings, then quitting
	note      string
	notice    string // a run ended: one line until the next key or noticeFor
	noticeGen int
	threadsOf string // why the last run got trainer.threads=1
	result    Result
}

// Result is how the app ended, for the command line (or the SSH session)
// to report.
type Result struct {
	// Detached is set when the app left trainings running.
	Detached bool
	RunDir   string
	State    string // "" when no run was watched
	Steps    int64
	Return   float64
	Err      error
}

// Summary is what is printed when the app has ended: how the focused run
// ended, or where the trainings left behind go on; again says how to watch
// a detached run again.
func (r Result) Summary(again string) string {
	r.RunDir, again = termtext.Clean(r.RunDir), termtext.Clean(again) // names may hold escapes
	switch {
	case r.State == "":
		return ""
	case r.Detached:
		return fmt.Sprintf("detached; the training goes on in %s\nwatch it again: %s\n", r.RunDir, again)
	case r.State != "done" && r.State != "stopped" && r.State != "failed":
		return fmt.Sprintf("left the training going on in %s at step %d; watch it again: %s\n", r.RunDir, r.Steps, again)
	}
	line := fmt.Sprintf("run %s after %d steps", r.State, r.Steps)
	if !math.IsNaN(r.Return) && r.Steps > 0 {
		line += fmt.Sprintf(", %s %.4g", headlineMetric(), r.Return)
	}
	if r.RunDir != "" {
		line += "; kept in " + r.RunDir
	}
	return line + "\n"
}

// New builds the app.
func New(opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Redraw <= 0 {
		opts.Redraw = 100 * time.Millisecond
	}
	if opts.Host == nil {
		opts.Host = Local{Ctx: context.Background()}
	}
	if opts.Registry == nil {
		opts.Registry = Registry
	}
	if opts.Config.Env.ID == "" {
		opts.Config = config.Default()
	}
	if opts.RunsRefresh == 0 {
		opts.RunsRefresh = 2 * time.Second
	}
	if opts.Cores <= 0 {
		opts.Cores = runtime.NumCPU()
	}
	if opts.Notice <= 0 {
		opts.Notice = 15 * time.Second
	}
	m := &Model{opts: opts, th: defaultTheme(opts.Renderer), chart: defaultChartOpts(), screens: map[screenID]Screen{},
		answer: newConfirmKeys("yes", "no"), helpv: newHelpView()}
	m.sh = &shared{th: &m.th, host: opts.Host, runs: &m.runs, chart: &m.chart, reg: &registry{},
		draft: newDraft(opts.Config, opts.Host.Resolve), runsDir: opts.Config.Trainer.RunsDir, now: opts.Now,
		redraw: opts.Redraw, refresh: opts.RunsRefresh}
	for _, e := range screenRegistry {
		m.screens[e.id] = e.new(m.sh)
		m.order = append(m.order, e.id)
		if e.tab {
			m.tabs = append(m.tabs, e.id)
		}
	}
	m.active = m.order[0]
	m.keys = newGlobalKeys(len(m.tabs))
	return m
}

// Result reports how the app ended.
func (m *Model) Result() Result { return m.result }

// Interrupt is a message that stops the trainings this app started and
// quits, for signals that arrive from outside the terminal.
func Interrupt() tea.Msg { return interruptMsg{} }

// Hangup is a message that leaves the trainings running and quits, for a
// terminal that went away (SIGHUP).
func Hangup() tea.Msg { return hangupMsg{} }

func (m *Model) Init() tea.Cmd {
	reg := m.opts.Registry
	cmds := []tea.Cmd{func() tea.Msg {
		es, as := reg()
		return registryMsg{envs: es, agents: as}
	}}
	for _, id := range m.order {
		cmds = append(cmds, address(id, m.screens[id].Init()))
	}
	if link := m.opts.Attach; link != nil {
		cmds = append(cmds, func() tea.Msg {
			return launchedMsg{link: link, info: link.Trainer.Info(), paused: link.Trainer.Paused(), attached: true}
		})
	}
	cmds = append(cmds, m.findBackground())
	return tea.Batch(cmds...)
}

func (m *Model) screen() Screen { return m.screens[m.active] }

// deliver hands msg to screen id and addresses what it returns to it.
func (m *Model) deliver(id screenID, msg tea.Msg) tea.Cmd {
	sc, ok := m.screens[id]
	if !ok {
		return nil
	}
	before := m.bodyHeight()
	cmd := sc.Update(msg)
	if id == m.active && m.bodyHeight() != before {
		m.resize() // a mode with a taller or shorter help line
	}
	return address(id, cmd)
}

// show makes screen id the active one.
func (m *Model) show(id screenID) tea.Cmd {
	if id == m.active {
		return nil
	}
	if _, ok := m.screens[id]; !ok {
		return nil
	}
	if b, ok := m.screen().(blurrer); ok {
		b.Blur()
	}
	m.active = id
	m.helpv.open = false
	m.resize()
	if f, ok := m.screen().(focuser); ok {
		return address(id, f.Focus())
	}
	return nil
}

// showTab shows the tab bar's screen i; esc there comes back.
func (m *Model) showTab(i int) tea.Cmd {
	if i < 0 || i >= len(m.tabs) || m.tabs[i] == m.active {
		return nil
	}
	m.history = append(m.history, m.active)
	if n := len(m.history); n > maxHistory {
		m.history = append(m.history[:0], m.history[n-maxHistory:]...)
	}
	return m.show(m.tabs[i])
}

// maxHistory bounds how far back esc goes.
const maxHistory = 32

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.resize()
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
		if msg.Type == tea.KeyEsc && msg.Alt {
			// Two escapes read at once (pressed quickly, or sent together
			// over a slow link) arrive as alt+esc: they are two escapes.
			plain := tea.KeyMsg{Type: tea.KeyEsc}
			return m, tea.Batch(m.key(plain), m.key(plain))
		}
		return m, m.key(msg)
	case addressed:
		return m, m.deliver(msg.to, msg.msg)
	case appMsg:
		return m, msg.apply(m)
	}
	return m, m.deliver(m.active, msg)
}

// key handles the keys that work everywhere, then hands the rest to the
// active screen.
func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	g := &m.keys
	if m.notice != "" {
		m.notice = ""
		m.resize()
	}
	if m.quitting {
		if key.Matches(msg, g.ForceQuit) {
			m.note = "quit without waiting for the trainer"
			return m.quit()
		}
		return nil
	}
	if m.confirm != confirmNone {
		return m.answerConfirm(msg)
	}
	if m.helpv.open {
		return m.helpKey(msg)
	}
	if m.capturing() {
		if key.Matches(msg, g.ForceQuit) {
			return m.askQuit()
		}
		return m.deliver(m.active, msg)
	}
	switch {
	case key.Matches(msg, g.Detach) && m.canDetach():
		return m.detach()
	case key.Matches(msg, g.ForceQuit), key.Matches(msg, g.Quit):
		return m.askQuit()
	case key.Matches(msg, g.Help):
		m.helpv.open, m.helpv.offset = true, 0
		return nil
	case key.Matches(msg, g.Screens):
		return m.showTab(int(msg.Runes[0] - '1'))
	case key.Matches(msg, g.NextTab):
		return m.showTab((m.tab() + 1) % len(m.tabs))
	case key.Matches(msg, g.PrevTab):
		return m.showTab((m.tab() + len(m.tabs) - 1) % len(m.tabs))
	}
	return m.deliver(m.active, msg)
}

// helpKey scrolls or closes the full help.
func (m *Model) helpKey(msg tea.KeyMsg) tea.Cmd {
	nav, page := m.helpv.nav, max(m.bodyHeight()-2, 1)
	switch {
	case key.Matches(msg, m.helpv.close), key.Matches(msg, m.keys.ForceQuit):
		m.helpv.open = false
	case key.Matches(msg, nav.Up):
		m.helpv.offset--
	case key.Matches(msg, nav.Down):
		m.helpv.offset++
	case key.Matches(msg, nav.PageUp):
		m.helpv.offset -= page
	case key.Matches(msg, nav.PageDown):
		m.helpv.offset += page
	case key.Matches(msg, nav.Top):
		m.helpv.offset = 0
	case key.Matches(msg, nav.Bottom):
		m.helpv.offset = math.MaxInt / 2
	}
	m.helpv.offset = max(m.helpv.offset, 0)
	return nil
}

// answerConfirm takes y, n or d for the app's question.
func (m *Model) answerConfirm(msg tea.KeyMsg) tea.Cmd {
	ask := m.confirm
	switch {
	case ask == confirmQuit && m.canDetach() && (key.Matches(msg, m.keys.Detach) || msg.String() == "d"):
		return m.detach()
	case key.Matches(msg, m.answer.Yes), key.Matches(msg, m.keys.ForceQuit), msg.Type == tea.KeyEnter:
		m.confirm = confirmNone
		m.resize()
		if ask == confirmQuit {
			m.quitting = true
			return m.stopOwned()
		}
		if r := m.runs.byID(m.stopRun); r != nil {
			return r.stop()
		}
	case key.Matches(msg, m.answer.No):
		m.confirm = confirmNone
		m.resize()
	}
	return nil
}

// tab is the tab-bar position of the active screen, or of the screen it
// was reached from (watching a run belongs to the runs browser).
func (m *Model) tab() int {
	for _, id := range append([]screenID{m.active}, reversed(m.history)...) {
		for i, t := range m.tabs {
			if t == id {
				return i
			}
		}
	}
	return 0
}

func reversed(ids []screenID) []screenID {
	out := make([]screenID, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

func (m *Model) capturing() bool { return m.screen().Capturing() }

// askQuit asks before stopping the trainings this app started; runs it
// only watches are left training without a question.
func (m *Model) askQuit() tea.Cmd {
	if m.runs.owned() > 0 {
		m.confirm = confirmQuit
		m.resize()
		return nil
	}
	if m.runs.active() > 0 {
		return m.detach()
	}
	return m.quit()
}

// canDetach says whether the app may leave its live runs training.
func (m *Model) canDetach() bool {
	if m.runs.active() == 0 {
		return false
	}
	return m.opts.Host.Detachable() || m.runs.owned() == 0
}

// detach quits and leaves the trainings running.
func (m *Model) detach() tea.Cmd {
	m.confirm = confirmNone
	if r := m.runs.focused(); r == nil || !r.active() {
		for _, r := range m.runs.runs {
			if r.active() {
				m.runs.focus = r.id
				m.setResult(r)
			}
		}
	}
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

func (m *Model) resize() {
	bw, bh := m.w, m.bodyHeight()
	for _, sc := range m.screens {
		sc.SetSize(bw, bh)
	}
}

// The smallest terminal the app draws in; below it, it says so.
const minW, minH = 40, 12

// tail is the app's own keys at the end of every footer.
func (m *Model) tail() []key.Binding {
	t := []key.Binding{m.keys.Quit, m.keys.Help}
	if m.canDetach() {
		t = []key.Binding{m.keys.Detach, m.keys.Quit, m.keys.Help}
	}
	if m.runs.owned() > 0 {
		t[len(t)-2] = renamed(m.keys.Quit, "stop & quit")
	}
	return t
}

// footer is the question being asked, or the active screen's key help,
// wrapped to the width rather than cut.
func (m *Model) footer() string {
	th := &m.th
	switch m.confirm {
	case confirmQuit:
		n := m.runs.owned()
		q := "Stop the training and quit?"
		if n > 1 {
			q = fmt.Sprintf("Stop the %d trainings and quit?", n)
		}
		if n < m.runs.active() {
			q = strings.TrimSuffix(q, "?") + " (the runs you attached to go on)?"
		}
		opts := []string{"y: stop, keep a checkpoint, quit", "n: go back"}
		short := []string{"y: stop & quit", "n: back"}
		if m.canDetach() {
			keeps := "it keeps training"
			if m.runs.pausedOwned() == n {
				keeps = "it stays paused"
				if n > 1 {
					keeps = "they stay paused"
				}
			} else if n > 1 {
				keeps = "they keep training"
			}
			opts = []string{opts[0], "d: detach, " + keeps, opts[1]}
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
	if m.helpv.open {
		return footerLine(th, helpKeys{short: []key.Binding{m.helpv.close, m.helpv.nav.Down, m.helpv.nav.PageDown}}, nil, m.w, 1)
	}
	return footerLine(th, m.screen().Help(), m.tail(), m.w, 2)
}

// ask prints a question and its answers: the long answers when they fit
// on a line, else the short ones, wrapped.
func (m *Model) ask(q string, long, short []string) string {
	line := m.th.Bad.Render(q) + " " + strings.Join(long, " · ")
	if lipgloss.Width(line) <= m.w {
		return line
	}
	return wrapWords(m.th.Bad.Render(q)+" "+strings.Join(short, " · "), m.w, 3)
}

// noticeLines is the notice's height: one line when there is one.
func (m *Model) noticeLines() int {
	if m.notice == "" {
		return 0
	}
	return 1
}

func (m *Model) bodyHeight() int {
	return max(m.h-1-lipgloss.Height(m.footer())-m.noticeLines(), 1)
}

func (m *Model) View() string {
	if m.w == 0 || m.h == 0 {
		return ""
	}
	if m.w < minW || m.h < minH {
		return fit(wrapWords(fmt.Sprintf("This terminal is %d×%d; agenttrainer needs at least %d×%d.", m.w, m.h, minW, minH), m.w, m.h), m.w, m.h)
	}
	footer := m.footer()
	bh := max(m.h-1-lipgloss.Height(footer)-m.noticeLines(), 1)
	body := m.body(bh)
	out := m.header() + "\n" + fit(body, m.w, bh)
	if m.notice != "" {
		out += "\n" + fitLine(cut(m.notice, m.w), m.w)
	}
	return out + "\n" + fit(footer, m.w, m.h-1-bh-m.noticeLines())
}

// body is the active screen, or the full help over it.
func (m *Model) body(h int) string {
	if !m.helpv.open {
		return m.screen().View()
	}
	groups := append(m.screen().Help().FullHelp(), m.keys.group())
	return m.helpv.view(&m.th, m.screen().Title(), groups, m.w, h)
}

// header is the tab bar and the state of the trainings, from any screen.
// What does not fit gives way in turn: the status is cut first, then the
// app's name, and only then do the tabs shorten their names.
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
	tabs := func(short bool) string {
		var parts []string
		for i, id := range m.tabs {
			name := m.screens[id].Title()
			if short {
				name = name[:1]
			}
			label := strconv.Itoa(i+1) + " " + name
			if i == m.tab() {
				parts = append(parts, th.Title.Render("["+label+"]"))
			} else {
				parts = append(parts, th.Dim.Render(" "+label+" "))
			}
		}
		return strings.Join(parts, "")
	}
	const minStatus = 12
	full := tabs(false)
	for _, left := range []func() string{
		func() string { return th.Title.Render("agenttrainer") + " " + full },
		func() string { return full },
		func() string { return tabs(true) },
	} {
		left := left()
		gap := m.w - lipgloss.Width(left) - 1
		if right == "" && gap >= -1 {
			return fitLine(left, m.w)
		}
		if gap >= min(minStatus, lipgloss.Width(right)) {
			status := cut(right, gap)
			return left + strings.Repeat(" ", m.w-lipgloss.Width(left)-lipgloss.Width(status)) + th.Dim.Render(status)
		}
	}
	return fitLine(tabs(true), m.w)
}
