package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/NimbleMarkets/ntcharts/canvas"
	tslc "github.com/NimbleMarkets/ntcharts/linechart/timeserieslinechart"
	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// historyBuckets bounds a history's memory and drawing cost; a chart is at
// most a few hundred braille dots wide, so more would not show.
const historyBuckets = 512

// agg aggregates the values of one channel in one bucket; NaN values
// (undefined metrics, such as returns before any episode ends) are skipped.
type agg struct {
	n                    int
	sum, lo, hi, lastVal float64
}

func (a *agg) add(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if a.n == 0 || v < a.lo {
		a.lo = v
	}
	if a.n == 0 || v > a.hi {
		a.hi = v
	}
	a.n++
	a.sum += v
	a.lastVal = v
}

func (a *agg) merge(b agg) {
	if b.n == 0 {
		return
	}
	if a.n == 0 {
		*a = b
		return
	}
	a.n += b.n
	a.sum += b.sum
	a.lo, a.hi, a.lastVal = math.Min(a.lo, b.lo), math.Max(a.hi, b.hi), b.lastVal
}

func (a agg) mean() float64 {
	if a.n == 0 {
		return math.NaN()
	}
	return a.sum / float64(a.n)
}

// bucket aggregates the records whose step lies in [start, start+span).
type bucket struct {
	start, last int64   // bucket start, last step seen in it
	time        float64 // wall seconds of the last record in it
	ch          []agg   // by the history's slot of each metric
}

// history is a run's metrics over environment steps, downsampled to at most
// historyBuckets buckets: when they are all used, neighbours merge and the
// span doubles. Memory and redraw cost stay constant however long the run,
// and every bucket still holds the exact mean, min and max of its records
// and the values of its last one (ntcharts' own point buffer never trims,
// so charts redraw from this). It keeps every metric a record carries:
// the registry's and those the run reports.
type history struct {
	span    int64
	buckets []bucket
	records int
	names   []string       // the metrics held, by slot
	slot    map[string]int // a metric's slot in names, counts and buckets
	counts  []int          // values of each metric seen (has asks)
	extras  int            // records that carried figures beyond the built-in ones
	fields  []string       // the metrics a record holds in fields of its own (the others are in Extra)
	slots   []int          // each field's slot
}

func newHistory() *history {
	h := &history{span: 1, slot: map[string]int{}}
	for _, m := range runstore.MetricList() {
		if !m.Axis && recordField(m.Name) {
			h.fields = append(h.fields, m.Name)
			h.slots = append(h.slots, h.slotOf(m.Name))
		}
	}
	return h
}

// recordField reports whether a record keeps the metric in a field of its
// own rather than among its Extra figures: a record that carries the
// name in Extra alone does not read it back.
func recordField(name string) bool {
	var probe runstore.Metrics
	probe.Set(name, 1)
	v, ok := probe.Value(name)
	return ok && v != 1
}

// historyOf builds a history from records read back from a run directory.
func historyOf(ms []trainer.Metrics) *history {
	h := newHistory()
	for i := range ms {
		h.add(ms[i])
	}
	return h
}

// slotOf is name's slot, made on first sight.
func (h *history) slotOf(name string) int {
	if i, ok := h.slot[name]; ok {
		return i
	}
	h.slot[name] = len(h.names)
	h.names = append(h.names, name)
	h.counts = append(h.counts, 0)
	return len(h.names) - 1
}

// add folds one metrics record in. Steps must not go backwards; a record
// that does (a resumed run rewinding) joins the last bucket.
func (h *history) add(m trainer.Metrics) {
	h.records++
	b := h.bucketFor(m.Step)
	b.last = max(b.last, m.Step)
	if t := float64(m.TimeS); !math.IsNaN(t) {
		b.time = math.Max(b.time, t)
	}
	put := func(c int, v float64) {
		if c >= len(b.ch) {
			b.ch = append(b.ch, make([]agg, len(h.names)-len(b.ch))...)
		}
		b.ch[c].add(v)
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			h.counts[c]++
		}
	}
	for i, name := range h.fields {
		v, _ := m.Value(name)
		put(h.slots[i], v)
	}
	if len(m.Extra) > 0 {
		h.extras++
		for name, v := range m.Extra {
			put(h.slotOf(name), float64(v))
		}
	}
}

