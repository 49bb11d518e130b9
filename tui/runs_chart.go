package tui

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/internal/runplot"
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
// is the big chart (a small one of a grid says its latest value).
func (r *runsBrowser) spec(metric string, w, h int, main bool) (chartSpec, string) {
	th, o := r.th, r.sh.chart
	def, _ := metricByName(metric)
	var curves []curve
	one := len(r.loaded) == 1
	for i, run := range r.loaded {
		style := th.Palette[i%len(th.Palette)]
		if one {
			style = th.Curve
		}
		label := ""
		if !one {
			label = fmt.Sprint(i + 1)
		}
		ch := def.ch
		if ch == chReturn && o.smooth {
			if one {
				curves = append(curves, curve{pts: run.hist.seriesOn(chReturn, statMean, o.wall), style: th.Dim})
				style = th.Smooth
			}
			ch = chReturnEMA
		}
		if def.ch == chReturn && o.band && one {
			curves = append(curves,
				curve{pts: run.hist.seriesOn(chReturnMin, statMin, o.wall), style: th.Band},
				curve{pts: run.hist.seriesOn(chReturnMax, statMax, o.wall), style: th.Band})
		}
		curves = append(curves, curve{pts: run.hist.seriesOn(ch, statMean, o.wall), style: style, label: label})
	}
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
		if v := r.loaded[0].hist.last(def.ch); !math.IsNaN(v) {
			title += " " + num(v)
		}
	}
	if main && def.ch == chReturn && o.smooth {
		title += " · smoothed"
	}
	if main && def.ch == chReturn && o.band && one {
		title += " · min/max"
	}
	if o.logY {
		title += " · log"
	}
	title += o.zoomTitle()
	lo, hi := r.xRange()
	return chartSpec{w: w, h: h, xmin: lo, xmax: hi, xclip: o.xr != nil, xTime: o.wall, logY: o.logY, curves: curves,
		markers: marks, empty: "no values of " + metric + " in these runs"}, title
}

// charts draws the big chart, or the grid, in w×h.
func (r *runsBrowser) charts(w, h int) string {
	th := r.th
	if !r.sh.chart.grid {
		spec, title := r.spec(r.sh.chart.metric, w-2, h-2, true)
		return box(th, title, renderChart(th, spec), w, h)
	}
	return gridOf(gridMetrics(r.has), w, h, func(_ int, name string, cw, ch int) string {
		spec, title := r.spec(name, cw-2, ch-2, false)
		return box(th, title, renderChart(th, spec), cw, ch)
	})
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
			if m == "ep_return_mean" && o.smooth {
				p.Smooth = 0.6 // TensorBoard's default weight
			}
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
