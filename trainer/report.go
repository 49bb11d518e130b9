package trainer

import (
	"slices"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Reporter is implemented by agents and workflows that report figures of
// their own once an iteration (an LM agent's mean completion length, a
// judge's verdicts): each is recorded as agent/<name> or workflow/<name> in
// every sink of the metric registry (metrics.jsonl, TensorBoard, the CSV
// export, the progress line, sweeps, plot and the app). Environments report
// per episode instead (envs.StatsReporter). A name is letters, digits, '_',
// '.', '-' and '/'.
type Reporter interface {
	Report(add func(name string, value float64))
}

// reports gathers an iteration's reported figures: the environments'
// per-episode ones summed for their means, the agent's and workflow's as
// given.
type reports struct {
	names  []string // in the order first reported
	sums   map[string]float64
	counts map[string]int
	warned map[string]bool // bad names said once
	logf   func(format string, args ...any)
}

func newReports(logf func(string, ...any)) *reports {
	return &reports{sums: map[string]float64{}, counts: map[string]int{}, warned: map[string]bool{}, logf: logf}
}

// add books one value of a figure of source ("env", "agent", "workflow").
func (r *reports) add(source, name string, v float64) {
	key := source + "/" + name
	if _, seen := r.sums[key]; !seen {
		if err := runstore.CheckMetricName(key); err != nil {
			if !r.warned[key] {
				r.warned[key] = true
				r.logf("warning: the %s reported a figure that cannot be recorded: %v", source, err)
			}
			return
		}
		r.names = append(r.names, key)
	}
	r.sums[key] += v
	r.counts[key]++
}

// episode books what sub-environment i of v reported for the episode it
// finished on the last step.
func (r *reports) episode(v *envs.Vector, i int) {
	if i >= len(v.EpisodeStats) {
		return // a batch backend's: reports nothing
	}
	for _, s := range v.EpisodeStats[i] {
		r.add("env", s.Name, s.Value)
	}
}

// ask books what the agent and the workflow report, when they do.
func (r *reports) ask(source string, x any) {
	if rep, ok := x.(Reporter); ok {
		rep.Report(func(name string, v float64) { r.add(source, name, v) })
	}
}

// record sets the iteration's means on m and starts the next iteration.
func (r *reports) record(m *Metrics) {
	for _, k := range r.names {
		m.Set(k, r.sums[k]/float64(r.counts[k]))
	}
	r.names = slices.Delete(r.names, 0, len(r.names))
	clear(r.sums)
	clear(r.counts)
}
