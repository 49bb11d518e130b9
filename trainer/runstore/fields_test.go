package runstore

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

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
