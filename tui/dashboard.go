package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/progress"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// Messages the dashboard sends the root.
type (
	// openLiveEditorMsg asks for the editor on run's running config.
	openLiveEditorMsg struct{ run int }
	// askStopMsg asks the root to confirm stopping a run.
	askStopMsg struct{ run int }
	// newRunMsg asks for the picker, to start another run.
	newRunMsg struct{}
)

// dashboard watches the focused run of the shared run set: a chart of any
// metric (or a grid of them), the figures, progress and a log; it lists the
// live runs and switches between them, and sends the focused run its
// controls.
type dashboard struct {
	sh   *shared
	opts *chartOpts // the app's, shared with the runs browser
	ctl  chartControls

	logView viewport.Model
	logKey  [2]int // run id and version the log view shows
	bar     progress.Model
	canvas  chartCanvas
	cells   []chartCanvas
	chart   string // cached: redrawn only when data, size or options change
	drawn   drawKey

	w, h    int
	compact bool // narrow or short terminal: no side panel, no log
	chartW  int
	chartH  int
	sideW   int
	logH    int
}

// drawKey is what a cached chart was drawn from.
type drawKey struct {
	run, version, w, h int
	opts               chartOpts
}

func newDashboard(sh *shared) *dashboard {
	th := sh.th
	bar := progress.New(progress.WithSolidFill(th.BarFull), progress.WithoutPercentage(),
		progress.WithColorProfile(th.r.ColorProfile()))
	bar.EmptyColor = th.BarEmpty
	return &dashboard{sh: sh, bar: bar, logView: viewport.New(10, 3), opts: sh.chart, ctl: newChartControls(sh)}
}

func (d *dashboard) Init() tea.Cmd { return nil }
func (d *dashboard) Title() string { return "train" }

// Capturing: the metric picker's filter or the range prompt takes typed
// keys.
func (d *dashboard) Capturing() bool { return d.ctl.capturing() }

func (d *dashboard) run() *run { return d.sh.runs.focused() }

// Update handles the dashboard's keys.
func (d *dashboard) Update(msg tea.Msg) tea.Cmd {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	k := d.sh.keys
	r := d.run()
	if r != nil || d.ctl.capturing() {
		if ok, cmd := d.ctl.key(km, d.has); ok {
			return cmd
		}
	}
	switch {
	case key.Matches(km, k.NewRun):
		return func() tea.Msg { return newRunMsg{} }
	case r == nil:
		return nil
	case key.Matches(km, k.NextRun), key.Matches(km, k.PrevRun):
		runs := d.sh.runs
		if n := len(runs.runs); n > 1 {
			step := 1
			if key.Matches(km, k.PrevRun) {
				step = n - 1
			}
			runs.focus = runs.runs[(runs.index()+step)%n].id
		}
	case key.Matches(km, k.LogUp):
		d.syncLog(r)
		d.logView.HalfPageUp()
	case key.Matches(km, k.LogDown):
		d.syncLog(r)
		d.logView.HalfPageDown()
	case !r.active():
		return nil
	case key.Matches(km, k.StopRun):
		id := r.id
		return func() tea.Msg { return askStopMsg{run: id} }
	case key.Matches(km, k.Pause):
		t := r.t
		switch r.state {
		case stPaused, stPausing:
			r.state = stResuming
			r.logf(r.now(), "resuming")
			return func() tea.Msg { t.Resume(); return nil }
		case stRunning, stStarting, stResuming:
			r.state = stPausing
			r.logf(r.now(), "pausing at the end of this iteration")
			return func() tea.Msg { t.Pause(); return nil }
		}
	case key.Matches(km, k.Save):
		r.logf(r.now(), "checkpoint requested")
		t := r.t
		return func() tea.Msg { t.SaveCheckpoint(); return nil }
	case key.Matches(km, k.LiveEdit):
		id := r.id
		return func() tea.Msg { return openLiveEditorMsg{run: id} }
	}
	return nil
}

// has reports whether the focused run has values of a channel.
func (d *dashboard) has(c channel) bool {
	r := d.run()
	return r != nil && r.hist.has(c)
}

