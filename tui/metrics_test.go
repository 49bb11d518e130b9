package tui

import (
	"math"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// A metric declared in the registry, and one an environment reports
// without declaring it, reach the figures panel, the grid, the metric
// picker and the runs browser with no change to the app; a declared one a
// run does not carry stays out.
func TestRegistryMetricsReachViews(t *testing.T) {
	defer runstore.DeclareMetric(runstore.Metric{Name: "tuitest_score", Label: "test score", Grid: true, Figure: true})()
	defer runstore.DeclareMetric(runstore.Metric{Name: "tuitest_absent", Label: "absent figure", Grid: true, Figure: true})()
	withFigures := func(from, to int) []trainer.Event {
		es := metricsEvents(from, to)
		for i := range es {
			es[i].Metrics.Set("tuitest_score", 0.25+float64(i)/100)
			es[i].Metrics.Set("env/coins", 7)
		}
		return es
	}
	hs := newHarness(t, 120, 40)
	hs.press("enter", "enter", "s")
	hs.fake.publish(withFigures(1, 40)...)
	hs.pump()
	v := hs.view()
	for _, want := range []string{"test score", "env/coins"} {
		if !strings.Contains(v, want) {
			t.Errorf("the figures panel has no %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "absent figure") {
		t.Errorf("a declared metric the run does not carry is in the panel:\n%s", v)
	}
	hs.press("g")
	v = hs.view()
	for _, want := range []string{"─ tuitest_score", "─ env/coins 7"} {
		if !strings.Contains(v, want) {
			t.Errorf("the grid has no %q chart:\n%s", want, v)
		}
	}
	hs.press("g", "c", "type:tuitest")
	v = hs.view()
	if !strings.Contains(v, "▸ tuitest_score") || strings.Contains(v, "tuitest_absent") {
		t.Errorf("the metric picker does not offer the declared metric (alone):\n%s", v)
	}
	hs.press("enter")
	if v := hs.view(); !strings.Contains(v, "tuitest_score over env steps") {
		t.Errorf("picking the declared metric does not chart it:\n%s", v)
	}
}

// A run that reports its own figures and never a built-in one (a
// language model's has no value loss) is not shown empty charts of it.
func TestBuiltinMetricsARunLacksAreLeftOut(t *testing.T) {
	h := newHistory()
	for i := 1; i <= 5; i++ {
		var m trainer.Metrics
		m.Iter, m.Step = i, int64(i)*64
		m.EpReturnMean, m.EpReturnMin, m.EpReturnMax = 0.5, 0, 1
		m.ValueLoss, m.ExplainedVariance = trainer.Float(math.NaN()), trainer.Float(math.NaN())
		m.Set("env/success", 0.5)
		h.add(m)
	}
	grid := gridMetrics(h)
	if strings.Contains(strings.Join(grid, " "), "value_loss") {
		t.Errorf("grid %v offers value_loss, which the run never had", grid)
	}
	if grid[0] != headlineMetric() || !strings.Contains(strings.Join(grid, " "), "env/success") {
		t.Errorf("grid %v: want the headline first and env/success", grid)
	}
	// A numeric run keeps its built-in charts even while one has no value yet.
	p := newHistory()
	p.add(fakeMetrics(1))
	if g := gridMetrics(p); !strings.Contains(strings.Join(g, " "), "ep_return_mean") {
		t.Errorf("grid %v lost the return before the first episode ended", g)
	}
}
