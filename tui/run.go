package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// runState is what the app knows of a run's lifecycle; the in-between
// states cover the time from a key press to the trainer's acknowledgement
// at its next iteration boundary.
type runState string

const (
	stStarting runState = "starting"
	stRunning  runState = "running"
	stPausing  runState = "pausing…"
	stPaused   runState = "paused"
	stResuming runState = "resuming…"
	stStopping runState = "stopping…"
	stDone     runState = "done"
	stStopped  runState = "stopped"
	stFailed   runState = "failed"
)

func (s runState) ended() bool { return s == stDone || s == stStopped || s == stFailed }

// logLines bounds a run's log memory.
const logLines = 500

// run is one training the app watches: its link, what it has reported so
// far and a log. Runs live in the app's shared context (runSet), so the
// header, the picker and the dashboard all see them.
type run struct {
	id         int
	link       *Link
	t          Trainer
	attached   bool // watched, not started by this app: quitting leaves it training
	background bool // found training when the app started
	info       trainer.Info
	now        func() time.Time

	state             runState
	err               error
	last              trainer.Metrics
	have              bool
	total             int64
	hist              *history
	edits             []trainer.Edit
	logs              []string
	lastWasCheckpoint bool               // the last log line is a checkpoint's
	early             *[]trainer.Metrics // live records kept until backfill (attached runs)
	version           int                // bumped whenever anything drawn changes
}

func newRun(id int, link *Link, info trainer.Info, now func() time.Time) *run {
	return &run{id: id, link: link, t: link.Trainer, info: info, now: now, state: stStarting,
		total: info.TotalSteps, hist: newHistory()}
}

func (r *run) active() bool { return !r.state.ended() }

// name is how lists show the run: its number, env and agent.
func (r *run) name() string { return fmt.Sprintf("#%d %s·%s", r.id, r.info.EnvID, r.info.Agent) }

// handle folds a batch of events in.
func (r *run) handle(events []trainer.Event) {
	if len(events) > 0 {
		r.version++
	}
	for _, e := range events {
		switch e.Kind {
		case trainer.EventStarted:
			r.info.RunDir = e.Message
			if r.state == stStarting {
				r.state = stRunning
			}
			r.logf(e.Time, "run directory %s", e.Message)
		case trainer.EventMetrics:
			r.last, r.have = e.Metrics, true
			r.hist.add(e.Metrics)
			if r.early != nil {
				*r.early = append(*r.early, e.Metrics)
			}
			if r.state == stStarting {
				r.state = stRunning
			}
		case trainer.EventLog:
			r.logf(e.Time, "%s", e.Message)
		case trainer.EventEdit:
			r.edits = append(r.edits, e.Edit)
			if e.Edit.Key == "ppo.total_timesteps" {
				if n, err := strconv.ParseInt(e.Edit.Value, 10, 64); err == nil {
					r.total = n
				}
			}
			r.logf(e.Time, "%s", e.Message)
		case trainer.EventCheckpoint:
			r.logCheckpoint(e)
		case trainer.EventState:
			if r.state != stStopping {
				switch e.State {
				case trainer.StatePaused:
					r.state = stPaused
				case trainer.StateRunning:
					r.state = stRunning
				}
			}
			if e.Message != "" { // a run held before its first step says nothing
				r.logf(e.Time, "%s", e.Message)
			}
		case trainer.EventDone:
			r.state = runState(e.State)
			r.err = e.Err
			r.logf(e.Time, "%s", e.Message)
		}
	}
}

// awaitBackfill keeps the records that arrive until backfill has read the
// run's earlier ones from its directory.
func (r *run) awaitBackfill() { r.early = new([]trainer.Metrics) }

// backfill puts an attached run's past (metrics.jsonl, edits.jsonl) before
// what arrived live.
func (r *run) backfill(past []trainer.Metrics, edits []trainer.Edit) {
	if r.early == nil {
		return
	}
	live := *r.early
	r.early = nil
	h := newHistory()
	for _, m := range past {
		if len(live) == 0 || m.Step < live[0].Step {
			h.add(m)
		}
	}
	for _, m := range live {
		h.add(m)
	}
	r.hist = h
	if !r.have && len(past) > 0 {
		r.last, r.have = past[len(past)-1], true
	}
	seen := map[trainer.Edit]bool{}
	for _, e := range r.edits {
		seen[e] = true
	}
	var all []trainer.Edit
	for _, e := range edits {
		if !seen[e] {
			all = append(all, e)
		}
	}
	r.edits = append(all, r.edits...)
	r.version++
}

// logCheckpoint keeps one log line for a streak of checkpoints: a fast run
// saves several a second and would push everything else out of the pane.
// A checkpoint asked for by hand (pinned) keeps a line of its own; the
// rotating ones share one that shows the newest. (No count: a viewer that
// attached late has not seen them all.)
func (r *run) logCheckpoint(e trainer.Event) {
	if e.Pinned {
		r.logf(e.Time, "%s", e.Message)
		return
	}
	if n := len(r.logs); n > 0 && r.lastWasCheckpoint {
		r.logs = r.logs[:n-1]
	}
	r.logf(e.Time, "%s", e.Message)
	r.lastWasCheckpoint = true
}

