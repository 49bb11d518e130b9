// Package plot draws training curves as PNG or SVG images with gonum/plot:
// several series overlaid with a legend, TensorBoard-style smoothing, a
// shaded min/max band, round ticks. It knows nothing of runs: callers hand
// it numbers.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Series is one curve. Points whose X or Y is not finite are left out (a
// mean return before any episode has finished, say).
type Series struct {
	Name string
	X, Y []float64
	// Lo and Hi, when not nil, are as long as X: the band shaded behind the
	// curve (ep_return_min and ep_return_max). It is drawn unsmoothed.
	Lo, Hi []float64
}

// Options shape the picture.
type Options struct {
	Title, XLabel, YLabel string
	Width, Height         int     // pixels at DPI; 0: 960×600
	Smooth                float64 // EMA weight in [0, 1): 0 draws the raw curve only
	Format                string  // "png" or "svg"
	// XMin and XMax, when XMax > XMin, are the part of the X axis drawn
	// (a zoom); points outside it are left out.
	XMin, XMax float64
	LogY       bool // a logarithmic Y axis; values ≤ 0 are left out
}

// zoomed reports whether the options ask for a part of the X axis.
func (o Options) zoomed() bool { return o.XMax > o.XMin }

// DPI relates the pixel size of a PNG to the font sizes, which are in
// points: at 96, a 12-point label is 16 pixels tall.
const DPI = 96

// Palette is the colour of each series in turn (matplotlib's tab10, which
// stays readable for the common kinds of colour blindness and in grey).
var Palette = []color.NRGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
	{0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
	{0x17, 0xbe, 0xcf, 0xff},
}

// Smooth is TensorBoard's scalar smoothing: an exponential moving average
// with weight w (0 ≤ w < 1; higher is smoother),
//
//	ema_t = w·ema_{t−1} + (1−w)·y_t,   smoothed_t = ema_t / (1 − w^n)
//
// where n counts the finite values so far. Dividing by 1 − w^n removes the
// pull toward zero at the start, so the first smoothed value is the first
// value. Values that are not finite stay as they are and leave the average
// alone.
func Smooth(ys []float64, w float64) []float64 {
	out := make([]float64, len(ys))
	var ema float64
	n := 0
	for i, y := range ys {
		if w <= 0 || math.IsNaN(y) || math.IsInf(y, 0) {
			out[i] = y
			continue
		}
		ema = w*ema + (1-w)*y
		n++
		out[i] = ema / (1 - math.Pow(w, float64(n)))
	}
	return out
}

// Render draws the series and encodes the picture in o.Format. Numbers at
// the ends of float64 (one ulp apart, subnormal, near the largest) draw an
// axis of one tick; a panic of the drawing library is an error.
func Render(series []Series, o Options) (picture []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			picture, err = nil, fmt.Errorf("plot: cannot draw these values: %v", p)
		}
	}()
	// Text goes into an SVG (XML) or a PNG as it is: no control characters.
	o.Title, o.XLabel, o.YLabel = textSafe(o.Title), textSafe(o.XLabel), textSafe(o.YLabel)
	named := make([]Series, len(series))
	for i, s := range series {
		s.Name = textSafe(s.Name)
		named[i] = s
	}
	return render(named, o)
}

