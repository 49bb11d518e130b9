package tui

import (
	"math"
	"slices"

	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// This file is everything the app knows of the metrics a run reports, and
// it knows them only through the trainer's metric registry
// (runstore.MetricList, LookupMetric): which there are, what each is
// called, which the grid, the figures panel and the sparklines show. A
// metric declared in the registry, or reported by an environment, agent or
// workflow ("env/score"), reaches every view with no change here.

// metricInfo describes a metric by name: the registry's entry, or a bare
// one for a name the registry does not know.
func metricInfo(name string) runstore.Metric {
	if m, ok := runstore.LookupMetric(name); ok {
		return m
	}
	return runstore.Metric{Name: name, Label: name}
}

// headlineMetric is the metric a run is summed up by (its list line, the
// default chart): the first graphed one with a band around it, the mean
// return.
func headlineMetric() string {
	var first string
	for _, m := range runstore.MetricList() {
		if m.Band[0] != "" && m.Grid {
			return m.Name
		}
		if first == "" && m.Grid {
			first = m.Name
		}
	}
	return first
}

// builtinMetric reports whether every record carries the metric as a field
// (not a figure a run only sometimes has).
func builtinMetric(m runstore.Metric) bool {
	var zero runstore.Metrics
	v, _ := zero.Value(m.Name) // a built-in field reads 0 here, the others NaN
	return !m.Optional && !m.Reported() && !math.IsNaN(v)
}

// metricSource is what views ask of the runs they show: whether any holds
// a value of a metric, whether they all report figures of their own, and
// the names of every figure they hold.
type metricSource interface {
	has(name string) bool
	ownFigures() bool
	metricNames() []string
}

// shownMetric reports whether views of src offer m: never the axes;
// figures only some runs carry (optional, declared by an agent, reported
// by an env) when a run has one; and the built-in ones unless the runs
// report figures of their own and none carried this one (a language-model
// run has no value loss).
func shownMetric(m runstore.Metric, src metricSource) bool {
	switch {
	case m.Axis:
		return false
	case src.has(m.Name):
		return true
	case !builtinMetric(m):
		return false
	}
	return !src.ownFigures()
}

// runMetrics lists the metrics views of src offer that keep passes: the
// headline first, the other declared ones in the registry's order, then
// the ones the runs reported, by name.
func runMetrics(src metricSource, keep func(runstore.Metric) bool) []runstore.Metric {
	var out []runstore.Metric
	seen := map[string]bool{}
	list := runstore.MetricList()
	head := headlineMetric()
	slices.SortStableFunc(list, func(a, b runstore.Metric) int {
		return boolInt(b.Name == head) - boolInt(a.Name == head)
	})
	for _, m := range list {
		seen[m.Name] = true
		if shownMetric(m, src) && keep(m) {
			out = append(out, m)
		}
	}
	var reported []string
	for _, name := range src.metricNames() {
		if !seen[name] {
			reported = append(reported, name)
		}
	}
	slices.Sort(reported)
	for _, name := range reported {
		if m := metricInfo(name); shownMetric(m, src) && keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// anyMetric keeps every metric runMetrics offers.
func anyMetric(runstore.Metric) bool { return true }

// gridMetric keeps the grid's small charts.
func gridMetric(m runstore.Metric) bool { return m.Grid }

// sparkMetric keeps the figures drawn with a sparkline: not counts.
func sparkMetric(m runstore.Metric) bool { return m.Figure && !m.Integer }

// names lists the metrics' names.
func names(ms []runstore.Metric) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// histSet is the runs a view overlays, as one metricSource.
type histSet []*history

func (s histSet) has(name string) bool {
	return slices.ContainsFunc(s, func(h *history) bool { return h.has(name) })
}

func (s histSet) ownFigures() bool {
	return len(s) > 0 && !slices.ContainsFunc(s, func(h *history) bool { return !h.ownFigures() })
}

func (s histSet) metricNames() []string {
	var out []string
	for _, h := range s {
		for _, n := range h.names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