// ownFigures reports whether the run reports figures beyond the built-in
// ones, seen over its first records.
func (h *history) ownFigures() bool { return h.records >= 3 && h.extras > 0 }

func (h *history) metricNames() []string { return h.names }

// aggOf is the aggregate of metric name in b (empty when b has none).
func (h *history) aggOf(b *bucket, name string) agg {
	if c, ok := h.slot[name]; ok && c < len(b.ch) {
		return b.ch[c]
	}
	return agg{}
}

func (h *history) bucketFor(step int64) *bucket {
	for {
		start := step / h.span * h.span
		if n := len(h.buckets); n > 0 && start <= h.buckets[n-1].start {
			return &h.buckets[n-1]
		}
		if len(h.buckets) < historyBuckets {
			h.buckets = append(h.buckets, bucket{start: start, last: step})
			return &h.buckets[len(h.buckets)-1]
		}
		h.compact()
	}
}

// compact doubles the span, merging buckets that now share a start.
func (h *history) compact() {
	h.span *= 2
	out := h.buckets[:0]
	for _, b := range h.buckets {
		b.start = b.start / h.span * h.span
		if n := len(out); n > 0 && out[n-1].start == b.start {
			o := &out[n-1]
			o.last = max(o.last, b.last)
			o.time = math.Max(o.time, b.time)
			if len(b.ch) > len(o.ch) {
				o.ch = append(o.ch, make([]agg, len(b.ch)-len(o.ch))...)
			}
			for c := range b.ch {
				o.ch[c].merge(b.ch[c])
			}
			continue
		}
		out = append(out, b)
	}
	h.buckets = out
}

// point is one chart point: x in environment steps (or seconds), and n,
// how many records its bucket holds (smoothing weighs by it).
type point struct {
	x, y float64
	n    int
}

// stat picks what of a bucket's aggregate a series shows.
type stat int

const (
	statMean stat = iota
	statMin
	statMax
)

// series returns one metric as chart points over env steps, one per
// bucket that has data.
func (h *history) series(name string, s stat) []point { return h.seriesOn(name, s, false) }

// has reports whether a metric holds any value.
func (h *history) has(name string) bool {
	c, ok := h.slot[name]
	return ok && h.counts[c] > 0
}

// lastTime is the wall seconds of the latest record.
func (h *history) lastTime() float64 {
	if len(h.buckets) == 0 {
		return 0
	}
	return h.buckets[len(h.buckets)-1].time
}

// last is a metric's latest value (NaN when it has none).
func (h *history) last(name string) float64 {
	for i := len(h.buckets) - 1; i >= 0; i-- {
		if a := h.aggOf(&h.buckets[i], name); a.n > 0 {
			return a.lastVal
		}
	}
	return math.NaN()
}

// seriesOn is series with x in wall seconds when wall is set.
func (h *history) seriesOn(name string, s stat, wall bool) []point {
	pts := make([]point, 0, len(h.buckets))
	for i := range h.buckets {
		b := &h.buckets[i]
		a := h.aggOf(b, name)
		if a.n == 0 {
			continue
		}
		y := a.mean()
		switch s {
		case statMin:
			y = a.lo
		case statMax:
			y = a.hi
		}
		x := float64(b.last)
		if wall {
			x = b.time
		}
		pts = append(pts, point{x, y, a.n})
	}
	return pts
}

