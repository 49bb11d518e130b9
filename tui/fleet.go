package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// The runs the app watches, as app messages: starting one, attaching to one
// (from the runs browser, the sweeps screen, or those found training at
// start-up), resuming one, taking in their events, stopping them. Screens
// ask with these messages; the run set in the shared context is what they
// all read.

type (
	// startMsg asks for a run of cfg; a refusal goes back to from.
	startMsg struct {
		cfg  config.Config
		from screenID
	}
	// attachRunMsg asks to watch the training in dir (or, with resume,
	// to continue the stopped run there first); a refusal goes back to from.
	attachRunMsg struct {
		dir    string
		resume bool
		from   screenID
	}
	// launchedMsg is the result of starting, attaching to or resuming a run.
	launchedMsg struct {
		link       *Link
		info       trainer.Info
		paused     bool
		err        error
		attached   bool     // the run was already going (or resumed by another process)
		background bool     // found training at start-up: not shown at once
		from       screenID // where a refusal goes; "" the editor
	}
	// backgroundMsg lists the runs found training at start-up.
	backgroundMsg struct{ runs []launchedMsg }
	// eventsMsg is every event of a run that arrived since the last poll.
	eventsMsg struct {
		run    int
		events []trainer.Event
		closed bool // the stream ended
	}
	// backfillMsg is an attached run's history, read from its directory.
	backfillMsg struct {
		run     int
		metrics []trainer.Metrics
		edits   []trainer.Edit
	}
	// askStopMsg asks the user to confirm stopping a run.
	askStopMsg struct{ run int }
	// pausedMsg says what the trainer answered when a run was asked to
	// pause or resume: whether it was paused already.
	pausedMsg struct {
		run  int
		want bool // the state asked for
		was  bool // the state it was in
	}
	// interruptMsg is a signal to stop (SIGTERM, or SIGINT from outside).
	interruptMsg struct{}
	// hangupMsg says the terminal went away (SIGHUP): the app detaches.
	hangupMsg struct{}
	// runEndedMsg tells every screen that a run ended (the live editor on
	// it closes).
	runEndedMsg struct{ t Trainer }
	// noticeDoneMsg takes a notice down once it has been up long enough.
	noticeDoneMsg struct{ gen int }
	// forgetRunMsg drops a deleted run from the run set.
	forgetRunMsg struct{ dir string }
)

func (s startMsg) apply(m *Model) tea.Cmd      { return m.start(s.cfg, s.from) }
func (a attachRunMsg) apply(m *Model) tea.Cmd  { return m.attachRun(a) }
func (l launchedMsg) apply(m *Model) tea.Cmd   { return m.launched(l) }
func (e eventsMsg) apply(m *Model) tea.Cmd     { return m.events(e) }
func (i interruptMsg) apply(m *Model) tea.Cmd  { return m.interrupt() }
func (h hangupMsg) apply(m *Model) tea.Cmd     { return m.hangup() }
func (a askStopMsg) apply(m *Model) tea.Cmd    { return m.confirmStopOf(a.run) }
func (f forgetRunMsg) apply(m *Model) tea.Cmd  { m.runs.forget(f.dir); return nil }
func (b backfillMsg) apply(m *Model) tea.Cmd   { return m.backfill(b) }
func (n noticeDoneMsg) apply(m *Model) tea.Cmd { return m.clearNotice(n.gen) }
func (p pausedMsg) apply(m *Model) tea.Cmd     { return m.pausedAnswer(p) }
func (b backgroundMsg) apply(m *Model) tea.Cmd { return m.attachBackground(b.runs) }

// findBackground attaches to the runs training under the runs directory
// at start-up (started earlier, in the background, or by another app).
func (m *Model) findBackground() tea.Cmd {
	host, dir, attach := m.opts.Host, m.sh.runsDir, m.opts.Attach
	return func() tea.Msg {
		skip := ""
		if attach != nil {
			skip = attach.Trainer.Info().RunDir // I/O: here, not in Init
		}
		var msg backgroundMsg
		for _, d := range host.LiveRuns(dir) {
			if skip != "" && cleanPath(d) == cleanPath(skip) {
				continue
			}
			if link, err := host.Attach(d); err == nil {
				msg.runs = append(msg.runs, launchedMsg{link: link, info: link.Trainer.Info(), paused: link.Trainer.Paused(), attached: true, background: true})
			}
		}
		return msg
	}
}

