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

	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

const scrDashboard screenID = "train"

// dashboardKeys are the dashboard's bindings: the run's controls, the
// runs, the log, and the charts'.
type dashboardKeys struct {
	chartKeys
	Pause, Save, LiveEdit, StopRun, NewRun key.Binding
	NextRun, PrevRun                       key.Binding
	LogUp, LogDown, Log                    key.Binding
	Words                                  key.Binding
}

func newDashboardKeys() dashboardKeys {
	return dashboardKeys{chartKeys: newChartKeys(),
		Pause:    bind("p", "pause/resume", "p"),
		Save:     bind("s", "checkpoint", "s"),
		LiveEdit: bind("e", "edit live", "e"),
		StopRun:  bind("x", "stop run", "x"),
		NewRun:   bind("n", "new run", "n"),
		Words:    bind("T", "transcripts", "T"),
		NextRun:  bind("]", "next run", "]"),
		PrevRun:  bind("[", "previous run", "["),
		LogUp:    bind("pgup", "scroll log up", "pgup", "ctrl+u"),
		LogDown:  bind("pgdn", "scroll log down", "pgdown", "ctrl+d"),
		Log:      bind("L", "whole log, searchable", "L"),
	}
}

func (k dashboardKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Pause, k.Save, k.LiveEdit, k.StopRun, k.NewRun, k.NextRun, k.PrevRun,
		k.Metric, k.Grid, k.XAxis, k.LogY, k.Zoom, k.Smooth, k.CursorRight, k.Words, k.Log}
}

func (k dashboardKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Pause, k.Save, k.LiveEdit, k.StopRun, k.NewRun, k.NextRun, k.PrevRun},
		k.chartKeys.group(),
		{k.LogUp, k.LogDown, k.Log, k.Words},
	}
}

// dashboard watches the focused run of the shared run set: a chart of any
// metric (or a grid of them), the figures, progress and a log; it lists the
// live runs and switches between them, and sends the focused run its
// controls.
type dashboard struct {
	sh   *shared
	keys dashboardKeys
	opts *chartOpts // the app's, shared with the runs browser
	ctl  chartControls
	log  logPager // the whole log (L)

	logView viewport.Model
	logKey  [2]int // run id and version the log view shows
	bar     progress.Model
	canvas  chartCanvas
	cells   []chartCanvas
	chart   string // cached: redrawn only when data, size or options change
	drawn   drawKey

	words     wordsCache // the focused run's latest group of transcripts
	wordsMode int        // 0: beside the chart where there is room; 1: shown; 2: hidden (T)
	wordsW    int        // the transcripts panel's width beside the chart (0: none)

	w, h    int
	compact bool // narrow or short terminal: no side panel, no log
	chartW  int
	chartH  int
	sideW   int
	logH    int
}

// drawKey is what a cached chart was drawn from.
type drawKey struct {
	run, version, w, h, cursor int
	opts                       chartOpts
}

func newDashboard(sh *shared) Screen {
	th := sh.th
	bar := progress.New(progress.WithSolidFill(th.BarFull), progress.WithoutPercentage(),
		progress.WithColorProfile(th.r.ColorProfile()))
	bar.EmptyColor = th.BarEmpty
	return &dashboard{sh: sh, keys: newDashboardKeys(), bar: bar, logView: viewport.New(10, 3), opts: sh.chart,
		ctl: newChartControls(sh), log: newLogPager(th)}
}

func (d *dashboard) Init() tea.Cmd { return nil }
func (d *dashboard) Title() string { return "train" }

// Capturing: the metric picker's filter, the range prompt or the log's
// search takes typed keys.
func (d *dashboard) Capturing() bool { return d.ctl.capturing() || d.log.capturing() }

func (d *dashboard) run() *run { return d.sh.runs.focused() }

// Update handles the dashboard's keys.
func (d *dashboard) Update(msg tea.Msg) tea.Cmd {
	if km, ok := msg.(tea.KeyMsg); ok {
		return d.key(km)
	}
	if d.log.capturing() {
		return d.log.input(msg) // the search field's cursor
	}
	return nil
}

