package runstore

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The registry writes a record exactly as the standard encoder wrote the
// struct before it (the golden metrics and every reader depend on it).
func TestMetricsEncodeAsTheStructDid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func() Float {
		switch r.IntN(4) {
		case 0:
			return Float(math.NaN())
		case 1:
			return Float(r.IntN(500))
		}
		return Float(r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-6)))
	}
	for i := 0; i < 200; i++ {
		m := Metrics{Iter: r.IntN(1000), Step: r.Int64N(1 << 40), TimeS: pick(), SPS: pick(), Episodes: r.Int64N(1e6),
			EpReturnMean: pick(), EpReturnMin: pick(), EpReturnMax: pick(), EpLengthMean: pick(), PolicyLoss: pick(),
			ValueLoss: pick(), Entropy: pick(), ApproxKL: pick(), ClipFrac: pick(), ExplainedVariance: pick(), LR: pick(),
			GradNorm: pick(), RolloutS: pick(), UpdateS: pick()}
		if r.IntN(2) == 0 {
			v, s := pick(), pick()
			m.ValReturnMean, m.ValSuccessRate = &v, &s
		}
		got, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal((*plainMetrics)(&m))
		if string(got) != string(want) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// Reported and declared figures travel beside the fields, in and out.
func TestMetricsCarryReportedFigures(t *testing.T) {
	remove := DeclareMetric(Metric{Name: "test_declared", Label: "declared", Tag: "charts/test_declared", Grid: true})
	defer remove()
	m := Metrics{Iter: 2, Step: 64, EpReturnMean: 1.5}
	m.Set("env/score", 3.25)
	m.Set("test_declared", math.NaN())
	b, err := json.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), `,"env/score":3.25,"test_declared":null}`) {
		t.Errorf("encoded %s", b)
	}
	var back Metrics
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if v, ok := back.Value("env/score"); !ok || v != 3.25 {
		t.Errorf("env/score read back as %v, %v", v, ok)
	}
	if v, ok := back.Value("test_declared"); !ok || !math.IsNaN(v) {
		t.Errorf("test_declared read back as %v, %v", v, ok)
	}
	if v, ok := back.Value("env/other"); !ok || !math.IsNaN(v) {
		t.Errorf("a reported name the record lacks: %v, %v; want NaN, known", v, ok)
	}
	if _, ok := back.Value("nonsense"); ok {
		t.Error("an unknown name without a namespace was accepted")
	}
	d, ok := LookupMetric("env/score")
	if !ok || !d.Reported() || d.Tag != "env/score" || !d.Grid {
		t.Errorf("LookupMetric(env/score) = %+v, %v", d, ok)
	}
	if d, _ := LookupMetric("test_declared"); d.Reported() || d.Label != "declared" {
		t.Errorf("a declared metric looks reported: %+v", d)
	}
	remove()
	if _, ok := LookupMetric("test_declared"); ok {
		t.Error("the removed metric is still declared")
	}
}

func TestMetricNamesAreChecked(t *testing.T) {
	for _, bad := range []string{"", "env/", "/x", "env/a b", "env/é", strings.Repeat("x", 65), `env/"q"`} {
		if CheckMetricName(bad) == nil {
			t.Errorf("%q was accepted", bad)
		}
		if _, ok := LookupMetric(bad); ok {
			t.Errorf("LookupMetric accepted %q", bad)
		}
	}
	for _, good := range []string{"env/score", "agent/completions/mean_length", "workflow/judge.win-rate"} {
		if err := CheckMetricName(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

func TestMetricFormat(t *testing.T) {
	count, _ := LookupMetric("episodes")
	loss, _ := LookupMetric("policy_loss")
	for _, tc := range []struct {
		m    Metric
		v    float64
		want string
	}{{count, 1234567, "1,234,567"}, {loss, math.NaN(), "-"}, {loss, 0.00123, "1.23e-03"}, {loss, 12.3456, "12.35"}, {loss, 0, "0"}} {
		if got := tc.m.Format(tc.v); got != tc.want {
			t.Errorf("%s.Format(%v) = %q, want %q", tc.m.Name, tc.v, got, tc.want)
		}
	}
}

func TestMetricValueByName(t *testing.T) {
	var m Metrics
	line := `{"iter":3,"step":1536,"time_s":0.5,"ep_return_mean":null,"ep_return_max":42.5,"val_return_mean":7}`
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want float64 // NaN: undefined
	}{{"iter", 3}, {"step", 1536}, {"time_s", 0.5}, {"ep_return_mean", math.NaN()}, {"ep_return_max", 42.5},
		{"val_return_mean", 7}, {"val_success_rate", math.NaN()}} {
		v, ok := m.Value(tc.name)
		if !ok || !(v == tc.want || math.IsNaN(v) && math.IsNaN(tc.want)) {
			t.Errorf("Value(%q) = %v, %v; want %v, true", tc.name, v, ok, tc.want)
		}
	}
	if _, ok := m.Value("ep_return"); ok {
		t.Error("an unknown name was accepted")
	}
	names := MetricNames()
	if names[0] != "iter" || !slices.Contains(names, "val_success_rate") || !slices.Contains(names, "grad_norm") {
		t.Errorf("MetricNames() = %v", names)
	}
}