// last is the focused run's latest value of a channel.
func (d *dashboard) last(c channel) float64 {
	if r := d.run(); r != nil {
		return r.hist.last(c)
	}
	return math.NaN()
}

func (d *dashboard) SetSize(w, h int) {
	d.w, d.h = w, h
	d.compact = w < 80 || h < 21 // 80×24 with a two-line help keeps the panels
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
	d.logView.Width, d.logView.Height = max(w-2, 1), max(d.logH-2, 1)
	d.logKey = [2]int{}
	d.drawn = drawKey{}
}

// runLines is how many lines the list of runs takes: none for one run,
// one per run (up to 4) otherwise, one in compact layouts.
func (d *dashboard) runLines() int {
	n := len(d.sh.runs.runs)
	switch {
	case n <= 1:
		return 0
	case d.compact:
		return 1
	}
	return min(n, 4)
}

// layout sizes the chart for the current run list.
func (d *dashboard) layout() {
	extra := 3 // title, run line, progress
	if d.compact {
		extra = 5 // title, progress, three lines of figures
		if d.h < 16 || d.opts.grid {
			extra = 2 // title, progress
		}
	}
	sideW, logH := d.sideW, d.logH
	if d.opts.grid {
		// The grid's cells name their latest values: no figures panel,
		// and a shorter log.
		sideW, logH = 0, min(logH, 4)
		if d.h < 30 {
			logH = 0
		}
	}
	d.logView.Width, d.logView.Height = max(d.w-2, 1), max(logH-2, 1)
	d.chartW = d.w - sideW
	d.chartH = max(d.h-extra-logH-d.runLines()-d.ctl.rangeLines(), 3)
	d.bar.Width = max(d.w-34, 10)
}

// xRange is the chart's X axis for r: [lo, hi] in steps or seconds, all
// of it, zoomed to the last share or to a typed range.
func (d *dashboard) xRange(r *run) (float64, float64) {
	if d.opts.wall {
		return d.opts.xRange(r.hist.lastTime(), timeExtent(r.hist.lastTime()))
	}
	return d.opts.xRange(float64(r.hist.lastStep()), xExtent(r.hist.lastStep(), r.total))
}

// spec is the chart of one metric of r in w×h cells (inside a box).
func (d *dashboard) spec(r *run, metric string, w, h int, main bool) (chartSpec, string) {
	th := d.sh.th
	def, _ := metricByName(metric)
	wall := d.opts.wall
	var curves []curve
	title := metric
	if def.ch == chReturn && main {
		if d.opts.band {
			curves = append(curves,
				curve{pts: r.hist.seriesOn(chReturnMin, statMin, wall), style: th.Band},
				curve{pts: r.hist.seriesOn(chReturnMax, statMax, wall), style: th.Band})
		}
		if d.opts.smooth {
			curves = append(curves,
				curve{pts: r.hist.seriesOn(chReturn, statMean, wall), style: th.Dim},
				curve{pts: r.hist.seriesOn(chReturnEMA, statMean, wall), style: th.Smooth})
		} else {
			curves = append(curves, curve{pts: r.hist.seriesOn(chReturn, statMean, wall), style: th.Curve})
		}
	} else {
		curves = append(curves, curve{pts: r.hist.seriesOn(def.ch, statMean, wall), style: th.Curve})
	}
	var marks []float64
	for _, e := range r.edits {
		if wall {
			marks = append(marks, e.TimeS)
		} else {
			marks = append(marks, float64(e.Step))
		}
	}
	if main {
		if wall {
			title += " over wall-clock time"
		} else {
			title += " over env steps"
		}
		if def.ch == chReturn && d.opts.smooth {
			title += " · smoothed"
		}
		if def.ch == chReturn && d.opts.band {
			title += " · min/max"
		}
	} else if v := r.hist.last(def.ch); !math.IsNaN(v) {
		title += " " + num(v)
	}
	if d.opts.logY {
		title += " · log"
	}
	title += d.opts.zoomTitle()
	empty := "waiting for the first metrics…"
	if r.have {
		empty = "no value yet"
		if def.ch == chReturn {
			empty = "no episode has finished yet"
		}
	}
	if r.early != nil {
		// An attached run's past is still being read from its directory:
		// the few records that arrived live would draw a misleading chart.
		curves, marks, empty = nil, nil, "reading the run's history…"
		title += " · reading history…"
	}
	lo, hi := d.xRange(r)
	return chartSpec{w: w, h: h, xmin: lo, xmax: hi, xclip: d.opts.xr != nil, xTime: wall, logY: d.opts.logY,
		curves: curves, markers: marks, empty: empty}, title
}