func (m *Model) attachBackground(runs []launchedMsg) tea.Cmd {
	var cmds []tea.Cmd
	for _, l := range runs {
		cmds = append(cmds, m.launched(l))
	}
	return tea.Batch(cmds...)
}

// start launches a run in a tea.Cmd: building the environments and the
// device may take a while, or talk to another process. When more runs
// would train than the machine has cores, each new one trains on one
// thread (paused runs take no core).
func (m *Model) start(cfg config.Config, from screenID) tea.Cmd {
	if m.starting {
		return nil
	}
	m.starting = true
	m.note = "starting…"
	m.threadsOf = ""
	if n := m.runs.training() + 1; n > 1 && n > m.opts.Cores {
		cfg = cfg.Clone()
		cfg.Trainer.Threads = 1
		m.threadsOf = fmt.Sprintf("%d runs on %d cores: this one trains with trainer.threads=1", n, m.opts.Cores)
	}
	host := m.opts.Host
	return func() tea.Msg {
		link, err := host.Start(cfg)
		if err != nil {
			return launchedMsg{err: err, from: from}
		}
		return launchedMsg{link: link, info: link.Trainer.Info(), from: from}
	}
}

// attachRun shows the training that runs in a.dir, attaching to it (or
// resuming it first) when the app does not watch it yet.
func (m *Model) attachRun(a attachRunMsg) tea.Cmd {
	if r := m.runs.byDir(a.dir); r != nil && r.active() {
		m.runs.focus = r.id // already watching it
		return gotoMsg{to: scrDashboard}.apply(m)
	}
	if m.starting {
		return nil
	}
	m.starting = true
	m.note = "attaching…"
	host := m.opts.Host
	if a.resume {
		m.note = "resuming…"
	}
	return func() tea.Msg {
		var link *Link
		var err error
		if a.resume {
			link, err = host.Resume(a.dir)
		} else {
			link, err = host.Attach(a.dir)
		}
		if err != nil {
			return launchedMsg{err: err, attached: !a.resume, from: a.from}
		}
		return launchedMsg{link: link, info: link.Trainer.Info(), paused: link.Trainer.Paused(), attached: !a.resume, from: a.from}
	}
}

// launchFailedMsg tells the screen that asked why no run was started or
// attached to.
type launchFailedMsg struct {
	err      error
	attached bool
}

func (m *Model) launched(msg launchedMsg) tea.Cmd {
	if !msg.background {
		m.starting = false
		m.note = ""
	}
	if msg.err != nil {
		if msg.from == "" {
			msg.from = scrEditor
		}
		return gotoMsg{to: msg.from, msg: launchFailedMsg{err: msg.err, attached: msg.attached}}.apply(m)
	}
	if r := m.runs.byDir(msg.info.RunDir); msg.info.RunDir != "" && r != nil && r.active() {
		if msg.link.Close != nil {
			msg.link.Close() // watched already
		}
		if msg.background {
			return nil
		}
		// Attached while start-up's look for background runs was still
		// dialling (slow on a loaded machine), which got there first: the
		// user asked for this run's dashboard, so it is shown all the same.
		m.runs.focus = r.id
		return gotoMsg{to: scrDashboard}.apply(m)
	}
	r := m.runs.add(msg.link, msg.info, m.opts.Now)
	r.attached, r.background = msg.attached, msg.background
	if msg.paused {
		r.state = stPaused
	}
	if m.threadsOf != "" && !msg.attached {
		r.logf(m.opts.Now(), "%s", m.threadsOf)
		m.threadsOf = ""
	}
	var cmds []tea.Cmd
	if !msg.background || m.runs.focus == 0 {
		m.runs.focus = r.id
	}
	if !msg.background {
		m.setResult(r)
		if !msg.attached {
			m.chart.newRun() // a zoom into another run's steps would show nothing
		}
		m.history = nil
		cmds = append(cmds, m.show(scrDashboard))
	}
	cmds = append(cmds, m.poll(r, 0))
	if msg.info.RunDir != "" && (msg.attached || !msg.background) {
		if !msg.background && msg.attached {
			m.sh.runsDir = runsDirOf(msg.info.RunDir)
			m.sh.draft.setRunsDir(m.sh.runsDir)
		}
		r.awaitBackfill()
		dir, id := msg.info.RunDir, r.id
		cmds = append(cmds, func() tea.Msg {
			ms, _ := runstore.ReadMetrics(dir) // what cannot be read is simply not drawn
			edits, _ := runstore.ReadEdits(dir)
			return backfillMsg{run: id, metrics: ms, edits: edits}
		})
	}
	return tea.Batch(cmds...)
}