func (r *run) logf(t time.Time, format string, args ...any) {
	r.lastWasCheckpoint = false
	r.version++
	stamp := ""
	if !t.IsZero() {
		stamp = t.Format("15:04:05") + " "
	}
	for _, l := range strings.Split(fmt.Sprintf(format, args...), "\n") {
		r.logs = append(r.logs, stamp+l)
	}
	if n := len(r.logs); n > logLines {
		r.logs = append(r.logs[:0], r.logs[n-logLines:]...)
	}
}

// closed is called when the event stream ends without EventDone (a lost
// connection to a run in another process).
func (r *run) closed() {
	if !r.state.ended() {
		r.state = stStopped
		r.logf(r.now(), "lost the run's event stream")
	}
}

// stop asks the run to end.
func (r *run) stop() tea.Cmd {
	if !r.active() {
		return nil
	}
	r.state = stStopping
	r.logf(r.now(), "stopping: finishing the iteration and writing a checkpoint")
	t := r.t
	return func() tea.Msg { t.Stop(); return nil }
}

// fraction is how far the run is, 0 to 1; a run that ended done is whole.
func (r *run) fraction() float64 {
	if r.state == stDone {
		return 1
	}
	if r.total <= 0 {
		return 0
	}
	return math.Min(float64(r.last.Step)/float64(r.total), 1)
}

// percent is fraction as the header and the dashboard both print it.
func (r *run) percent() string { return fmt.Sprintf("%.0f%%", math.Floor(100*r.fraction())) }

// eta is the time left, or why there is none.
func (r *run) eta() string {
	switch {
	case r.state.ended():
		return "ended"
	case r.state == stPaused || r.state == stPausing:
		return "paused"
	case r.state == stStopping:
		return "stopping"
	case r.have && r.last.SPS > 0 && r.total > r.last.Step:
		return "ETA " + duration(time.Duration(float64(r.total-r.last.Step)/float64(r.last.SPS)*float64(time.Second)))
	}
	return "ETA -"
}

// sps is the latest speed, as a whole number.
func (r *run) sps() string {
	if !r.have || math.IsNaN(float64(r.last.SPS)) {
		return "-"
	}
	return thousands(int64(math.Round(float64(r.last.SPS))))
}

// runSet is every run the app watches: started here, attached to from the
// runs browser, or found training at start-up. focus is the run the
// dashboard shows (an id; 0 when there is none).
type runSet struct {
	runs   []*run
	nextID int
	focus  int
}

func (s *runSet) add(link *Link, info trainer.Info, now func() time.Time) *run {
	s.nextID++
	r := newRun(s.nextID, link, info, now)
	s.runs = append(s.runs, r)
	return r
}

func (s *runSet) byID(id int) *run {
	for _, r := range s.runs {
		if r.id == id {
			return r
		}
	}
	return nil
}

// focused is the run the dashboard shows, nil when there is none.
func (s *runSet) focused() *run { return s.byID(s.focus) }

// byDir finds the run training in dir.
func (s *runSet) byDir(dir string) *run {
	for _, r := range s.runs {
		if r.info.RunDir != "" && cleanPath(r.info.RunDir) == cleanPath(dir) {
			return r
		}
	}
	return nil
}

// active counts the runs that have not ended.
func (s *runSet) active() int { return s.count(func(r *run) bool { return r.active() }) }

// owned counts the live runs this app started: quitting asks about them.
func (s *runSet) owned() int { return s.count(func(r *run) bool { return r.active() && !r.attached }) }

// pausedOwned counts the owned runs that are paused.
func (s *runSet) pausedOwned() int {
	return s.count(func(r *run) bool { return r.active() && !r.attached && r.state == stPaused })
}

// training counts the runs that use a core now: live and not paused.
func (s *runSet) training() int {
	return s.count(func(r *run) bool { return r.active() && r.state != stPaused && r.state != stPausing })
}

func (s *runSet) count(f func(*run) bool) int {
	n := 0
	for _, r := range s.runs {
		if f(r) {
			n++
		}
	}
	return n
}

// forget drops the ended runs of dir (a run deleted in the runs browser);
// the focus moves to a run that is left.
func (s *runSet) forget(dir string) {
	var keep []*run
	for _, r := range s.runs {
		if !r.active() && r.info.RunDir != "" && cleanPath(r.info.RunDir) == cleanPath(dir) {
			continue
		}
		keep = append(keep, r)
	}
	s.runs = keep
	if s.focused() == nil {
		s.focus = 0
		if len(keep) > 0 {
			s.focus = keep[len(keep)-1].id
		}
	}
}

// index is the focused run's position in the list.
func (s *runSet) index() int {
	for i, r := range s.runs {
		if r.id == s.focus {
			return i
		}
	}
	return -1
}

func isNaN(v float64) bool { return math.IsNaN(v) }
