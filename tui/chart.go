package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/NimbleMarkets/ntcharts/canvas"
	tslc "github.com/NimbleMarkets/ntcharts/linechart/timeserieslinechart"
	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// channel names one metric kept in a history.
type channel int

const (
	chReturn    channel = iota // ep_return_mean
	chReturnMin                // ep_return_min (the band's floor)
	chReturnMax                // ep_return_max (the band's ceiling)
	chReturnEMA                // exponentially smoothed ep_return_mean
	chLength
	chPolicyLoss
	chValueLoss
	chEntropy
	chApproxKL
	chClipFrac
	chExplVar
	chSPS
	numChannels
)

// emaWeight is the smoothing weight per metrics record (TensorBoard's
// slider, debiased so the start is not dragged toward zero).
const emaWeight = 0.9

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
	start, last int64 // bucket start, last step seen in it
	ch          [numChannels]agg
}

// history is a run's metrics over environment steps, downsampled to at most
// historyBuckets buckets: when they are all used, neighbours merge and the
// span doubles. Memory and redraw cost stay constant however long the run,
// and every bucket still holds the exact mean, min and max of its records
// (ntcharts' own point buffer never trims, so charts redraw from this).
type history struct {
	span    int64
	buckets []bucket
	records int
	ema     float64 // biased EMA of ep_return_mean
	emaN    int     // returns folded into ema
}

func newHistory() *history { return &history{span: 1} }

// historyOf builds a history from records read back from a run directory.
func historyOf(ms []trainer.Metrics) *history {
	h := newHistory()
	for _, m := range ms {
		h.add(m)
	}
	return h
}

// add folds one metrics record in. Steps must not go backwards; a record
// that does (a resumed run rewinding) joins the last bucket.
func (h *history) add(m trainer.Metrics) {
	h.records++
	ret := float64(m.EpReturnMean)
	smoothed := math.NaN()
	if !math.IsNaN(ret) && !math.IsInf(ret, 0) {
		h.ema = emaWeight*h.ema + (1-emaWeight)*ret
		h.emaN++
		smoothed = h.ema / (1 - math.Pow(emaWeight, float64(h.emaN)))
	}
	b := h.bucketFor(m.Step)
	b.last = max(b.last, m.Step)
	vals := [numChannels]float64{
		chReturn: ret, chReturnMin: float64(m.EpReturnMin), chReturnMax: float64(m.EpReturnMax),
		chReturnEMA: smoothed, chLength: float64(m.EpLengthMean), chPolicyLoss: float64(m.PolicyLoss),
		chValueLoss: float64(m.ValueLoss), chEntropy: float64(m.Entropy), chApproxKL: float64(m.ApproxKL),
		chClipFrac: float64(m.ClipFrac), chExplVar: float64(m.ExplainedVariance), chSPS: float64(m.SPS),
	}
	for c, v := range vals {
		b.ch[c].add(v)
	}
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
			for c := range o.ch {
				o.ch[c].merge(b.ch[c])
			}
			continue
		}
		out = append(out, b)
	}
	h.buckets = out
}

// point is one chart point: x in environment steps.
type point struct{ x, y float64 }

// stat picks what of a bucket's aggregate a series shows.
type stat int

const (
	statMean stat = iota
	statMin
	statMax
)

// series returns one channel as chart points, one per bucket that has data.
func (h *history) series(c channel, s stat) []point {
	pts := make([]point, 0, len(h.buckets))
	for _, b := range h.buckets {
		a := b.ch[c]
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
		pts = append(pts, point{float64(b.last), y})
	}
	return pts
}

