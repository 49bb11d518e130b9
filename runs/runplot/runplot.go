// Package runplot draws a metric of runs read from their directories as a
// picture: what `agenttrainer plot` writes and what the app's runs browser
// exports. Reading is runstore's, drawing internal/plot's.
package runplot

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agenttrainer/agenttrainer/internal/plot"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Options say what to draw and how.
type Options struct {
	Runs          []string // run directories, one curve each
	Metric        string   // any scalar of metrics.jsonl
	X             string   // "step" or "time"
	Smooth        float64  // EMA weight in [0, 1)
	Title         string   // "": the runs' environments
	Width, Height int      // pixels; 0: 960×600
	Format        string   // "png" or "svg"
	XMin, XMax    float64  // the part of the X axis to draw when XMax > XMin
	Range         *Range   // else this part, of the axis from 0 to the runs' last x
	LogY          bool
}

// Draw reads the runs and draws the picture. Runs without a value of the
// metric are left out and named in skipped; it is an error when none has
// one, or a directory is not a run.
func Draw(o Options) (picture []byte, skipped []string, err error) {
	xName, ok := map[string]string{"step": "step", "time": "time_s"}[o.X]
	if !ok {
		return nil, nil, fmt.Errorf("x axis %q: want step or time", o.X)
	}
	lo, hi := bandOf(o.Metric)
	var series []plot.Series
	var envs []string
	names := LegendNames(o.Runs)
	for i, dir := range o.Runs {
		if !runstore.IsRunDir(dir) {
			return nil, nil, termtext.Error(fmt.Errorf("%s is not a run directory (it has neither %s nor %s)", dir, runstore.ConfigFile, runstore.MetricsFile))
		}
		info := runstore.ReadRunInfo(dir)
		ms, err := runstore.ReadMetrics(dir)
		if runstore.IsPartial(err) {
			skipped = append(skipped, err.Error()) // the other records draw
		} else if err != nil {
			return nil, nil, termtext.Error(fmt.Errorf("%s: %v", dir, err))
		}
		s := plot.Series{Name: names[i]}
		if lo != "" {
			s.Lo, s.Hi = make([]float64, 0, len(ms)), make([]float64, 0, len(ms))
		}
		n := 0
		for j := range ms {
			m := &ms[j]
			x, _ := m.Value(xName)
			y, _ := m.Value(o.Metric)
			s.X, s.Y = append(s.X, x), append(s.Y, y)
			if lo != "" {
				l, _ := m.Value(lo)
				h, _ := m.Value(hi)
				s.Lo, s.Hi = append(s.Lo, l), append(s.Hi, h)
			}
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				n++
			}
		}
		if n == 0 {
			skipped = append(skipped, termtext.Clean(fmt.Sprintf("%s has no values of %s", dir, o.Metric)))
			continue
		}
		if info.EnvID != "" && !slices.Contains(envs, info.EnvID) {
			envs = append(envs, info.EnvID)
		}
		series = append(series, s)
	}
	if len(series) == 0 {
		return nil, skipped, fmt.Errorf("no run has values of %s", o.Metric)
	}
	if o.Range != nil && o.XMax <= o.XMin {
		last := 0.0
		for _, s := range series {
			for _, x := range s.X {
				last = math.Max(last, x)
			}
		}
		o.XMin, o.XMax = o.Range.Resolve(0, last)
	}
	title := termtext.Clean(o.Title) // a picture's text is shown in terminals and must be valid XML in an SVG
	if title == "" {
		title = strings.Join(envs, ", ")
	}
	ylabel := o.Metric
	if o.Smooth > 0 {
		ylabel += fmt.Sprintf(" (smoothed %g)", o.Smooth)
	}
	xlabel := map[string]string{"step": "environment steps", "time": "wall-clock time (s)"}[o.X]
	picture, err = plot.Render(series, plot.Options{Title: title, XLabel: xlabel, YLabel: ylabel,
		Width: o.Width, Height: o.Height, Smooth: o.Smooth, Format: o.Format,
		XMin: o.XMin, XMax: o.XMax, LogY: o.LogY})
	return picture, skipped, err
}

// bandOf names the metrics that bound metric's band, as the registry
// declares them (ep_return_min and ep_return_max for ep_return_mean); ""
// otherwise.
func bandOf(metric string) (lo, hi string) {
	m, _ := runstore.LookupMetric(metric)
	return m.Band[0], m.Band[1]
}

// LegendNames are the runs' directory names, or the paths as given where
// two runs share a name, cleaned of control characters (termtext.Clean).
func LegendNames(dirs []string) []string {
	names := make([]string, len(dirs))
	seen := map[string]int{}
	for i, d := range dirs {
		names[i] = filepath.Base(filepath.Clean(d))
		seen[names[i]]++
	}
	for i, d := range dirs {
		if seen[names[i]] > 1 {
			names[i] = filepath.Clean(d)
		}
		names[i] = termtext.Clean(names[i])
	}
	return names
}
