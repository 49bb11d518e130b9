package tui

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/runs/runplot"
)

// The runs browser's charts: one run's curves or marked runs overlaid,
// driven by the same keys and options as the dashboard's (any metric, grid,
// steps or time, log Y, zoom and range), and saved as a picture with the
// plot command's drawing.

// exportedMsg reports pictures written from the runs browser's chart.
type exportedMsg struct {
	paths   []string
	skipped []string
	err     error
}

// has reports whether any run on screen has values of a channel.
func (r *runsBrowser) has(c channel) bool {
	for _, run := range r.loaded {
		if run.hist.has(c) {
			return true
		}
	}
	return false
}

// last is the first run's latest value of a channel (the picker shows it).
func (r *runsBrowser) last(c channel) float64 {
	if len(r.loaded) == 0 {
		return math.NaN()
	}
	return r.loaded[0].hist.last(c)
}

// xRange is the charts' X axis over the runs on screen: their extent, the
// last share of it, or the typed range.
func (r *runsBrowser) xRange() (float64, float64) {
	o := r.sh.chart
	var last, full float64
	for _, run := range r.loaded {
		if o.wall {
			last = math.Max(last, run.hist.lastTime())
		} else {
			last = math.Max(last, float64(run.hist.lastStep()))
			full = math.Max(full, xExtent(run.info.Steps, run.info.TotalSteps))
		}
	}
	if o.wall {
		full = timeExtent(last)
	}
	if len(r.loaded) > 1 && !o.wall { // overlaid runs end where the longest does
		full = math.Max(last, 1)
	}
	return o.xRange(last, full)
}

// spec is the chart of metric over the runs on screen in w×h cells; main
// is the big chart (a small one of a grid says its latest value). Hidden
// runs are left out; a highlighted one is drawn over the others, which
// fade.
func (r *runsBrowser) spec(metric string, w, h int, main bool) (chartSpec, string) {
	th, o := r.th, r.sh.chart
	def, _ := metricByName(metric)
	weight := o.weight()
	var curves, front []curve
	one := len(r.loaded) == 1
	for i, run := range r.loaded {
		if run.hidden {
			continue
		}
		style := th.Palette[i%len(th.Palette)]
		if one {
			style = th.Curve
		}
		faded := r.hilite && i != r.sel && !one
		if faded {
			style = th.Faint
		}
		label := ""
		if !one {
			label = fmt.Sprint(i + 1)
		}
		if def.ch == chReturn && o.band && one {
			curves = append(curves,
				curve{pts: run.hist.seriesOn(chReturnMin, statMin, o.wall), style: th.Band},
				curve{pts: run.hist.seriesOn(chReturnMax, statMax, o.wall), style: th.Band})
		}
		pts := run.hist.seriesOn(def.ch, statMean, o.wall)
		if weight > 0 {
			if one {
				if main { // a grid's cell shows the smoothed curve alone
					curves = append(curves, curve{pts: pts, style: th.Dim})
				}
				style = th.Smooth
			}
			pts = smooth(pts, weight)
		}
		c := curve{pts: pts, style: style, label: label}
		if r.hilite && i == r.sel {
			front = append(front, c) // drawn last: it wins shared cells
			continue
		}
		curves = append(curves, c)
	}
	curves = append(curves, front...)
	var marks []float64
	if one {
		for _, e := range r.loaded[0].edits {
			if o.wall {
				marks = append(marks, e.TimeS)
			} else {
				marks = append(marks, float64(e.Step))
			}
		}
	}
	title := metric
	switch {
	case main && o.wall:
		title += " over wall-clock time"
	case main:
		title += " over env steps"
	case one:
		title = cellTitle(metric, r.loaded[0].hist.last(def.ch), w+2)
	}
	if main {
		title += o.smoothTitle()
		if def.ch == chReturn && o.band && one {
			title += " · min/max"
		}
		if o.logY {
			title += " · log"
		}
		title += o.zoomTitle()
	}
	lo, hi := r.xRange()
	cursor := -1
	if main {
		cursor = r.ctl.col
	}
	return chartSpec{w: w, h: h, xmin: lo, xmax: hi, xclip: o.xr != nil, xTime: o.wall, logY: o.logY, curves: curves,
		markers: marks, empty: "no values of " + metric + " in these runs", cursor: cursor}, title
}