// redraw renders the chart (or grid) if anything it shows has changed.
func (d *dashboard) redraw(r *run) {
	k := drawKey{run: r.id, version: r.version, w: d.chartW, h: d.chartH, opts: *d.opts}
	if k == d.drawn && d.chart != "" {
		return
	}
	d.drawn = k
	th := d.sh.th
	if !d.opts.grid {
		spec, title := d.spec(r, d.opts.metric, d.chartW-2, d.chartH-2, true)
		if d.chartW < 60 {
			title = strings.Replace(title, " over env steps", "", 1)
			title = strings.Replace(title, " over wall-clock time", " (time)", 1)
		}
		d.chart = box(th, title, d.canvas.render(th, spec), d.chartW, d.chartH)
		return
	}
	names := gridMetrics(d.has)
	if len(d.cells) < len(names) {
		d.cells = make([]chartCanvas, len(names))
	}
	d.chart = gridOf(names, d.chartW, d.chartH, func(i int, name string, w, h int) string {
		spec, title := d.spec(r, name, w-2, h-2, false)
		return box(th, title, d.cells[i].render(th, spec), w, h)
	})
}

// syncLog shows r's log in the log pane, following its end unless the
// viewer scrolled up.
func (d *dashboard) syncLog(r *run) {
	key := [2]int{r.id, r.version}
	if d.logKey == key {
		return
	}
	follow := d.logView.AtBottom() || d.logKey[0] != r.id
	d.logKey = key
	// Long lines wrap (a path, a refusal with its reason), indented under
	// their time stamp, instead of being cut at the pane's edge.
	lines := make([]string, 0, len(r.logs))
	for _, l := range r.logs {
		wrapped := wrapAtSpaces(l, max(d.logView.Width-9, 20))
		for i := 1; i < len(wrapped); i++ {
			wrapped[i] = "         " + wrapped[i]
		}
		lines = append(lines, wrapped...)
	}
	d.logView.SetContent(strings.Join(lines, "\n"))
	if follow {
		d.logView.GotoBottom()
	}
}

func (d *dashboard) View() string {
	r := d.run()
	if r == nil {
		return fit(d.sh.th.Dim.Render("No training yet: pick an environment and start one (1 or n)."), d.w, d.h)
	}
	d.layout()
	if d.ctl.picking {
		return d.ctl.viewPicker(d.w, d.h, d.last)
	}
	d.redraw(r)
	var parts []string
	parts = append(parts, d.titleLine(r))
	if d.ctl.ranging {
		parts = append(parts, d.ctl.viewRange(d.w))
	}
	if l := d.runList(); l != "" {
		parts = append(parts, l)
	}
	switch {
	case d.opts.grid:
		if !d.compact {
			parts = append(parts, d.runLine(r))
		}
		parts = append(parts, d.chart)
	case !d.compact:
		parts = append(parts, d.runLine(r), columns(d.chart, d.side(r)))
	case d.h >= 16:
		parts = append(parts, d.chart, d.compactFigures(r))
	default:
		parts = append(parts, d.chart)
	}
	parts = append(parts, d.progressLine(r))
	if d.logH > 0 && !(d.opts.grid && d.h < 30) {
		d.syncLog(r)
		parts = append(parts, box(d.sh.th, "log", d.logView.View(), d.w, d.logView.Height+2))
	}
	return fit(strings.Join(parts, "\n"), d.w, d.h)
}