// textSafe replaces what XML 1.0 does not allow in text (control
// characters but tab and newline, U+FFFE, U+FFFF, bytes that are not
// UTF-8) with U+FFFD: the SVG stays well-formed whatever a title or a
// name holds.
func textSafe(s string) string {
	ok := func(r rune) bool {
		return r == '\t' || r == '\n' || (r >= 0x20 && r < 0x7f) || (r >= 0xa0 && r <= 0xd7ff) || (r >= 0xe000 && r <= 0xfffd) || r >= 0x10000
	}
	clean := true
	for i, r := range s {
		if !ok(r) || (r == utf8.RuneError && badByte(s, i)) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if !ok(r) || (r == utf8.RuneError && badByte(s, i)) {
			r = '\ufffd'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func badByte(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 1
}

func render(series []Series, o Options) ([]byte, error) {
	if o.Format != "png" && o.Format != "svg" {
		return nil, fmt.Errorf("plot: format %q is neither png nor svg", o.Format)
	}
	if o.Smooth < 0 || o.Smooth >= 1 {
		return nil, fmt.Errorf("plot: smoothing %v is not in [0, 1)", o.Smooth)
	}
	if o.Width == 0 && o.Height == 0 {
		o.Width, o.Height = 960, 600
	}
	if math.IsNaN(o.XMin) || math.IsNaN(o.XMax) || math.IsInf(o.XMin, 0) || math.IsInf(o.XMax, 0) {
		return nil, fmt.Errorf("plot: the X range %v to %v is not finite", o.XMin, o.XMax)
	}
	if o.Width < 100 || o.Height < 100 {
		return nil, fmt.Errorf("plot: size %dx%d is too small (100x100 at least)", o.Width, o.Height)
	}
	w := vg.Length(o.Width) * vg.Inch / DPI
	h := vg.Length(o.Height) * vg.Inch / DPI
	p, err := build(series, o, vg.Point{X: w - 60, Y: h - 70})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	switch o.Format {
	case "png":
		c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
		p.Draw(margins(draw.New(c)))
		_, err = vgimg.PngCanvas{Canvas: c}.WriteTo(&buf)
	case "svg":
		c := vgsvg.NewWith(vgsvg.UseWH(w, h))
		p.Draw(margins(draw.New(c)))
		_, err = c.WriteTo(&buf)
	}
	return buf.Bytes(), err
}

// margins keep the axes' labels off the picture's edges (the last tick
// label on the right sticks out past the data area).
func margins(c draw.Canvas) draw.Canvas { return draw.Crop(c, 8, -24, 6, -8) }

// sans is the typeface of every text: gonum/plot ships Liberation, so no
// font has to be installed.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// build makes the plot; area is about the size of its data area.
func build(series []Series, o Options, area vg.Point) (*gplot.Plot, error) {
	p := gplot.New()
	p.BackgroundColor = color.White
	p.Title.Text = o.Title
	p.Title.TextStyle.Font = font.From(sans, 14)
	p.Title.Padding = 8
	p.X.Label.Text, p.Y.Label.Text = o.XLabel, o.YLabel
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 12)
		a.Tick.Label.Font = font.From(sans, 10)
		a.Tick.Marker = ticker{}
		a.Padding = 0
	}
	p.Legend.TextStyle.Font = font.From(sans, 10)
	grid := plotter.NewGrid()
	grid.Vertical = draw.LineStyle{Color: color.Gray{0xe4}, Width: vg.Points(0.6)}
	grid.Horizontal = grid.Vertical
	p.Add(grid)

	if o.LogY {
		p.Y.Scale = gplot.LogScale{}
		p.Y.Tick.Marker = logTicker{}
	}
	var all []plotter.XY // every drawn point, to place the legend
	var legend []legendEntry
	for i, s := range series {
		s = o.visible(s)
		if len(s.Y) != len(s.X) || (s.Lo != nil && len(s.Lo) != len(s.X)) || (s.Hi != nil && len(s.Hi) != len(s.X)) {
			return nil, fmt.Errorf("plot: series %q has columns of different lengths", s.Name)
		}
		col := Palette[i%len(Palette)]
		if s.Lo != nil && s.Hi != nil {
			if band := bandPolygon(s.X, s.Lo, s.Hi); band != nil {
				poly, err := plotter.NewPolygon(band)
				if err != nil {
					return nil, err
				}
				poly.Color = withAlpha(col, bandAlpha(len(series)))
				poly.LineStyle.Width = 0
				p.Add(poly)
				all = append(all, band...)
			}
		}
		raw := finite(s.X, s.Y)
		if len(raw) == 0 {
			continue
		}
		all = append(all, raw...)
		curve := raw
		if o.Smooth > 0 {
			faint, err := plotter.NewLine(raw)
			if err != nil {
				return nil, err
			}
			faint.Color, faint.Width = withAlpha(col, 0x50), vg.Points(1)
			p.Add(faint)
			sm := Smooth(s.Y, o.Smooth)
			if o.LogY { // averaging tiny values can underflow to 0, which a log axis cannot place
				for j, y := range sm {
					if !(y > 0) {
						sm[j] = math.NaN()
					}
				}
			}
			curve = finite(s.X, sm)
		}
		line, err := plotter.NewLine(curve)
		if err != nil {
			return nil, err
		}
		line.Color, line.Width = col, vg.Points(1.75)
		p.Add(line)
		legend = append(legend, legendEntry{s.Name, line})
	}
	if len(all) == 0 {
		if o.zoomed() || o.LogY {
			return nil, errors.New("plot: no finite points to draw in the chosen range (positive ones, on a log scale)")
		}
		return nil, errors.New("plot: no finite points to draw")
	}
	frame(p, all, o)
	placeLegend(p, legend, all, area)
	return p, nil
}

type legendEntry struct {
	name  string
	thumb gplot.Thumbnailer
}

// finite pairs xs and ys, leaving out points that are not finite.
func finite(xs, ys []float64) plotter.XYs {
	var out plotter.XYs
	for i := range xs {
		if ok(xs[i]) && ok(ys[i]) {
			out = append(out, plotter.XY{X: xs[i], Y: ys[i]})
		}
	}
	return out
}

func ok(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// bandPolygon is the outline of the band: along Hi forward, back along Lo.
func bandPolygon(xs, lo, hi []float64) plotter.XYs {
	var top, bottom plotter.XYs
	for i := range xs {
		if ok(xs[i]) && ok(lo[i]) && ok(hi[i]) {
			top = append(top, plotter.XY{X: xs[i], Y: hi[i]})
			bottom = append(bottom, plotter.XY{X: xs[i], Y: lo[i]})
		}
	}
	if len(top) < 2 {
		return nil
	}
	for i := len(bottom) - 1; i >= 0; i-- {
		top = append(top, bottom[i])
	}
	return top
}

// bandAlpha is the opacity of a band: lighter where several overlap.
func bandAlpha(series int) uint8 {
	if series > 1 {
		return 0x1c
	}
	return 0x30
}

func withAlpha(c color.NRGBA, a uint8) color.NRGBA { c.A = a; return c }

// visible is s without the points the options leave out: outside the
// X range, or not positive on a log scale (NaN stands in for them, so the
// columns stay aligned; the drawing leaves them out).
func (o Options) visible(s Series) Series {
	if !o.zoomed() && !o.LogY {
		return s
	}
	out := Series{Name: s.Name, X: s.X, Y: slices.Clone(s.Y)}
	if s.Lo != nil && s.Hi != nil {
		out.Lo, out.Hi = slices.Clone(s.Lo), slices.Clone(s.Hi)
	}
	nan := math.NaN()
	for i, x := range s.X {
		if o.zoomed() && (x < o.XMin || x > o.XMax) {
			out.Y[i] = nan
			if out.Lo != nil {
				out.Lo[i], out.Hi[i] = nan, nan
			}
			continue
		}
		if o.LogY {
			if !(out.Y[i] > 0) {
				out.Y[i] = nan
			}
			if out.Lo != nil && !(out.Lo[i] > 0 && out.Hi[i] > 0) {
				out.Lo[i], out.Hi[i] = nan, nan
			}
		}
	}
	return out
}

// frame sets the axis ranges: x from 0 when the data start near it (steps
// and seconds do), y with a little air above and below the curves.
func frame(p *gplot.Plot, pts []plotter.XY, o Options) {
	xmin, xmax, ymin, ymax := extent(pts)
	if xmin >= 0 && xmin <= 0.2*xmax {
		xmin = 0
	}
	if o.zoomed() {
		xmin, xmax = o.XMin, o.XMax
	}
	xmin, xmax = spread(xmin, xmax)
	if o.LogY { // a factor of air: an added pad could reach zero
		p.X.Min, p.X.Max = xmin, xmax
		lo, hi := ymin/1.25, ymax*1.25
		if !(lo > 0) { // a subnormal divided underflows to 0, which a log axis cannot show
			lo = ymin
		}
		if math.IsInf(hi, 1) {
			hi = ymax
		}
		if !(hi > lo*(1+1e-9)) { // one value, or values one ulp apart
			lo, hi = math.Max(ymin/10, math.SmallestNonzeroFloat64), math.Min(ymax*10, math.MaxFloat64)
		}
		p.Y.Min, p.Y.Max = lo, hi
		return
	}
	ymin, ymax = spread(ymin, ymax)
	pad := 0.04 * (ymax - ymin)
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min, p.Y.Max = math.Max(ymin-pad, -math.MaxFloat64), math.Min(ymax+pad, math.MaxFloat64)
}

// spread widens a range whose ends float64 can hardly tell apart (equal,
// or a few ulps apart) to one an axis can mark: ±10 % of the value, at
// least ±1.
func spread(lo, hi float64) (float64, float64) {
	scale := math.Max(math.Abs(lo), math.Abs(hi))
	if hi-lo > scale*1e-9 {
		return lo, hi
	}
	mid := lo/2 + hi/2
	d := math.Max(math.Abs(mid)*0.1, 1)
	return math.Max(mid-d, -math.MaxFloat64), math.Min(mid+d, math.MaxFloat64)
}

func extent(pts []plotter.XY) (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, q := range pts {
		xmin, xmax = math.Min(xmin, q.X), math.Max(xmax, q.X)
		ymin, ymax = math.Min(ymin, q.Y), math.Max(ymax, q.Y)
	}
	return
}
