package tui

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

func TestHistoryDownsamples(t *testing.T) {
	tests := []struct {
		name    string
		records int
		stride  int64
	}{
		{"fewer records than buckets", 100, 512},
		{"exactly full", historyBuckets, 512},
		{"long run", 100000, 512},
		{"uneven stride", 12345, 2048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory()
			var sum float64
			for i := 1; i <= tt.records; i++ {
				v := float64(i % 97)
				sum += v
				h.add(trainer.Metrics{Iter: i, Step: int64(i) * tt.stride, EpReturnMean: trainer.Float(v),
					EpReturnMin: trainer.Float(v - 1), EpReturnMax: trainer.Float(v + 1)})
			}
			if len(h.buckets) > historyBuckets {
				t.Fatalf("%d buckets, more than %d", len(h.buckets), historyBuckets)
			}
			// Buckets partition the records: counts and sums add up exactly.
			var n int
			var got float64
			lo, hi := math.Inf(1), math.Inf(-1)
			for i := range h.buckets {
				b := &h.buckets[i]
				ret := h.aggOf(b, "ep_return_mean")
				n += ret.n
				got += ret.sum
				lo, hi = math.Min(lo, h.aggOf(b, "ep_return_min").lo), math.Max(hi, h.aggOf(b, "ep_return_max").hi)
				if i > 0 && b.start <= h.buckets[i-1].start {
					t.Fatalf("bucket %d starts at %d, not after %d", i, b.start, h.buckets[i-1].start)
				}
			}
			if n != tt.records || math.Abs(got-sum) > 1e-6*sum {
				t.Errorf("buckets hold %d records summing to %g, want %d and %g", n, got, tt.records, sum)
			}
			if lo != -1 || hi != 97 {
				t.Errorf("band spans [%g, %g], want [-1, 97]", lo, hi)
			}
			if h.lastStep() != int64(tt.records)*tt.stride {
				t.Errorf("last step %d", h.lastStep())
			}
		})
	}
}

func TestHistorySkipsUndefined(t *testing.T) {
	h := newHistory()
	nan := trainer.Float(math.NaN())
	h.add(trainer.Metrics{Step: 512, EpReturnMean: nan, EpReturnMin: nan, EpReturnMax: nan, PolicyLoss: 0.5})
	h.add(trainer.Metrics{Step: 1024, EpReturnMean: 10, EpReturnMin: 5, EpReturnMax: 20, PolicyLoss: 0.25})
	if pts := h.series("ep_return_mean", statMean); len(pts) != 1 || pts[0] != (point{1024, 10, 1}) {
		t.Errorf("return series = %v, want one point at 1024", pts)
	}
	if pts := h.series("policy_loss", statMean); len(pts) != 2 {
		t.Errorf("loss series has %d points, want 2", len(pts))
	}
	if ema := smooth(h.series("ep_return_mean", statMean), 0.9); len(ema) != 1 || math.Abs(ema[0].y-10) > 1e-9 {
		t.Errorf("the debiased EMA of one value is %v, want 10", ema)
	}
}