// smooth is TensorBoard's smoothing of pts with weight w: an exponential
// moving average debiased at the start, each bucket weighing as many
// records as it holds. w = 0 returns pts.
func smooth(pts []point, w float64) []point {
	if w <= 0 || len(pts) == 0 {
		return pts
	}
	out := make([]point, len(pts))
	var acc, norm float64
	for i, p := range pts {
		wb := w
		if p.n > 1 {
			wb = math.Pow(w, float64(p.n))
		}
		acc = wb*acc + (1-wb)*p.y
		norm = wb*norm + (1 - wb)
		out[i] = point{p.x, acc / norm, p.n}
	}
	return out
}

// at is the record of metric name nearest to x (steps, or seconds with
// wall): its x and value, exact when its bucket holds one record, the
// bucket's last otherwise.
func (h *history) at(name string, x float64, wall bool) (float64, float64, bool) {
	best, bx, bv, found := math.Inf(1), 0.0, 0.0, false
	for i := range h.buckets {
		b := &h.buckets[i]
		a := h.aggOf(b, name)
		if a.n == 0 {
			continue
		}
		bxx := float64(b.last)
		if wall {
			bxx = b.time
		}
		if d := math.Abs(bxx - x); d < best {
			best, bx, bv, found = d, bxx, a.lastVal, true
		}
	}
	return bx, bv, found
}

// values returns a metric's bucket means, for sparklines.
func (h *history) values(name string) []float64 {
	out := make([]float64, 0, len(h.buckets))
	for i := range h.buckets {
		a := h.aggOf(&h.buckets[i], name)
		out = append(out, a.mean())
	}
	return out
}

// lastStep is the largest step seen.
func (h *history) lastStep() int64 {
	if len(h.buckets) == 0 {
		return 0
	}
	return h.buckets[len(h.buckets)-1].last
}

// curve is one line on a chart.
type curve struct {
	pts   []point
	style lipgloss.Style
	label string // drawn at the curve's end when set (run numbers in overlays)
}

// chartSpec describes a chart to draw.
type chartSpec struct {
	w, h    int
	xmin    float64   // left end of the X axis (zoomed charts start later)
	xmax    float64   // right end of the X axis; 0 means the data's
	xclip   bool      // xmax is a hard end (a typed range): later points are left out
	xTime   bool      // X is wall-clock seconds (labels m:ss), not env steps
	logY    bool      // log-scale Y: values ≤ 0 are left out
	curves  []curve   // drawn in order: later curves win shared cells
	markers []float64 // X of live edits, drawn as dotted columns
	empty   string    // shown when no curve has a point
	cursor  int       // a column of the graph drawn as the value cursor; -1 none
}

// renderChart draws curves as a braille line chart with ntcharts'
// time-series chart: X holds environment steps (or seconds) as Unix
// seconds, and both ranges are set explicitly (the chart's automatic ranges
// start at now).
func renderChart(th *theme, s chartSpec) string { return new(chartCanvas).render(th, s) }

// chartCanvas keeps an ntcharts chart between redraws of the same size: a
// new one allocates a styled cell per character, megabytes a second at the
// dashboard's redraw rate, in the trainer's process.
type chartCanvas struct {
	c    *tslc.Model
	w, h int
	// Where the last render put the cursor: its column (clamped to the
	// graph) and the X it stands for.
	cursorCol int
	cursorX   float64
}

// ticks are a chart axis's round values: multiples of step from lo to hi.
type ticks struct{ lo, hi, step float64 }