// runList lists the runs with their state, step, speed and time left, the
// focused one marked; compact layouts show one line.
func (d *dashboard) runList() string {
	n := d.runLines()
	if n == 0 {
		return ""
	}
	th := d.sh.th
	runs := d.sh.runs
	i := runs.index()
	if d.compact {
		r := runs.runs[i]
		return cut(th.Dim.Render(fmt.Sprintf("run %d of %d ([ ]): ", i+1, len(runs.runs)))+
			r.name()+" "+string(r.state)+" "+r.percent()+" "+r.eta(), d.w)
	}
	start := max(0, min(i-n/2, len(runs.runs)-n))
	var lines []string
	for j := start; j < start+n; j++ {
		r := runs.runs[j]
		mark := "  "
		if j == i {
			mark = "▸ "
		}
		bg := ""
		if r.background {
			bg = " (background)"
		}
		line := mark + fitLine(cut(r.name()+bg, 34), 35) + fitLine(string(r.state), 11) +
			fitLine(steps(float64(r.last.Step))+"/"+steps(float64(r.total))+" "+r.percent(), 20) +
			fitLine(r.sps()+" steps/s", 18) + r.eta()
		if j == i {
			line = th.Selected.Render(fitLine(line, d.w))
		}
		lines = append(lines, cut(line, d.w))
	}
	return strings.Join(lines, "\n")
}

func (d *dashboard) stateBadge(r *run) string {
	th := d.sh.th
	s := string(r.state)
	switch r.state {
	case stRunning:
		return th.Good.Render("● " + s)
	case stPaused, stPausing, stResuming, stStopping, stStarting:
		return th.Warn.Render("‖ " + s)
	case stFailed:
		return th.Bad.Render("✗ " + s)
	}
	return th.Heading.Render("■ " + s)
}

func (d *dashboard) titleLine(r *run) string {
	th := d.sh.th
	left := th.Title.Render(r.info.EnvID) + th.Dim.Render(" · ") + r.info.Agent + "  " + d.stateBadge(r)
	right := th.Dim.Render("device ") + r.info.Device
	if d.compact {
		return cut(left, d.w)
	}
	gap := d.w - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 2 {
		return cut(left+"  "+right, d.w)
	}
	return left + strings.Repeat(" ", gap) + right
}

func (d *dashboard) runLine(r *run) string {
	dir := r.info.RunDir
	if dir == "" {
		dir = "(being created)"
	}
	line := d.sh.th.Dim.Render("run ") + cutLeft(dir, d.w-4)
	if r.err != nil {
		line = d.sh.th.Bad.Render(cut("✗ "+r.err.Error(), d.w))
	}
	return line
}

// progressLine is the bar with step counts and the time left.
func (d *dashboard) progressLine(r *run) string {
	elapsed := duration(timeS(r.last.TimeS))
	text := fmt.Sprintf(" %4s %s/%s · %s · %s", r.percent(), steps(float64(r.last.Step)), steps(float64(r.total)), elapsed, r.eta())
	d.bar.Width = max(d.w-lipgloss.Width(text)-1, 5)
	return d.bar.ViewAs(r.fraction()) + text
}

// figure is one labelled number in the side panel.
type figure struct {
	label, value string
	spark        channel
	hasSpark     bool
}

