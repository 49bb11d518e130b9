package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/progress"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// runState is what the dashboard knows of the run's lifecycle; the
// in-between states cover the time from a key press to the trainer's
// acknowledgement at its next iteration boundary.
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

// openLiveEditorMsg asks the app to open the editor on the running config.
type openLiveEditorMsg struct{}

// logLines bounds the log pane's memory.
const logLines = 500

// dashboard watches one run: the reward curve, episode and loss figures,
// speed, progress and a log, and sends the run its controls.
type dashboard struct {
	th   *theme
	keys *keyMap
	t    Trainer
	// detachable: the run lives in its own process and D leaves it running.
	detachable bool
	info       trainer.Info
	now        func() time.Time

	state   runState
	err     error
	last    trainer.Metrics
	have    bool
	total   int64
	hist    *history
	edits   []trainer.Edit
	logs    []string
	logView viewport.Model
	smooth  bool
	band    bool
	bar     progress.Model
	chart   string // cached: redrawn only when data, size or toggles change
	chartOK bool
	canvas  chartCanvas
	w, h    int
	compact bool // narrow or short terminal: no side panel, no log

	checkpoints       int                // saved so far
	lastWasCheckpoint bool               // the last log line is a checkpoint's
	early             *[]trainer.Metrics // live records kept until backfill (attached runs)
	chartW            int
	chartH            int
	sideW             int
	logH              int
	lastDraw          time.Time
}

func newDashboard(th *theme, keys *keyMap, now func() time.Time) dashboard {
	bar := progress.New(progress.WithSolidFill(th.BarFull), progress.WithoutPercentage(),
		progress.WithColorProfile(th.r.ColorProfile()))
	bar.EmptyColor = th.BarEmpty
	return dashboard{th: th, keys: keys, now: now, hist: newHistory(), band: true, smooth: true,
		bar: bar, logView: viewport.New(10, 3)}
}

// attach points the dashboard at a new run.
func (d *dashboard) attach(t Trainer, info trainer.Info) {
	w, h, smooth, band, detachable := d.w, d.h, d.smooth, d.band, d.detachable
	*d = newDashboard(d.th, d.keys, d.now)
	d.detachable = detachable
	d.t, d.info, d.state, d.total = t, info, stStarting, info.TotalSteps
	d.smooth, d.band = smooth, band // the viewer's choice outlives a run
	d.SetSize(w, h)
}

func (d *dashboard) active() bool { return d.t != nil && !d.state.ended() }

// handle folds a batch of events in; the chart is redrawn once per batch.
func (d *dashboard) handle(events []trainer.Event) {
	for _, e := range events {
		switch e.Kind {
		case trainer.EventStarted:
			d.info.RunDir = e.Message
			if d.state == stStarting {
				d.state = stRunning
			}
			d.logf(e.Time, "run directory %s", e.Message)
		case trainer.EventMetrics:
			d.last, d.have = e.Metrics, true
			d.hist.add(e.Metrics)
			if d.early != nil {
				*d.early = append(*d.early, e.Metrics)
			}
			d.chartOK = false
			if d.state == stStarting {
				d.state = stRunning
			}
		case trainer.EventLog:
			d.logf(e.Time, "%s", e.Message)
		case trainer.EventEdit:
			d.edits = append(d.edits, e.Edit)
			if e.Edit.Key == "ppo.total_timesteps" {
				if n, err := strconv.ParseInt(e.Edit.Value, 10, 64); err == nil {
					d.total = n
				}
			}
			d.chartOK = false
			d.logf(e.Time, "%s", e.Message)
		case trainer.EventCheckpoint:
			d.checkpoints++
			d.logCheckpoint(e)
		case trainer.EventState:
			if d.state != stStopping {
				switch e.State {
				case trainer.StatePaused:
					d.state = stPaused
				case trainer.StateRunning:
					d.state = stRunning
				}
			}
			d.logf(e.Time, "%s", e.Message)
		case trainer.EventDone:
			d.state = runState(e.State)
			d.err = e.Err
			d.logf(e.Time, "%s", e.Message)
		}
	}
}

// awaitBackfill keeps the records that arrive until backfill has read the
// run's earlier ones from its directory.
func (d *dashboard) awaitBackfill() { d.early = new([]trainer.Metrics) }

// backfill puts an attached run's past (metrics.jsonl, edits.jsonl) before
// what arrived live.
func (d *dashboard) backfill(past []trainer.Metrics, edits []trainer.Edit) {
	if d.early == nil {
		return
	}
	live := *d.early
	d.early = nil
	h := newHistory()
	for _, m := range past {
		if len(live) == 0 || m.Step < live[0].Step {
			h.add(m)
		}
	}
	for _, m := range live {
		h.add(m)
	}
	d.hist = h
	if !d.have && len(past) > 0 {
		d.last, d.have = past[len(past)-1], true
	}
	seen := map[trainer.Edit]bool{}
	for _, e := range d.edits {
		seen[e] = true
	}
	var all []trainer.Edit
	for _, e := range edits {
		if !seen[e] {
			all = append(all, e)
		}
	}
	d.edits = append(all, d.edits...)
	d.chartOK = false
}