// niceStep is 1, 2, 2.5 or 5 times a power of ten, at least span/n.
func niceStep(span float64, n int) float64 {
	if span <= 0 || n < 1 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// niceTicks widens [lo, hi] to multiples of a round step (1, 2, 2.5 or 5
// times a power of ten), with at most n intervals: of the steps that fit,
// the one that wastes least of the axis, so that a curve's top or bottom
// (CartPole's plateau at 500) is a labelled tick when it can be.
func niceTicks(lo, hi float64, n int) ticks {
	n = max(n, 2) // a range across zero needs two intervals
	span := hi - lo
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return ticks{lo, lo + 1, 1}
	}
	best := ticks{}
	found := false
	p := math.Pow(10, math.Floor(math.Log10(span/float64(n))))
	for _, pp := range []float64{p, 10 * p, 100 * p} {
		for _, m := range []float64{1, 2, 2.5, 5} {
			step := m * pp
			t := ticks{math.Floor(lo/step+1e-9) * step, math.Ceil(hi/step-1e-9) * step, step}
			if t.hi <= t.lo {
				t.hi = t.lo + step
			}
			if (t.hi-t.lo)/step > float64(n)+1e-9 {
				continue
			}
			if !found || t.hi-t.lo < best.hi-best.lo-1e-9*span {
				best, found = t, true
			}
		}
	}
	if !found {
		return ticks{lo, hi, hi - lo}
	}
	return best
}

// values lists the ticks; zero is exactly zero (never -0).
func (t ticks) values() []float64 {
	var out []float64
	for k := math.Round(t.lo / t.step); k*t.step <= t.hi+t.step*1e-6; k++ {
		v := k * t.step
		if k == 0 || math.Abs(v) < t.step*1e-9 {
			v = 0
		}
		out = append(out, v)
	}
	return out
}

// timeStep is a round interval of wall-clock seconds, at least span/n.
func timeStep(span float64, n int) float64 {
	raw := span / float64(max(n, 1))
	if raw < 1 {
		return niceStep(span, max(n, 1)) // tenths of a second for a short run
	}
	for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400} {
		if s >= raw {
			return s
		}
	}
	return niceStep(span/86400, n) * 86400
}

// noNegZero turns "-0", "-0.00" into "0", "0.00".
func noNegZero(s string) string {
	if strings.HasPrefix(s, "-") && strings.Trim(s[1:], "0.") == "" {
		return s[1:]
	}
	return s
}

// timeLabel prints a wall-clock tick: m:ss, or seconds with decimals when
// the ticks are less than a second apart.
func timeLabel(v, step float64) string {
	if step >= 1 {
		return duration(time.Duration(math.Round(v)) * time.Second)
	}
	return tickLabel(v, step) + "s"
}

// tickLabel prints an axis value with the decimals its step needs.
func tickLabel(v, step float64) string {
	if math.Abs(v) >= 1e4 {
		return noNegZero(steps(v))
	}
	dec := 0
	for d := step; dec < 6 && math.Abs(d-math.Round(d)) > 1e-9*math.Max(step, 1); d *= 10 {
		dec++
	}
	return noNegZero(fmt.Sprintf("%.*f", dec, v))
}