func TestSparkline(t *testing.T) {
	tests := []struct {
		vals []float64
		w    int
		want string
	}{
		{[]float64{0, 1, 2, 3, 4, 5, 6, 7}, 8, "▁▂▃▄▅▆▇█"},
		{[]float64{1, 1, 1}, 3, "▅▅▅"},
		{[]float64{math.NaN(), 0, 1}, 3, " ▁█"},
		{[]float64{0, 0, 1, 1}, 2, "▁█"},
		{nil, 4, ""},
		{[]float64{1, 2}, 0, ""},
	}
	for _, tt := range tests {
		if got := sparkline(tt.vals, tt.w); got != tt.want {
			t.Errorf("sparkline(%v, %d) = %q, want %q", tt.vals, tt.w, got, tt.want)
		}
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct{ got, want string }{
		{steps(0), "0"}, {steps(512), "512"}, {steps(12500), "12.5k"}, {steps(100000), "100k"},
		{steps(1_250_000), "1.25M"}, {thousands(1234567), "1,234,567"}, {thousands(-1000), "-1,000"},
		{num(math.NaN()), "-"}, {num(0), "0"}, {num(487.234), "487.2"}, {num(0.00123), "1.23e-3"}, {num(-3.28e-5), "-3.28e-5"}, {noNegZero("-0.00"), "0.00"}, {noNegZero("-0.5"), "-0.5"}, {num(0.5), "0.5"},
		{duration(0), "0:00"}, {duration(61e9), "1:01"}, {duration(3723e9), "1:02:03"},
		{cut("abcdef", 4), "abc…"}, {cutLeft("/a/b/c/run", 6), "…c/run"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestRenderChart(t *testing.T) {
	th := defaultTheme(nil)
	pts := []point{{512, 10, 1}, {1024, 20, 1}, {2048, 40, 1}, {4096, 35, 1}}
	tests := []struct {
		name string
		spec chartSpec
		has  []string
	}{
		{"empty", chartSpec{w: 40, h: 10, empty: "nothing yet"}, []string{"nothing yet"}},
		{"curve", chartSpec{w: 40, h: 10, xmax: 8192, curves: []curve{{pts: pts, style: th.Curve}}}, []string{"└", "5k", "40"}},
		{"marker", chartSpec{w: 40, h: 10, xmax: 8192, curves: []curve{{pts: pts}}, markers: []float64{4096}}, []string{"▾", "┊"}},
		{"label", chartSpec{w: 40, h: 10, xmax: 8192, curves: []curve{{pts: pts, label: "1"}}}, []string{"1"}},
		{"flat", chartSpec{w: 40, h: 10, curves: []curve{{pts: []point{{1, 5, 1}, {2, 5, 1}}}}}, []string{"└"}},
		{"too small", chartSpec{w: 5, h: 2, curves: []curve{{pts: pts}}}, nil},
		{"one empty curve among others", chartSpec{w: 40, h: 10, curves: []curve{{}, {pts: pts}}}, []string{"└"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := renderChart(&th, tt.spec)
			checkFits(t, got, tt.spec.w, tt.spec.h)
			for _, s := range tt.has {
				if !strings.Contains(got, s) {
					t.Errorf("%q missing from\n%s", s, got)
				}
			}
		})
	}
}

func TestXExtent(t *testing.T) {
	tests := []struct {
		last, total int64
		want        float64
	}{
		{0, 500000, 1}, {10000, 500000, 20000}, {150000, 500000, 200000}, {240000, 500000, 500000},
		{300000, 500000, 500000}, {600000, 500000, 600000}, {30000, 0, 50000},
	}
	for _, tt := range tests {
		if got := xExtent(tt.last, tt.total); got != tt.want {
			t.Errorf("xExtent(%d, %d) = %g, want %g", tt.last, tt.total, got, tt.want)
		}
	}
}

// BenchmarkDashboardFrame is one redraw of a busy dashboard: a tick's worth
// of events taken in, the chart redrawn, the screen composed.
func BenchmarkDashboardFrame(b *testing.B) {
	for _, tc := range []struct {
		w, h int
		grid bool
	}{{120, 40, false}, {200, 60, false}, {120, 40, true}} {
		name := fmt.Sprintf("%dx%d", tc.w, tc.h)
		if tc.grid {
			name += "-grid"
		}
		size := [2]int{tc.w, tc.h}
		b.Run(name, func(b *testing.B) {
			th, opts := defaultTheme(nil), defaultChartOpts()
			opts.grid = tc.grid
			ft := newFakeTrainer(config.Default())
			var runs runSet
			sh := &shared{th: &th, runs: &runs, chart: &opts, now: func() time.Time { return epoch }}
			r := runs.add(&Link{Trainer: ft, Events: ft.events}, trainer.Info{EnvID: "CartPole-v1", Agent: "mlp", TotalSteps: 1 << 30}, sh.now)
			runs.focus = r.id
			d := newDashboard(sh)
			d.SetSize(size[0], size[1]-2)
			r.handle(metricsEvents(1, 5000))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.handle(metricsEvents(5000+10*i, 5000+10*i+9))
				_ = d.View()
			}
		})
	}
}

// BenchmarkHistoryOf is the cost of reading a run's records into a
// history (opening a run in the runs browser, attaching to one).
func BenchmarkHistoryOf(b *testing.B) {
	ms := make([]trainer.Metrics, 10000)
	for i := range ms {
		ms[i] = fakeMetrics(i + 1)
	}
	b.ResetTimer()
	for range b.N {
		historyOf(ms)
	}
}
