package sweep

import (
	"fmt"
	"math"
	"slices"

	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// This file is early stopping: at each milestone a trial reports its
// metric, and the rule says whether it goes on.

// Stopper decides at milestones. Values are kept per milestone, in the
// order trials reached it (asynchronous: no trial waits for another).
type Stopper struct {
	es       EarlyStop
	maximize bool
	seen     []map[string]float64 // per milestone: trial ID → value
}

// NewStopper starts an empty record of milestone values.
func NewStopper(es EarlyStop, maximize bool) *Stopper {
	s := &Stopper{es: es, maximize: maximize, seen: make([]map[string]float64, len(es.Milestones))}
	for i := range s.seen {
		s.seen[i] = map[string]float64{}
	}
	return s
}

// Record notes a trial's value at milestone i without deciding (resume
// rebuilds what earlier trials reported).
func (s *Stopper) Record(i int, id string, v float64) { s.seen[i][id] = v }

// Decide records the trial's value at milestone i and says whether it
// should stop, with the reason in words.
func (s *Stopper) Decide(i int, id string, v float64) (stop bool, reason string) {
	others := make([]float64, 0, len(s.seen[i]))
	for k, x := range s.seen[i] {
		if k != id {
			others = append(others, x)
		}
	}
	s.seen[i][id] = v
	step := s.es.Milestones[i]
	switch s.es.Method {
	case "median":
		if len(others) < s.es.MinTrials {
			return false, ""
		}
		med := quantile(others, 0.5)
		if s.worse(v, med) {
			return true, fmt.Sprintf("median stopping at %d steps: %.4g is worse than the median %.4g of %d trials", step, v, med, len(others))
		}
	case "asha":
		all := append(others, v)
		// Keep the best 1/reduction of the values seen at this milestone
		// (a trial alone at its milestone goes on).
		q := 1 - 1/s.es.Reduction
		if !s.maximize {
			q = 1 / s.es.Reduction
		}
		cut := quantile(all, q)
		if s.worse(v, cut) {
			return true, fmt.Sprintf("asha at %d steps: %.4g is outside the best 1/%g (cutoff %.4g over %d trials)", step, v, s.es.Reduction, cut, len(all))
		}
	}
	return false, ""
}

func (s *Stopper) worse(v, than float64) bool {
	if s.maximize {
		return v < than
	}
	return v > than
}

// quantile interpolates linearly between order statistics (NumPy's
// default percentile).
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 1 {
		return s[0]
	}
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
}

// AtMilestone is the metric at a milestone: the last value up to the first
// record at or past it; ok is false before the trial gets there or when it
// has no value yet.
func AtMilestone(ms []runstore.Metrics, metric string, milestone int64) (v float64, ok bool) {
	have := false
	for _, m := range ms {
		if x, ok := metricValue(m, metric); ok {
			v, have = x, true
		}
		if m.Step >= milestone {
			return v, have
		}
	}
	return 0, false
}

// Summary is the metric over a trial's records: the last and the best.
func Summary(ms []runstore.Metrics, metric string, maximize bool) (last, best float64, ok bool) {
	for _, m := range ms {
		x, has := metricValue(m, metric)
		if !has {
			continue
		}
		if !ok || (maximize && x > best) || (!maximize && x < best) {
			best = x
		}
		last, ok = x, true
	}
	return last, best, ok
}

// note records the milestone values of a trial that ended before they
// were looked at (a fast trial), so that later trials compare with them.
func (sw *Sweep) note(r *Record, ms []runstore.Metrics) {
	es := sw.Spec.EarlyStop
	for sw.st != nil && r.Milestones < len(es.Milestones) && r.Steps >= es.Milestones[r.Milestones] {
		if v, ok := AtMilestone(ms, sw.Spec.Metric, es.Milestones[r.Milestones]); ok {
			sw.st.Record(r.Milestones, r.Trial, v)
		}
		r.Milestones++
	}
}