// logCheckpoint keeps one log line for a streak of checkpoints: a fast run
// saves several a second and would push everything else out of the pane.
func (d *dashboard) logCheckpoint(e trainer.Event) {
	msg := fmt.Sprintf("%s (%d so far)", e.Message, d.checkpoints)
	if n := len(d.logs); n > 0 && d.lastWasCheckpoint {
		d.logs = d.logs[:n-1]
	}
	d.logf(e.Time, "%s", msg)
	d.lastWasCheckpoint = true
}

func (d *dashboard) logf(t time.Time, format string, args ...any) {
	d.lastWasCheckpoint = false
	stamp := ""
	if !t.IsZero() {
		stamp = t.Format("15:04:05") + " "
	}
	for _, l := range strings.Split(fmt.Sprintf(format, args...), "\n") {
		d.logs = append(d.logs, stamp+l)
	}
	if n := len(d.logs); n > logLines {
		d.logs = append(d.logs[:0], d.logs[n-logLines:]...)
	}
	follow := d.logView.AtBottom()
	d.logView.SetContent(strings.Join(d.logs, "\n"))
	if follow {
		d.logView.GotoBottom()
	}
}

// closed is called when the event stream ends without EventDone (a lost
// connection to a run in another process).
func (d *dashboard) closed() {
	if !d.state.ended() {
		d.state = stStopped
		d.logf(d.now(), "lost the run's event stream")
	}
}

func (d *dashboard) Update(msg tea.Msg) tea.Cmd {
	km, ok := msg.(tea.KeyMsg)
	if !ok || d.t == nil {
		return nil
	}
	k, t := d.keys, d.t
	switch {
	case key.Matches(km, k.Smooth):
		d.smooth = !d.smooth
		d.chartOK = false
	case key.Matches(km, k.Band):
		d.band = !d.band
		d.chartOK = false
	case key.Matches(km, k.LogUp):
		d.logView.HalfPageUp()
	case key.Matches(km, k.LogDown):
		d.logView.HalfPageDown()
	case !d.active():
		return nil
	case key.Matches(km, k.Pause):
		switch d.state {
		case stPaused, stPausing:
			d.state = stResuming
			d.logf(d.now(), "resuming")
			return func() tea.Msg { t.Resume(); return nil }
		case stRunning, stStarting, stResuming:
			d.state = stPausing
			d.logf(d.now(), "pausing at the end of this iteration")
			return func() tea.Msg { t.Pause(); return nil }
		}
	case key.Matches(km, k.Save):
		d.logf(d.now(), "checkpoint requested")
		return func() tea.Msg { t.SaveCheckpoint(); return nil }
	case key.Matches(km, k.LiveEdit):
		return func() tea.Msg { return openLiveEditorMsg{} }
	}
	return nil
}

// stop asks the run to end; the app quits when its stream closes.
func (d *dashboard) stop() tea.Cmd {
	if !d.active() {
		return nil
	}
	d.state = stStopping
	d.logf(d.now(), "stopping: finishing the iteration and writing a checkpoint")
	t := d.t
	return func() tea.Msg { t.Stop(); return nil }
}

func (d *dashboard) SetSize(w, h int) {
	d.w, d.h = w, h
	d.compact = w < 80 || h < 22
	// Rows: title, run line, chart, progress, log, with the rest to the chart.
	d.sideW = 0
	if !d.compact {
		d.sideW = 34
		if w >= 110 {
			d.sideW = 44
		}
	}
	d.logH = 0
	if !d.compact {
		d.logH = min(max(h/4, 4), 10)
	}
	extra := 3 // title, run line, progress
	if d.compact {
		extra = 5 // title, progress, two lines of figures, edits
	}
	d.chartW = w - d.sideW
	d.chartH = max(h-extra-d.logH, 4)
	d.logView.Width, d.logView.Height = max(w-2, 1), max(d.logH-2, 1)
	d.logView.SetContent(strings.Join(d.logs, "\n"))
	d.logView.GotoBottom()
	d.bar.Width = max(w-34, 10)
	d.chartOK = false
}

