package runplot

import (
	"strings"
	"testing"
)

func TestLegendNames(t *testing.T) {
	got := LegendNames([]string{"runs/a/", "x/b", "y/b"})
	if strings.Join(got, ",") != "a,x/b,y/b" {
		t.Errorf("LegendNames = %q", got)
	}
}

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in      string
		lo, hi  float64 // resolved on an axis from 0 to 1e6
		percent bool
		err     string
	}{
		{in: "100k-300k", lo: 1e5, hi: 3e5},
		{in: "100000:300000", lo: 1e5, hi: 3e5},
		{in: "0.5M..1M", lo: 5e5, hi: 1e6},
		{in: "250k-", lo: 2.5e5, hi: 1e6},
		{in: "-50k", lo: 0, hi: 5e4},
		{in: "20%-60%", lo: 2e5, hi: 6e5, percent: true},
		{in: "90%-", lo: 9e5, hi: 1e6, percent: true},
		{in: "1m-2m", lo: 60, hi: 120},
		{in: "30s-1h", lo: 30, hi: 3600},
		{in: "300k", err: "two bounds"},
		{in: "-", err: "at least one bound"},
		{in: "300k-100k", err: "larger than the first"},
		{in: "20%-300k", err: "percentages, or neither"},
		{in: "abc-def", err: "not a number"},
		{in: "100%-", err: "from 0 to 100"},
		{in: "NaN-1", err: "not a number"},
	} {
		r, err := ParseRange(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "try 100k-300k") {
				t.Errorf("%q: got %v, want an error with %q and the forms that work", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		lo, hi := r.Resolve(0, 1e6)
		if lo != tc.lo || hi != tc.hi || r.Percent != tc.percent {
			t.Errorf("%q resolves to %g..%g (percent %v), want %g..%g (%v)", tc.in, lo, hi, r.Percent, tc.lo, tc.hi, tc.percent)
		}
	}
}