// values returns a channel's bucket means, for sparklines.
func (h *history) values(c channel) []float64 {
	out := make([]float64, 0, len(h.buckets))
	for _, b := range h.buckets {
		out = append(out, b.ch[c].mean())
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
	xmax    float64   // right end of the X axis in steps; 0 means the data's
	curves  []curve   // drawn in order: later curves win shared cells
	markers []float64 // steps of live edits, drawn as dotted columns
	empty   string    // shown when no curve has a point
}

// renderChart draws curves as a braille line chart with ntcharts'
// time-series chart: X holds environment steps as Unix seconds, and both
// ranges are set explicitly (the chart's automatic ranges start at now).
func renderChart(th *theme, s chartSpec) string { return new(chartCanvas).render(th, s) }

// chartCanvas keeps an ntcharts chart between redraws of the same size: a
// new one allocates a styled cell per character, megabytes a second at the
// dashboard's redraw rate, in the trainer's process.
type chartCanvas struct {
	c    *tslc.Model
	w, h int
}

func (cc *chartCanvas) render(th *theme, s chartSpec) string {
	if s.w < 12 || s.h < 4 {
		return fit("", max(s.w, 0), max(s.h, 0))
	}
	ymin, ymax, xmax := math.Inf(1), math.Inf(-1), s.xmax
	for _, c := range s.curves {
		for _, p := range c.pts {
			ymin, ymax = math.Min(ymin, p.y), math.Max(ymax, p.y)
			xmax = math.Max(xmax, p.x)
		}
	}
	if math.IsInf(ymin, 1) {
		msg := s.empty
		if msg == "" {
			msg = "no data yet"
		}
		pad := strings.Repeat("\n", max(s.h/2-1, 0))
		return fit(pad+lipgloss.PlaceHorizontal(s.w, lipgloss.Center, th.Dim.Render(msg)), s.w, s.h)
	}
	ymin, ymax = padRange(ymin, ymax)
	xmax = math.Max(math.Ceil(xmax), 1)

	ystep := 2
	if s.h >= 14 {
		ystep = 3
	}
	if cc.c == nil || cc.w != s.w || cc.h != s.h {
		c := tslc.New(s.w, s.h,
			tslc.WithXYSteps(max(s.w/6, 8), ystep),
			tslc.WithAxesStyles(th.Axis, th.Label),
			tslc.WithXLabelFormatter(func(_ int, v float64) string { return steps(v) }),
		)
		cc.c, cc.w, cc.h = &c, s.w, s.h
	}
	c := cc.c
	c.ClearAllData() // its point buffers never trim: refill them from the history
	c.YLabelFormatter = yLabels(ymax - ymin)
	c.SetTimeRange(time.Unix(0, 0), time.Unix(int64(xmax), 0))
	c.SetViewTimeRange(time.Unix(0, 0), time.Unix(int64(xmax), 0))
	c.SetYRange(ymin, ymax)
	c.SetViewYRange(ymin, ymax)
	var names []string
	for i, cv := range s.curves {
		if len(cv.pts) == 0 {
			continue // ntcharts stops drawing at the first empty data set
		}
		name := fmt.Sprintf("%03d", i)
		c.SetDataSetStyle(name, cv.style)
		for _, p := range cv.pts {
			c.PushDataSet(name, tslc.TimePoint{Time: time.Unix(int64(math.Round(p.x)), 0), Value: p.y})
		}
		names = append(names, name)
	}
	c.DrawBrailleDataSets(names)

	// Column and row of a data point inside the graph area.
	o, gw, gh := c.Origin(), c.GraphWidth(), c.GraphHeight()
	col := func(x float64) int {
		return o.X + 1 + min(max(int(x/xmax*float64(gw)), 0), gw-1)
	}
	row := func(y float64) int {
		return o.Y - 1 - min(max(int((y-ymin)/(ymax-ymin)*float64(gh)), 0), gh-1)
	}
	for _, x := range s.markers {
		cx := col(x)
		for y := 0; y < o.Y; y++ {
			p := canvas.Point{X: cx, Y: y}
			if r := c.Canvas.Cell(p).Rune; r == 0 || r == ' ' {
				c.Canvas.SetCell(p, canvas.NewCellWithStyle('┊', th.Marker))
			}
		}
		c.Canvas.SetCell(canvas.Point{X: cx, Y: 0}, canvas.NewCellWithStyle('▾', th.Marker))
	}
	for _, cv := range s.curves {
		if cv.label == "" || len(cv.pts) == 0 {
			continue
		}
		last := cv.pts[len(cv.pts)-1]
		cx := min(col(last.x)+1, s.w-1)
		c.Canvas.SetStringWithStyle(canvas.Point{X: cx, Y: row(last.y)}, cut(cv.label, s.w-cx), cv.style.Bold(true))
	}
	return fit(canvasView(&c.Canvas), s.w, s.h)
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

// padRange widens a value range by 5% each side (and to a sane width when
// all values are equal), keeping non-negative data non-negative.
func padRange(lo, hi float64) (float64, float64) {
	pad := (hi - lo) * 0.05
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.05, 0.5)
	}
	nlo := lo - pad
	if lo >= 0 && nlo < 0 {
		nlo = 0
	}
	return nlo, hi + pad
}

// yLabels formats Y ticks with as many decimals as the range needs.
func yLabels(span float64) func(int, float64) string {
	dec := 0
	switch {
	case span < 0.1:
		dec = 3
	case span < 1:
		dec = 2
	case span < 10:
		dec = 1
	}
	return func(_ int, v float64) string {
		if math.Abs(v) >= 1e4 {
			return steps(v)
		}
		return fmt.Sprintf("%.*f", dec, v)
	}
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