// redraw renders the chart if anything it shows has changed.
func (d *dashboard) redraw() {
	if d.chartOK {
		return
	}
	d.chartOK = true
	th := d.th
	var curves []curve
	if d.band {
		curves = append(curves,
			curve{pts: d.hist.series(chReturnMin, statMin), style: th.Band},
			curve{pts: d.hist.series(chReturnMax, statMax), style: th.Band})
	}
	if d.smooth {
		curves = append(curves,
			curve{pts: d.hist.series(chReturn, statMean), style: th.Dim},
			curve{pts: d.hist.series(chReturnEMA, statMean), style: th.Smooth})
	} else {
		curves = append(curves, curve{pts: d.hist.series(chReturn, statMean), style: th.Curve})
	}
	var marks []float64
	for _, e := range d.edits {
		marks = append(marks, float64(e.Step))
	}
	title := "ep_return_mean over env steps"
	if d.chartW < 60 {
		title = "return"
	}
	if d.smooth {
		title += " · smoothed"
	}
	if d.band {
		title += " · min/max"
	}
	empty := "waiting for the first metrics…"
	if d.have {
		empty = "no episode has finished yet"
	}
	inner := d.canvas.render(th, chartSpec{w: d.chartW - 2, h: d.chartH - 2, xmax: xExtent(d.hist.lastStep(), d.total),
		curves: curves, markers: marks, empty: empty})
	d.chart = box(th, title, inner, d.chartW, d.chartH)
}

func (d *dashboard) View() string {
	if d.t == nil {
		return fit(d.th.Dim.Render("No training yet: pick an environment and start one."), d.w, d.h)
	}
	d.redraw()
	var parts []string
	parts = append(parts, d.titleLine())
	if !d.compact {
		parts = append(parts, d.runLine())
		parts = append(parts, columns(d.chart, d.side()))
	} else {
		parts = append(parts, d.chart, d.compactFigures())
	}
	parts = append(parts, d.progressLine())
	if d.logH > 0 {
		parts = append(parts, box(d.th, "log", d.logView.View(), d.w, d.logH))
	}
	return fit(strings.Join(parts, "\n"), d.w, d.h)
}

func (d *dashboard) stateBadge() string {
	th := d.th
	s := string(d.state)
	switch d.state {
	case stRunning:
		return th.Good.Render("● " + s)
	case stPaused, stPausing, stResuming, stStopping, stStarting:
		return th.Warn.Render("‖ " + s)
	case stFailed:
		return th.Bad.Render("✗ " + s)
	}
	return th.Heading.Render("■ " + s)
}

func (d *dashboard) titleLine() string {
	th := d.th
	left := th.Title.Render(d.info.EnvID) + th.Dim.Render(" · ") + d.info.Agent + "  " + d.stateBadge()
	right := th.Dim.Render("device ") + d.info.Device
	if d.compact {
		return cut(left, d.w)
	}
	gap := d.w - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 2 {
		return cut(left+"  "+right, d.w)
	}
	return left + strings.Repeat(" ", gap) + right
}

func (d *dashboard) runLine() string {
	dir := d.info.RunDir
	if dir == "" {
		dir = "(being created)"
	}
	line := d.th.Dim.Render("run ") + cutLeft(dir, d.w-4)
	if d.err != nil {
		line = d.th.Bad.Render(cut("✗ "+d.err.Error(), d.w))
	}
	return line
}

// progressLine is the bar with step counts and the time left.
func (d *dashboard) progressLine() string {
	frac := 0.0
	if d.total > 0 {
		frac = math.Min(float64(d.last.Step)/float64(d.total), 1)
	}
	eta := "ETA -"
	switch {
	case d.state.ended():
		eta = "ended"
	case d.have && d.last.SPS > 0:
		eta = "ETA " + duration(time.Duration(float64(d.total-d.last.Step)/float64(d.last.SPS)*float64(time.Second)))
	}
	elapsed := duration(time.Duration(float64(d.last.TimeS) * float64(time.Second)))
	text := fmt.Sprintf(" %3.0f%% %s/%s · %s · %s", 100*frac, steps(float64(d.last.Step)), steps(float64(d.total)), elapsed, eta)
	d.bar.Width = max(d.w-lipgloss.Width(text)-1, 5)
	return d.bar.ViewAs(frac) + text
}

// figure is one labelled number in the side panel.
type figure struct {
	label, value string
	spark        channel
	hasSpark     bool
}