func (d *dashboard) key(km tea.KeyMsg) tea.Cmd {
	k := d.keys
	r := d.run()
	if d.log.open {
		return d.log.key(km)
	}
	if r != nil || d.ctl.capturing() {
		if ok, cmd := d.ctl.key(km, d.metrics()); ok {
			return cmd
		}
	}
	switch {
	case key.Matches(km, k.NewRun):
		return send(gotoMsg{to: scrPicker})
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
	case key.Matches(km, k.Log):
		d.log.show(r.name(), r.logs, d.w, d.h)
	case key.Matches(km, k.Words):
		if d.wordsShown() {
			d.wordsMode = 2
		} else {
			d.wordsMode = 1
		}
		d.drawn = drawKey{}
	case !r.active():
		return nil
	case key.Matches(km, k.StopRun):
		return send(askStopMsg{run: r.id})
	case key.Matches(km, k.Pause):
		return d.pause(r)
	case key.Matches(km, k.Save):
		r.logf(r.now(), "checkpoint requested")
		t := r.t
		return func() tea.Msg { t.SaveCheckpoint(); return nil }
	case key.Matches(km, k.LiveEdit):
		t, title := r.t, r.info.EnvID+" · "+r.info.Agent
		return func() tea.Msg {
			return gotoMsg{to: scrEditor, msg: openEditorMsg{cfg: t.Config(), live: t, title: title}}
		}
	}
	return nil
}

// pause asks the run to pause or resume; the trainer's answer says whether
// it was so already (another viewer did it), which no event would tell.
func (d *dashboard) pause(r *run) tea.Cmd {
	t, id := r.t, r.id
	want := true
	switch r.state {
	case stPaused, stPausing:
		want = false
		r.state = stResuming
		r.logf(r.now(), "resuming")
	case stRunning, stStarting, stResuming:
		r.state = stPausing
		r.logf(r.now(), "pausing at the end of this iteration")
	default:
		return nil
	}
	return func() tea.Msg {
		was := t.Paused()
		if want {
			t.Pause()
		} else {
			t.Resume()
		}
		return pausedMsg{run: id, want: want, was: was}
	}
}

// wordsShown reports whether the transcripts panel is on screen: when the
// run has transcripts, beside the chart where there is room, or as T says.
func (d *dashboard) wordsShown() bool {
	switch d.wordsMode {
	case 1:
		return true
	case 2:
		return false
	}
	return len(d.words.group) > 0 && d.w >= 100 && !d.compact
}

// wordsPanel is the latest group of the run's transcripts in a w×h box.
func (d *dashboard) wordsPanel(w, h int) string {
	th := d.sh.th
	lines := transcriptLines(th, d.words.group, w-2, false, false)
	if len(d.words.group) == 0 {
		lines = []string{th.Dim.Render("no transcripts yet: language-model runs write a group each iteration (T hides this)")}
		if d.words.err != nil {
			lines = []string{th.Warn.Render(termtext.Clean(firstLine(d.words.err.Error())))}
		}
	}
	room := h - 2
	var edit string
	if r := d.run(); r != nil && len(r.edits) > 0 {
		// the figures panel's note of the last live edit, which this panel hides
		e := r.edits[len(r.edits)-1]
		edit = th.Marker.Render(cut(fmt.Sprintf("┊ %s, the last %s = %s @ %s", plural(len(r.edits), "live edit", "live edits"), e.Key, e.Value, steps(float64(e.Step))), w-2))
		room--
	}
	if len(lines) > room {
		lines = append(lines[:max(room-1, 0)], th.Dim.Render(cut(fmt.Sprintf("… %d more lines · the runs browser's T shows them all", len(lines)-(room-1)), w-2)))
	}
	if edit != "" {
		for len(lines) < room {
			lines = append(lines, "")
		}
		lines = append(lines, edit)
	}
	return box(th, cut(groupTitle(d.words.group), w-6), strings.Join(lines, "\n"), w, h)
}

// metrics is what the focused run holds, for the metric picker and the
// grid.
func (d *dashboard) metrics() metricSource {
	if r := d.run(); r != nil {
		return r.hist
	}
	return newHistory()
}