func (m *Model) backfill(b backfillMsg) tea.Cmd {
	if r := m.runs.byID(b.run); r != nil {
		r.backfill(b.metrics, b.edits)
	}
	return nil
}

// runsDirOf is the runs directory a run belongs to: its parent, or, for a
// sweep's trial (runs/<sweep>/trial-003), the sweep's parent, so that new
// runs do not land among the trials.
func runsDirOf(runDir string) string {
	parent := filepath.Dir(runDir)
	if isSweepDir(parent) {
		return filepath.Dir(parent)
	}
	return parent
}

// isSweepDir reports whether dir holds a sweep (its sweep.toml).
func isSweepDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, sweepSpecFile))
	return err == nil
}

// setResult makes r the run the app's result reports.
func (m *Model) setResult(r *run) {
	if m.result.Detached {
		return // said once the app chose to leave; later events change nothing
	}
	m.result = Result{RunDir: r.info.RunDir, State: string(r.state), Steps: r.last.Step, Return: r.hist.last(headlineMetric()), Err: r.err}
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
	wasActive := r.active()
	r.handle(msg.events)
	if r.id == m.runs.focus {
		m.setResult(r)
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
	if r.id == m.runs.focus && !m.result.Detached {
		m.result.State = string(r.state)
	}
	if m.quitting && m.runs.owned() == 0 {
		m.result.Detached = m.runs.active() > 0
		return m.quit()
	}
	if m.confirm == confirmStop && m.stopRun == r.id || m.confirm == confirmQuit && m.runs.owned() == 0 {
		m.confirm = confirmNone
	}
	var cmds []tea.Cmd
	if wasActive {
		cmds = append(cmds, m.notify(r))
	}
	m.resize()
	return tea.Batch(append(cmds, broadcastMsg{runEndedMsg{t: r.t}}.apply(m))...)
}

// notify puts up a line saying how r ended.
func (m *Model) notify(r *run) tea.Cmd {
	mark := map[runState]string{stDone: "✓", stFailed: "✗"}[r.state]
	if mark == "" {
		mark = "■"
	}
	text := fmt.Sprintf("%s %s %s at %s steps", mark, r.name(), r.state, thousands(r.last.Step))
	if h := metricInfo(headlineMetric()); r.have && !isNaN(r.hist.last(h.Name)) {
		text += ", " + h.Label + " " + num(r.hist.last(h.Name))
	}
	if r.err != nil {
		text += ": " + firstLine(r.err.Error())
	}
	m.notice = m.th.Heading.Render(text) + m.th.Dim.Render("  (any key)")
	m.noticeGen++
	gen := m.noticeGen
	return tea.Tick(m.opts.Notice, func(time.Time) tea.Msg { return noticeDoneMsg{gen: gen} })
}

func (m *Model) clearNotice(gen int) tea.Cmd {
	if gen == m.noticeGen && m.notice != "" {
		m.notice = ""
		m.resize()
	}
	return nil
}

func (m *Model) confirmStopOf(id int) tea.Cmd {
	if r := m.runs.byID(id); r != nil && r.active() {
		m.confirm, m.stopRun = confirmStop, id
		m.resize()
	}
	return nil
}

// pausedAnswer settles a run's state when the trainer was already in the
// state asked for (another viewer paused it): no event will come.
func (m *Model) pausedAnswer(p pausedMsg) tea.Cmd {
	r := m.runs.byID(p.run)
	if r == nil || !r.active() || p.was != p.want {
		return nil
	}
	if p.want {
		r.state = stPaused
	} else {
		r.state = stRunning
	}
	r.version++
	return nil
}

// interrupt stops the trainings this app started and quits; the runs it
// only watches go on.
func (m *Model) interrupt() tea.Cmd {
	if m.runs.owned() > 0 {
		m.quitting = true
		return m.stopOwned()
	}
	if m.runs.active() > 0 {
		return m.detach()
	}
	return m.quit()
}

// hangup leaves every training running and quits: the terminal is gone,
// and nobody can answer a question.
func (m *Model) hangup() tea.Cmd {
	if m.runs.active() > 0 {
		return m.detach()
	}
	return m.quit()
}

// stopOwned asks every live run this app started to stop.
func (m *Model) stopOwned() tea.Cmd {
	var cmds []tea.Cmd
	for _, r := range m.runs.runs {
		if !r.attached {
			cmds = append(cmds, r.stop())
		}
	}
	if len(cmds) == 0 {
		return m.quit()
	}
	return tea.Batch(cmds...)
}