// logLabel prints 10^v compactly (a log axis's tick): 320, 1, 0.05, 1e-5.
func logLabel(v float64) string {
	x := math.Pow(10, v)
	e := math.Floor(v + 1e-9)
	p := math.Pow(10, e-1)
	x = math.Round(x/p) * p // two significant digits
	switch {
	case x >= 1e4:
		return steps(x)
	case x >= 0.01:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	m := strconv.FormatFloat(math.Round(x/math.Pow(10, e)*10)/10, 'f', -1, 64)
	return m + "e" + strconv.Itoa(int(e))
}

// xScale is the resolution of the X axis handed to ntcharts, which keeps
// X as whole Unix seconds: data are mapped onto 0…xScale, so a run of
// under a second still draws a line (and its labels are ours).
const xScale = 1 << 20

func (cc *chartCanvas) render(th *theme, s chartSpec) string {
	if s.w < 12 || s.h < 3 {
		return fit("", max(s.w, 0), max(s.h, 0))
	}
	ty := func(y float64) (float64, bool) {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			return 0, false
		}
		if s.logY {
			if y <= 0 {
				return 0, false
			}
			return math.Log10(y), true
		}
		return y, true
	}
	xmin := s.xmin
	ymin, ymax, xmax := math.Inf(1), math.Inf(-1), s.xmax
	curves := make([]curve, len(s.curves))
	for i, c := range s.curves {
		curves[i] = c
		curves[i].pts = nil
		for _, p := range c.pts {
			y, ok := ty(p.y)
			if !ok || p.x < xmin || (s.xclip && p.x > s.xmax) {
				continue
			}
			curves[i].pts = append(curves[i].pts, point{p.x, y, p.n})
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
			xmax = math.Max(xmax, p.x)
		}
	}
	if math.IsInf(ymin, 1) {
		msg := s.empty
		if msg == "" {
			msg = "no data yet"
		}
		for _, c := range s.curves {
			if s.logY && len(c.pts) > 0 {
				msg = "no positive values to draw on a log scale"
			}
		}
		pad := strings.Repeat("\n", max(s.h/2-1, 0))
		return fit(pad+lipgloss.PlaceHorizontal(s.w, lipgloss.Center, th.Dim.Render(cut(msg, s.w))), s.w, s.h)
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	xAxis := s.h >= 5 // room for the X axis and its labels
	gh := s.h
	if xAxis {
		gh = s.h - 2
	}
	// Y: round ticks, the range widened to them, at most one a row.
	if ymax-ymin < 1e-12*math.Max(math.Abs(ymax), 1) {
		pad := math.Max(math.Abs(ymax)*0.05, 0.5)
		if s.logY {
			pad = 0.5
		}
		ymin, ymax = ymin-pad, ymax+pad
	}
	// A value's cell row as ntcharts counts its Y labels, up from its
	// origin: where its braille grid puts the value's dots, four to a cell,
	// so that a label sits on the row its value is drawn on. With an X
	// axis the origin is the axis's row, one below the graph's gh rows;
	// without one it is the graph's bottom row, and the dots take gh-1
	// rows above it (as measured: ntcharts leaves the top row empty).
	base, rows := 1, gh
	if !xAxis {
		base, rows = 0, max(gh-1, 1)
	}
	n := max(min(rows/2, rows-1), 1)
	yt := niceTicks(ymin, ymax, n)
	if s.logY && yt.step < 1 && ymax-ymin >= 1 {
		yt = ticks{math.Floor(ymin), math.Ceil(ymax), math.Max(1, math.Ceil((math.Ceil(ymax)-math.Floor(ymin))/float64(n)))}
	}
	ylo, yhi := yt.lo, yt.hi
	rowOf := func(y float64) int {
		f := (y - ylo) / (yhi - ylo)
		return base + min(max(int(f*float64(4*rows-1))/4, 0), rows-1)
	}
	yLabels := map[int]string{}
	vals := yt.values()
	for i, v := range vals {
		row := rowOf(v)
		if _, taken := yLabels[row]; taken && i != len(vals)-1 {
			continue // the ends win a shared row
		}
		if s.logY {
			yLabels[row] = logLabel(v)
		} else {
			yLabels[row] = tickLabel(v, yt.step)
		}
	}

	if cc.c == nil || cc.w != s.w || cc.h != s.h {
		xs := 1
		if !xAxis {
			xs = 0
		}
		c := tslc.New(s.w, s.h, tslc.WithXYSteps(xs, 1), tslc.WithAxesStyles(th.Axis, th.Label))
		cc.c, cc.w, cc.h = &c, s.w, s.h
	}
	c := cc.c
	c.ClearAllData() // its point buffers never trim: refill them from the history
	c.YLabelFormatter = func(i int, _ float64) string { return yLabels[i] }
	// X: round ticks over [xmin, xmax], placed once the Y labels' width
	// has fixed the graph's.
	var xLabels map[int]string
	c.XLabelFormatter = func(i int, _ float64) string {
		if xLabels == nil {
			xLabels = map[int]string{}
			gw := c.GraphWidth()
			n := max(gw/9, 1)
			var step float64
			if s.xTime {
				step = timeStep(xmax-xmin, n)
			} else {
				step = niceStep(xmax-xmin, n)
			}
			xt := ticks{math.Ceil(xmin/step-1e-9) * step, xmax, step}
			for _, v := range xt.values() {
				col := int(math.Round((v - xmin) / (xmax - xmin) * float64(gw)))
				if s.xTime {
					xLabels[col] = timeLabel(v, step)
				} else {
					xLabels[col] = noNegZero(steps(v))
				}
			}
		}
		return xLabels[i]
	}
	scaled := func(x float64) time.Time {
		return time.Unix(int64(math.Round((x-xmin)/(xmax-xmin)*xScale)), 0)
	}
	c.SetTimeRange(time.Unix(0, 0), time.Unix(xScale, 0))
	c.SetViewTimeRange(time.Unix(0, 0), time.Unix(xScale, 0))
	c.SetYRange(ylo, yhi)
	c.SetViewYRange(ylo, yhi)
	var names []string
	for i, cv := range curves {
		if len(cv.pts) == 0 {
			continue // ntcharts stops drawing at the first empty data set
		}
		name := fmt.Sprintf("%03d", i)
		c.SetDataSetStyle(name, cv.style)
		for _, p := range cv.pts {
			c.PushDataSet(name, tslc.TimePoint{Time: scaled(p.x), Value: p.y})
		}
		names = append(names, name)
	}
	c.DrawBrailleDataSets(names)

	// Column and row of a data point inside the graph area.
	o, gw := c.Origin(), c.GraphWidth()
	col := func(x float64) int {
		return o.X + 1 + min(max(int((x-xmin)/(xmax-xmin)*float64(gw)), 0), gw-1)
	}
	for _, x := range s.markers {
		if x < xmin || x > xmax {
			continue
		}
		cx := col(x)
		for y := 0; y < o.Y; y++ {
			p := canvas.Point{X: cx, Y: y}
			if r := c.Canvas.Cell(p).Rune; r == 0 || r == ' ' {
				c.Canvas.SetCell(p, canvas.NewCellWithStyle('┊', th.Marker))
			}
		}
		c.Canvas.SetCell(canvas.Point{X: cx, Y: 0}, canvas.NewCellWithStyle('▾', th.Marker))
	}
	if s.cursor >= 0 && gw > 0 {
		cc.cursorCol = min(s.cursor, gw-1)
		cc.cursorX = xmin + (float64(cc.cursorCol)+0.5)/float64(gw)*(xmax-xmin)
		cx := o.X + 1 + cc.cursorCol
		for y := 0; y < o.Y; y++ {
			p := canvas.Point{X: cx, Y: y}
			if r := c.Canvas.Cell(p).Rune; r == 0 || r == ' ' || r == '┊' {
				c.Canvas.SetCell(p, canvas.NewCellWithStyle('│', th.Cursor))
			}
		}
	}
	cc.labelEnds(th, curves, col, func(y float64) int { return o.Y - rowOf(y) }, o.Y, s.w)
	return fit(canvasView(&c.Canvas), s.w, s.h)
}

// labelEnds writes each labelled curve's label just right of its last
// point; a label whose row is taken there moves to the nearest free row,
// so that sixteen overlaid runs keep sixteen readable numbers.
func (cc *chartCanvas) labelEnds(th *theme, curves []curve, col func(float64) int, row func(float64) int, rows, w int) {
	type span struct{ lo, hi int }
	taken := map[int][]span{}
	free := func(r, lo, hi int) bool {
		for _, sp := range taken[r] {
			if lo <= sp.hi && sp.lo <= hi {
				return false
			}
		}
		return true
	}
	for _, cv := range curves {
		if cv.label == "" || len(cv.pts) == 0 {
			continue
		}
		last := cv.pts[len(cv.pts)-1]
		label := cut(cv.label, max(w-1, 1))
		lw := len([]rune(label))
		cx := min(col(last.x)+1, w-lw)
		want := row(last.y)
		r := -1
		for d := 0; d < rows && r < 0; d++ {
			for _, c := range []int{want - d, want + d} {
				if c >= 0 && c < rows && free(c, cx, cx+lw-1) {
					r = c
					break
				}
			}
		}
		if r < 0 {
			continue // no row left: the colour still tells the curve
		}
		taken[r] = append(taken[r], span{cx, cx + lw - 1})
		cc.c.Canvas.SetStringWithStyle(canvas.Point{X: cx, Y: r}, label, cv.style.Bold(true))
	}
}

// canvasView renders a canvas like its View, but styles runs of cells that
// share a colour with one Render call instead of one per cell: the chart is
// redrawn ten times a second and per-cell styling dominated its cost.
func canvasView(cv *canvas.Model) string {
	var b strings.Builder
	var run []rune
	var runStyle lipgloss.Style
	flush := func() {
		if len(run) > 0 {
			b.WriteString(runStyle.Render(string(run)))
			run = run[:0]
		}
	}
	for y := 0; y < cv.Height(); y++ {
		if y > 0 {
			flush()
			b.WriteByte('\n')
		}
		for x := 0; x < cv.Width(); x++ {
			cell := cv.Cell(canvas.Point{X: x, Y: y})
			r := cell.Rune
			if r == 0 {
				r = ' '
			}
			if len(run) > 0 && !sameLook(cell.Style, runStyle) {
				flush()
			}
			if len(run) == 0 {
				runStyle = cell.Style
			}
			run = append(run, r)
		}
	}
	flush()
	return b.String()
}

func sameLook(a, b lipgloss.Style) bool {
	return a.GetForeground() == b.GetForeground() && a.GetBackground() == b.GetBackground() && a.GetBold() == b.GetBold()
}

// xExtent is the right end of a chart's X axis: the run's goal, unless the
// run is less than halfway there, when the axis ends at a round number a
// little past the data so that the curve is not squeezed into a corner.
func xExtent(last, total int64) float64 {
	if total <= 0 || last*2 < total {
		return niceCeil(math.Max(float64(last)*1.25, 1))
	}
	return float64(max(total, last))
}

// timeExtent is the right end of a wall-clock X axis whose data end at
// last seconds: a round number under a minute, the next whole second after.
func timeExtent(last float64) float64 {
	if last >= 60 {
		return math.Max(math.Ceil(last), 1)
	}
	return math.Max(niceCeil(last), 1)
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// sparkline draws values as a one-line bar sparkline of width w, averaging
// neighbours when there are more values than cells.
func sparkline(vals []float64, w int) string {
	if w <= 0 {
		return ""
	}
	const bars = "▁▂▃▄▅▆▇█"
	levels := []rune(bars)
	cells := resample(vals, w)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range cells {
		if !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	var b strings.Builder
	for _, v := range cells {
		switch {
		case math.IsNaN(v):
			b.WriteByte(' ')
		case hi == lo:
			b.WriteRune(levels[len(levels)/2])
		default:
			b.WriteRune(levels[int((v-lo)/(hi-lo)*float64(len(levels)-1)+0.5)])
		}
	}
	return b.String()
}

// resample averages vals into at most n cells (NaNs skipped).
func resample(vals []float64, n int) []float64 {
	if len(vals) <= n {
		return vals
	}
	out := make([]float64, n)
	for i := range out {
		lo, hi := i*len(vals)/n, (i+1)*len(vals)/n
		var a agg
		for _, v := range vals[lo:hi] {
			a.add(v)
		}
		out[i] = a.mean()
	}
	return out
}

// nearest is the y of the point of pts nearest to x (NaN when none).
func nearest(pts []point, x float64) float64 {
	best, y := math.Inf(1), math.NaN()
	for _, p := range pts {
		if d := math.Abs(p.x - x); d < best {
			best, y = d, p.y
		}
	}
	return y
}