// charts draws the big chart (with the cursor's readings under it), or the
// grid, in w×h.
func (r *runsBrowser) charts(w, h int) string {
	th := r.th
	if !r.sh.chart.grid {
		ch := h
		if r.ctl.col >= 0 {
			ch--
		}
		spec, title := r.spec(r.sh.chart.metric, w-2, ch-2, true)
		out := box(th, title, r.canvas.render(th, spec), w, ch)
		if r.ctl.col >= 0 {
			r.ctl.col = r.canvas.cursorCol
			out += "\n" + r.cursorLine(w)
		}
		return out
	}
	return gridOf(gridMetrics(r.has), w, h, func(_ int, name string, cw, ch int) string {
		spec, title := r.spec(name, cw-2, ch-2, false)
		return box(th, title, renderChart(th, spec), cw, ch)
	})
}

// cursorLine reads each shown run's value nearest to the cursor.
func (r *runsBrowser) cursorLine(w int) string {
	th, o := r.th, r.sh.chart
	def, _ := metricByName(o.metric)
	x := r.canvas.cursorX
	where := "step " + thousands(int64(math.Round(x)))
	if o.wall {
		where = "at " + timeLabel(x, 0.1)
	}
	parts := []string{th.Heading.Render("│ " + where)}
	for i, run := range r.loaded {
		if run.hidden {
			continue
		}
		at, v, ok := run.hist.at(def.ch, x, o.wall)
		if !ok {
			continue
		}
		s := num(v)
		if len(r.loaded) > 1 {
			s = th.Palette[i%len(th.Palette)].Render(fmt.Sprint(i+1)) + " " + s
		} else {
			s = def.name + " " + s + th.Dim.Render(" at step "+thousands(int64(at)))
			if o.wall {
				s = def.name + " " + num(v) + th.Dim.Render(" at "+timeLabel(at, 0.1))
			}
		}
		parts = append(parts, s)
	}
	return cut(strings.Join(parts, "  "), w)
}

// export saves the chart on screen (every small chart of a grid) as PNG
// pictures drawn like `agenttrainer plot`'s: one run's into its directory,
// overlaid runs' into the runs directory as compare-<metric>.png.
func (r *runsBrowser) export() tea.Cmd {
	o := *r.sh.chart
	metrics := []string{o.metric}
	if o.grid {
		metrics = gridMetrics(r.has)
	}
	var dirs []string
	for _, run := range r.loaded {
		dirs = append(dirs, run.info.Dir)
	}
	lo, hi := r.xRange()
	zoomed := o.xr != nil || zooms[o.zoom] < 100
	into, prefix := r.dir, "compare-"
	if len(dirs) == 1 {
		into, prefix = dirs[0], ""
	}
	return func() tea.Msg {
		var msg exportedMsg
		for _, m := range metrics {
			p := runplot.Options{Runs: dirs, Metric: m, X: "step", Format: "png", LogY: o.logY}
			if o.wall {
				p.X = "time"
			}
			p.Smooth = o.weight()
			if zoomed {
				p.XMin, p.XMax = lo, hi
			}
			data, skipped, err := runplot.Draw(p)
			msg.skipped = append(msg.skipped, skipped...)
			if err == nil {
				path := filepath.Join(into, prefix+m+".png")
				if err = atomicfile.Write(path, data, 0o644); err == nil {
					msg.paths = append(msg.paths, path)
				}
			}
			if err != nil && !o.grid { // a grid skips the metrics the runs lack
				msg.err = err
			}
		}
		return msg
	}
}

// exportNote is what the status line says of an export.
func exportNote(msg exportedMsg) string {
	switch {
	case msg.err != nil:
		return "not saved: " + msg.err.Error()
	case len(msg.paths) == 0:
		return "not saved: nothing to draw"
	case len(msg.paths) == 1:
		return "saved " + msg.paths[0]
	}
	return fmt.Sprintf("saved %d pictures in %s (%s, …)", len(msg.paths), filepath.Dir(msg.paths[0]),
		strings.Join([]string{filepath.Base(msg.paths[0]), filepath.Base(msg.paths[1])}, ", "))
}