func (d *dashboard) figures(r *run) []figure {
	m := r.last
	f := func(v trainer.Float) string { return num(float64(v)) }
	figs := []figure{
		{label: "step", value: steps(float64(m.Step)) + " of " + steps(float64(r.total))},
		{label: "steps/s", value: r.sps(), spark: chSPS, hasSpark: true},
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
	if v := r.hist.last(chValReturn); !math.IsNaN(v) {
		figs = append(figs, figure{label: "val return", value: num(v), spark: chValReturn, hasSpark: true})
	}
	return figs
}

// side is the panel of figures beside the chart, each with a sparkline of
// its history when there is room; a value never gives up its digits to a
// sparkline.
func (d *dashboard) side(r *run) string {
	th := d.sh.th
	inner := d.sideW - 2
	sparkW := 0
	if inner >= 38 {
		sparkW = 10
	}
	var b strings.Builder
	for i, fg := range d.figures(r) {
		if i > 0 {
			b.WriteString("\n")
		}
		valW := inner - 14
		sw := 0
		if sparkW > 0 && fg.hasSpark && lipgloss.Width(fg.value)+1 <= valW-sparkW {
			sw = sparkW
		}
		line := th.Dim.Render(fitLine(fg.label, 14)) + fitLine(cut(fg.value, valW-sw), valW-sw)
		if sw > 0 {
			line += th.Curve.Render(sparkline(r.hist.values(fg.spark), sw))
		}
		b.WriteString(line)
	}
	if len(r.edits) > 0 {
		b.WriteString("\n" + th.Marker.Render(fmt.Sprintf("┊ %d live edit(s), last:", len(r.edits))))
		e := r.edits[len(r.edits)-1]
		b.WriteString("\n" + th.Marker.Render(cut(fmt.Sprintf("  %s = %s @ %s", e.Key, e.Value, steps(float64(e.Step))), inner)))
	}
	h := d.chartH
	return box(th, "figures", b.String(), d.sideW, h)
}

// compactFigures is the side panel squeezed into three lines.
func (d *dashboard) compactFigures(r *run) string {
	m := r.last
	f := func(v trainer.Float) string { return num(float64(v)) }
	l1 := fmt.Sprintf("return %s [%s, %s]  len %s  %s steps/s", f(m.EpReturnMean), f(m.EpReturnMin), f(m.EpReturnMax),
		f(m.EpLengthMean), r.sps())
	l2 := fmt.Sprintf("pol %s  val %s  ent %s  kl %s  clip %s  ev %s", f(m.PolicyLoss), f(m.ValueLoss), f(m.Entropy),
		f(m.ApproxKL), f(m.ClipFrac), f(m.ExplainedVariance))
	l3 := d.sh.th.Dim.Render("device " + r.info.Device)
	if len(r.edits) > 0 {
		e := r.edits[len(r.edits)-1]
		l3 = d.sh.th.Marker.Render(fmt.Sprintf("┊ %d edit(s); last %s = %s", len(r.edits), e.Key, e.Value))
	}
	return cut(l1, d.w) + "\n" + cut(l2, d.w) + "\n" + cut(l3, d.w)
}

func (d *dashboard) Help() help.KeyMap {
	k := d.sh.keys
	if h := d.ctl.help(); h != nil {
		return helpKeys{short: h}
	}
	r := d.run()
	charts := []key.Binding{k.Metric, k.Grid, k.XAxis, k.LogY, k.Zoom, k.Range, k.Smooth, k.Band, k.LogUp}
	if r == nil {
		return helpKeys{short: []key.Binding{k.NewRun, k.Screens, k.Quit, k.Help}, full: [][]key.Binding{{k.NewRun, k.Screens, k.Help, k.Quit}}}
	}
	pause := k.Pause
	if r.state == stPaused || r.state == stPausing {
		pause.SetHelp("p", "resume")
	}
	quit := k.Quit
	if d.sh.runs.active() > 0 {
		quit.SetHelp("q", "stop & quit")
	}
	switchRuns := []key.Binding{}
	if len(d.sh.runs.runs) > 1 {
		switchRuns = append(switchRuns, k.NextRun)
	}
	if !r.active() {
		short := append(append([]key.Binding{k.NewRun}, switchRuns...), k.Metric, k.Grid, k.XAxis, k.LogY, k.Zoom, k.Screens, k.Quit, k.Help)
		return helpKeys{short: short,
			full: [][]key.Binding{{k.NewRun, k.NextRun, k.PrevRun}, charts, {k.Screens, k.Runs, k.Help, quit}}}
	}
	short := append([]key.Binding{pause, k.Save, k.LiveEdit, k.NewRun}, switchRuns...)
	short = append(short, k.Metric, k.Grid, k.XAxis, k.LogY, k.Zoom, quit)
	last := []key.Binding{k.Screens, k.Runs, k.Help, quit}
	if d.sh.detachable() {
		short = append(short, k.Detach)
		last = append(last, k.Detach)
	}
	short = append(short, k.Help)
	return helpKeys{short: short,
		full: [][]key.Binding{{pause, k.Save, k.LiveEdit, k.StopRun, k.NewRun, k.NextRun, k.PrevRun}, charts, last}}
}
