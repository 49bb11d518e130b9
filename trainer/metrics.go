package trainer

import (
	"math"
)

// episodeWindow keeps the returns and lengths of the last n episodes.
type episodeWindow struct {
	returns, lengths []float64
	next, count      int
	total            int64
}

func newEpisodeWindow(n int) *episodeWindow {
	return &episodeWindow{returns: make([]float64, n), lengths: make([]float64, n)}
}

func (w *episodeWindow) add(ret float64, length int) {
	w.returns[w.next], w.lengths[w.next] = ret, float64(length)
	w.next = (w.next + 1) % len(w.returns)
	w.count = min(w.count+1, len(w.returns))
	w.total++
}

// stats returns mean, min, max return and mean length (NaN when empty).
func (w *episodeWindow) stats() (mean, lo, hi, length float64) {
	if w.count == 0 {
		nan := math.NaN()
		return nan, nan, nan, nan
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := 0; i < w.count; i++ {
		r := w.returns[i]
		mean += r
		length += w.lengths[i]
		lo, hi = math.Min(lo, r), math.Max(hi, r)
	}
	return mean / float64(w.count), lo, hi, length / float64(w.count)
}

// explainedVariance is 1 − Var(y − ŷ)/Var(y), NaN when Var(y) = 0.
func explainedVariance(pred, target []float32) float64 {
	var my, md float64
	for i := range target {
		my += float64(target[i])
		md += float64(target[i] - pred[i])
	}
	n := float64(len(target))
	my, md = my/n, md/n
	var vy, vd float64
	for i := range target {
		y, d := float64(target[i])-my, float64(target[i]-pred[i])-md
		vy += y * y
		vd += d * d
	}
	if vy == 0 {
		return math.NaN()
	}
	return 1 - vd/vy
}