func (d *dashboard) figures() []figure {
	m := d.last
	f := func(v trainer.Float) string { return num(float64(v)) }
	return []figure{
		{label: "step", value: steps(float64(m.Step)) + " of " + steps(float64(d.total))},
		{label: "steps/s", value: thousands(int64(math.Round(float64(m.SPS)))), spark: chSPS, hasSpark: true},
		{label: "episodes", value: thousands(m.Episodes)},
		{label: "return", value: f(m.EpReturnMean), spark: chReturn, hasSpark: true},
		{label: " min / max", value: f(m.EpReturnMin) + " / " + f(m.EpReturnMax)},
		{label: "ep length", value: f(m.EpLengthMean), spark: chLength, hasSpark: true},
		{label: "policy loss", value: f(m.PolicyLoss), spark: chPolicyLoss, hasSpark: true},
		{label: "value loss", value: f(m.ValueLoss), spark: chValueLoss, hasSpark: true},
		{label: "entropy", value: f(m.Entropy), spark: chEntropy, hasSpark: true},
		{label: "approx_kl", value: f(m.ApproxKL), spark: chApproxKL, hasSpark: true},
		{label: "clipfrac", value: f(m.ClipFrac), spark: chClipFrac, hasSpark: true},
		{label: "explained var", value: f(m.ExplainedVariance), spark: chExplVar, hasSpark: true},
		{label: "learning rate", value: f(m.LR)},
		{label: "iteration", value: strconv.Itoa(m.Iter)},
	}
}

// side is the panel of figures beside the chart, each with a sparkline of
// its history when there is room.
func (d *dashboard) side() string {
	th := d.th
	inner := d.sideW - 2
	figs := d.figures()
	sparkW := 0
	if inner >= 38 {
		sparkW = 10
	}
	var b strings.Builder
	for i, fg := range figs {
		if i > 0 {
			b.WriteString("\n")
		}
		valW := inner - 14 - sparkW
		line := th.Dim.Render(fitLine(fg.label, 14)) + fitLine(cut(fg.value, valW-1), valW)
		if sparkW > 0 && fg.hasSpark {
			line += th.Curve.Render(sparkline(d.hist.values(fg.spark), sparkW))
		}
		b.WriteString(line)
	}
	if len(d.edits) > 0 {
		b.WriteString("\n" + th.Marker.Render(fmt.Sprintf("┊ %d live edit(s), last:", len(d.edits))))
		e := d.edits[len(d.edits)-1]
		b.WriteString("\n" + th.Marker.Render(cut(fmt.Sprintf("  %s = %s @ %s", e.Key, e.Value, steps(float64(e.Step))), inner)))
	}
	return box(th, "figures", b.String(), d.sideW, d.chartH)
}

// compactFigures is the side panel squeezed into two lines.
func (d *dashboard) compactFigures() string {
	m := d.last
	f := func(v trainer.Float) string { return num(float64(v)) }
	l1 := fmt.Sprintf("return %s [%s, %s]  len %s  %s steps/s", f(m.EpReturnMean), f(m.EpReturnMin), f(m.EpReturnMax),
		f(m.EpLengthMean), thousands(int64(math.Round(float64(m.SPS)))))
	l2 := fmt.Sprintf("pol %s  val %s  ent %s  kl %s  clip %s  ev %s", f(m.PolicyLoss), f(m.ValueLoss), f(m.Entropy),
		f(m.ApproxKL), f(m.ClipFrac), f(m.ExplainedVariance))
	l3 := d.th.Dim.Render("device " + d.info.Device)
	if len(d.edits) > 0 {
		e := d.edits[len(d.edits)-1]
		l3 = d.th.Marker.Render(fmt.Sprintf("┊ %d edit(s); last %s = %s", len(d.edits), e.Key, e.Value))
	}
	return cut(l1, d.w) + "\n" + cut(l2, d.w) + "\n" + cut(l3, d.w)
}

func (d *dashboard) help() helpKeys {
	k := d.keys
	pause := k.Pause
	if d.state == stPaused || d.state == stPausing {
		pause.SetHelp("p", "resume")
	}
	quit := k.Quit
	if d.active() {
		quit.SetHelp("q", "stop & quit")
	}
	if !d.active() {
		return helpKeys{
			short: []key.Binding{k.NewRun, k.Runs, k.Smooth, k.Quit, k.Help, k.Band},
			full:  [][]key.Binding{{k.NewRun, k.Runs}, {k.Smooth, k.Band, k.LogUp}, {k.Help, k.Quit}},
		}
	}
	if d.detachable {
		return helpKeys{
			short: []key.Binding{pause, k.Save, k.LiveEdit, k.Smooth, quit, k.Detach, k.Help, k.Runs},
			full:  [][]key.Binding{{pause, k.Save, k.LiveEdit, k.StopRun}, {k.Smooth, k.Band, k.LogUp}, {k.Runs, k.Help, quit, k.Detach}},
		}
	}
	return helpKeys{
		short: []key.Binding{pause, k.Save, k.LiveEdit, k.Smooth, quit, k.Help, k.Runs},
		full:  [][]key.Binding{{pause, k.Save, k.LiveEdit, k.StopRun}, {k.Smooth, k.Band, k.LogUp}, {k.Runs, k.Help, quit}},
	}
}