// last is the focused run's latest value of a metric.
func (d *dashboard) last(name string) float64 {
	if r := d.run(); r != nil {
		return r.hist.last(name)
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
	d.log.resize(w, h)
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

// cursorLines is the line under the chart that reads the cursor's values.
func (d *dashboard) cursorLines() int {
	if d.ctl.col >= 0 && !d.opts.grid {
		return 1
	}
	return 0
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
	d.wordsW = 0
	if d.wordsShown() && !d.opts.grid {
		switch {
		case d.w >= 100 && !d.compact:
			// beside the chart, in place of the figures
			sideW = max(d.w*9/20, d.sideW)
			d.wordsW = sideW
		default:
			// in place of the chart (T goes back to it)
			d.wordsW = d.w
		}
	}
	d.chartW = d.w - sideW
	d.chartH = max(d.h-extra-logH-d.runLines()-d.ctl.rangeLines()-d.cursorLines(), 3)
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
	def := metricInfo(metric)
	banded := def.Band[0] != "" && d.opts.band
	wall, weight := d.opts.wall, d.opts.weight()
	var curves []curve
	title := metric
	if banded && main {
		curves = append(curves,
			curve{pts: r.hist.seriesOn(def.Band[0], statMin, wall), style: th.Band},
			curve{pts: r.hist.seriesOn(def.Band[1], statMax, wall), style: th.Band})
	}
	raw := r.hist.seriesOn(metric, statMean, wall)
	switch {
	case weight > 0 && main:
		curves = append(curves, curve{pts: raw, style: th.Dim}, curve{pts: smooth(raw, weight), style: th.Smooth})
	case weight > 0: // a grid's cell: the smoothed curve alone, as cheap to draw as the raw one
		curves = append(curves, curve{pts: smooth(raw, weight), style: th.Smooth})
	default:
		curves = append(curves, curve{pts: raw, style: th.Curve})
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
		title += d.opts.smoothTitle()
		if banded {
			title += " · min/max"
		}
		if d.opts.logY {
			title += " · log"
		}
		title += d.opts.zoomTitle()
	} else {
		title = cellTitle(metric, r.hist.last(metric), w+2)
	}
	empty := "waiting for the first metrics…"
	if r.have {
		empty = "no value yet"
		if def.Band[0] != "" { // an episode's figure
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
	cursor := -1
	if main {
		cursor = d.ctl.col
	}
	return chartSpec{w: w, h: h, xmin: lo, xmax: hi, xclip: d.opts.xr != nil, xTime: wall, logY: d.opts.logY,
		curves: curves, markers: marks, empty: empty, cursor: cursor}, title
}

// redraw renders the chart (or grid) if anything it shows has changed.
func (d *dashboard) redraw(r *run) {
	k := drawKey{run: r.id, version: r.version, w: d.chartW, h: d.chartH, cursor: d.ctl.col, opts: *d.opts}
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
		if d.ctl.col >= 0 {
			d.ctl.col = d.canvas.cursorCol // kept within the graph
			d.drawn.cursor = d.ctl.col
		}
		return
	}
	names := gridMetrics(d.metrics())
	if len(d.cells) < len(names) {
		d.cells = make([]chartCanvas, len(names))
	}
	d.chart = gridOf(names, d.chartW, d.chartH, func(i int, name string, w, h int) string {
		spec, title := d.spec(r, name, w-2, h-2, false)
		return box(th, title, d.cells[i].render(th, spec), w, h)
	})
}

// cursorLine reads the values under the cursor: the record nearest to it.
func (d *dashboard) cursorLine(r *run) string {
	th := d.sh.th
	def := metricInfo(d.opts.metric)
	x := d.canvas.cursorX
	at, v, ok := r.hist.at(def.Name, x, d.opts.wall)
	if !ok {
		return th.Dim.Render("cursor: no value here · ←/→ move · esc hides")
	}
	where := "step " + thousands(int64(at))
	if d.opts.wall {
		where = "at " + timeLabel(at, 0.1)
	}
	s := th.Heading.Render("│ "+where) + "  " + def.Name + " " + num(v)
	if w := d.opts.weight(); w > 0 {
		if sm := nearest(smooth(r.hist.seriesOn(def.Name, statMean, d.opts.wall), w), at); !math.IsNaN(sm) {
			s += th.Dim.Render("  smoothed ") + num(sm)
		}
	}
	if def.Band[0] != "" {
		_, lo, okLo := r.hist.at(def.Band[0], x, d.opts.wall)
		_, hi, okHi := r.hist.at(def.Band[1], x, d.opts.wall)
		if okLo && okHi {
			s += th.Dim.Render("  min/max ") + num(lo) + " / " + num(hi)
		}
	}
	return cut(s+th.Dim.Render("  ←/→ · esc hides"), d.w)
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
	d.logView.SetContent(strings.Join(wrapLog(r.logs, d.logView.Width), "\n"))
	if follow {
		d.logView.GotoBottom()
	}
}

func (d *dashboard) View() string {
	r := d.run()
	if r == nil {
		return fit(d.sh.th.Dim.Render("No training yet: pick an environment and start one (1 or n)."), d.w, d.h)
	}
	if d.log.open {
		d.log.update(r.name(), r.logs)
		return d.log.view(d.w, d.h)
	}
	d.words.load(r.info.RunDir)
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
	chart := d.chart
	if d.cursorLines() > 0 {
		chart += "\n" + d.cursorLine(r)
	}
	switch {
	case d.opts.grid:
		if !d.compact {
			parts = append(parts, d.runLine(r))
		}
		parts = append(parts, chart)
	case d.wordsW == d.w && !d.compact:
		parts = append(parts, d.runLine(r), d.wordsPanel(d.w, d.chartH+d.cursorLines()))
	case d.wordsW == d.w:
		parts = append(parts, d.wordsPanel(d.w, d.chartH))
	case d.wordsW > 0:
		parts = append(parts, d.runLine(r), columns(chart, d.wordsPanel(d.wordsW, d.chartH+d.cursorLines())))
	case !d.compact:
		parts = append(parts, d.runLine(r), columns(chart, d.side(r)))
	case d.h >= 16:
		parts = append(parts, chart, d.compactFigures(r))
	default:
		parts = append(parts, chart)
	}
	parts = append(parts, d.progressLine(r))
	if d.logH > 0 && !(d.opts.grid && d.h < 30) {
		d.syncLog(r)
		parts = append(parts, box(d.sh.th, "log", d.logView.View(), d.w, d.logView.Height+2))
	}
	return fit(strings.Join(parts, "\n"), d.w, d.h)
}

// runList lists the runs with their state, step, speed and time left, the
// focused one marked; compact layouts show one line. Narrow rows give up
// the speed before the time left, and cut the name before anything else.
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
	const stateW, stepsW, spsW = 11, 18, 17
	etaW := 0
	for _, r := range runs.runs {
		etaW = max(etaW, len([]rune(r.eta())))
	}
	showSps := d.w-2-stateW-stepsW-spsW-etaW >= 30
	nameW := d.w - 2 - stateW - stepsW - etaW
	if showSps {
		nameW -= spsW
	}
	start := max(0, min(i-n/2, len(runs.runs)-n))
	var lines []string
	for j := start; j < start+n; j++ {
		r := runs.runs[j]
		mark := "  "
		if j == i {
			mark = "▸ "
		}
		name := r.name()
		if r.background {
			name += " (bg)"
		}
		line := mark + fitLine(cut(name, nameW-1), nameW) + fitLine(string(r.state), stateW) +
			fitLine(steps(float64(r.last.Step))+"/"+steps(float64(r.total))+" "+r.percent(), stepsW)
		if showSps {
			line += fitLine(r.sps()+" steps/s", spsW)
		}
		line += r.eta()
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
	right := th.Dim.Render("device ") + deviceName(r.info.Device)
	if d.compact {
		return cut(left, d.w)
	}
	gap := d.w - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 2 {
		return cut(left+"  "+right, d.w)
	}
	return left + strings.Repeat(" ", gap) + right
}

// deviceName is the device as the trainer names it, in good English
// ("cpu (1 thread)").
func deviceName(s string) string { return strings.Replace(s, "(1 threads)", "(1 thread)", 1) }

func (d *dashboard) runLine(r *run) string {
	dir := termtext.Clean(r.info.RunDir)
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

// figure is one labelled number in the side panel; spark names the metric
// whose sparkline it may have.
type figure struct {
	label, value, spark string
}

// figures are the side panel's lines: progress first, then every metric
// the registry puts among the figures that the run offers, a band's
// bounds beside its metric, and the iteration.
func (d *dashboard) figures(r *run) []figure {
	m := r.last
	figs := []figure{{label: "step", value: steps(float64(m.Step)) + " of " + steps(float64(r.total))}}
	for _, def := range runMetrics(r.hist, func(m runstore.Metric) bool { return m.Figure }) {
		f := figure{label: def.Label, value: lastValue(r, def)}
		if sparkMetric(def) {
			f.spark = def.Name
		}
		figs = append(figs, f)
		if def.Band[0] != "" {
			lo, hi := lastValue(r, metricInfo(def.Band[0])), lastValue(r, metricInfo(def.Band[1]))
			figs = append(figs, figure{label: " min / max", value: lo + " / " + hi})
		}
	}
	return append(figs, figure{label: "iteration", value: strconv.Itoa(m.Iter)})
}

// lastValue prints a metric's value in r's latest record, or, for a figure
// only some records carry (validation's, an env's), its latest value.
func lastValue(r *run, def runstore.Metric) string {
	v, _ := r.last.Value(def.Name)
	if !builtinMetric(def) {
		v = r.hist.last(def.Name)
	}
	if def.Integer && !math.IsNaN(v) {
		return thousands(int64(v))
	}
	return num(v)
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
		if sparkW > 0 && fg.spark != "" && lipgloss.Width(fg.value)+1 <= valW-sparkW {
			sw = sparkW
		}
		line := th.Dim.Render(fitLine(fg.label, 14)) + fitLine(cut(fg.value, valW-sw), valW-sw)
		if sw > 0 {
			line += th.Curve.Render(sparkline(r.hist.values(fg.spark), sw))
		}
		b.WriteString(line)
	}
	if len(r.edits) > 0 {
		b.WriteString("\n" + th.Marker.Render("┊ "+plural(len(r.edits), "live edit", "live edits")+", the last:"))
		e := r.edits[len(r.edits)-1]
		b.WriteString("\n" + th.Marker.Render(cut(fmt.Sprintf("  %s = %s @ %s", e.Key, e.Value, steps(float64(e.Step))), inner)))
	}
	h := d.chartH + d.cursorLines()
	return box(th, "figures", b.String(), d.sideW, h)
}

// compactFigures is the side panel squeezed into three lines: the figures
// as "label value" items, as many as two lines hold.
func (d *dashboard) compactFigures(r *run) string {
	var items []string
	for _, f := range d.figures(r)[1:] { // the progress line says the step
		items = append(items, strings.TrimSpace(f.label)+" "+f.value)
	}
	lines := strings.SplitN(wrapItems(items, "  ", d.w, 2), "\n", 3)
	for len(lines) < 2 {
		lines = append(lines, "")
	}
	l1, l2 := lines[0], lines[1]
	l3 := d.sh.th.Dim.Render("device " + deviceName(r.info.Device))
	if len(r.edits) > 0 {
		e := r.edits[len(r.edits)-1]
		l3 = d.sh.th.Marker.Render(fmt.Sprintf("┊ %s; the last %s = %s", plural(len(r.edits), "edit", "edits"), e.Key, e.Value))
	}
	return cut(l1, d.w) + "\n" + cut(l2, d.w) + "\n" + cut(l3, d.w)
}

func (d *dashboard) Help() help.KeyMap {
	if d.log.open {
		return d.log.help()
	}
	if h := d.ctl.help(); h != nil {
		return *h
	}
	k := d.keys
	r := d.run()
	if r == nil {
		return helpKeys{short: []key.Binding{k.NewRun}}
	}
	// The pause key says what it will do; a run that ended takes no
	// controls; one run has none to switch to.
	if r.state == stPaused || r.state == stPausing {
		k.Pause = renamed(k.Pause, "resume")
	} else {
		k.Pause = renamed(k.Pause, "pause")
	}
	for _, b := range []*key.Binding{&k.Pause, &k.Save, &k.LiveEdit, &k.StopRun} {
		b.SetEnabled(r.active())
	}
	for _, b := range []*key.Binding{&k.NextRun, &k.PrevRun} {
		b.SetEnabled(len(d.sh.runs.runs) > 1)
	}
	k.Words.SetEnabled(len(d.words.group) > 0 || d.wordsShown()) // offered to runs that write transcripts
	if d.wordsShown() {
		k.Words = renamed(k.Words, "hide transcripts")
	}
	return k
}

func (d *dashboard) KeyMaps() []help.KeyMap {
	return []help.KeyMap{d.keys, d.log.keys, d.log.searchKeys, metricPickKeys, rangeKeys}
}
