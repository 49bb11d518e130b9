package plot

import (
	"math"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
)

// ticker puts major ticks on round numbers (1, 2, 2.5 or 5 times a power of
// ten, at most seven of them) with minor ticks between, and labels large
// numbers with SI suffixes (250k, 1.5M).
type ticker struct{}

// maxTicks bounds the ticks of one axis (major and minor; about 40 are
// drawn on a well-formed axis).
const maxTicks = 200

// Ticks implements gplot.Ticker.
func (ticker) Ticks(lo, hi float64) []gplot.Tick {
	scale := math.Max(math.Abs(lo), math.Abs(hi))
	// An axis narrower than what float64 tells apart at its magnitude
	// (values one ulp apart) has no round numbers between its ends: one
	// tick, rather than steps too small to move from lo.
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(hi-lo) || hi-lo <= scale*1e-12 {
		return []gplot.Tick{{Value: lo, Label: formatTick(lo, math.Max(scale, 1), scale)}}
	}
	step, minors := niceStep((hi - lo) / 7)
	minor := step / float64(minors)
	if !(step > 0) || math.IsInf(step, 0) || (hi-lo)/minor > maxTicks {
		return []gplot.Tick{{Value: lo, Label: formatTick(lo, math.Max(scale, 1), scale)}, {Value: hi, Label: formatTick(hi, math.Max(scale, 1), scale)}}
	}
	eps := step * 1e-9
	var ticks []gplot.Tick
	first := math.Ceil((lo-eps)/step) * step
	start := math.Ceil((lo-eps)/minor) * minor
	// Counted, not accumulated: v = start + i·minor always moves on.
	for i := 0; i <= maxTicks; i++ {
		v := start + float64(i)*minor
		if v > hi+eps {
			break
		}
		k := math.Round((v - first) / step)
		if math.Abs(v-(first+k*step)) < eps {
			v = first + k*step
			ticks = append(ticks, gplot.Tick{Value: v, Label: formatTick(v, step, scale)})
		} else {
			ticks = append(ticks, gplot.Tick{Value: v})
		}
	}
	return ticks
}

// niceStep rounds a raw step up to 1, 2, 2.5 or 5 times a power of ten, and
// says how many minor intervals divide it.
func niceStep(raw float64) (step float64, minors int) {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []struct {
		mant   float64
		minors int
	}{{1, 5}, {2, 4}, {2.5, 5}, {5, 5}, {10, 5}} {
		if raw <= m.mant*p*(1+1e-9) {
			return m.mant * p, m.minors
		}
	}
	return 10 * p, 5
}

// formatTick writes v with as many decimals as the step needs, thousands
// and millions as k and M when the axis reaches them (scale is its largest
// magnitude, so one axis uses one suffix).
func formatTick(v, step, scale float64) string {
	if math.Abs(v) < step*1e-6 {
		return "0"
	}
	suffix := ""
	for _, s := range []struct {
		div, from float64
		sfx       string
	}{{1e9, 1e9, "G"}, {1e6, 1e6, "M"}, {1e3, 1e4, "k"}} { // 2000, not 2.0k
		if step >= s.div/10 && scale >= s.from {
			v, step, suffix = v/s.div, step/s.div, s.sfx
			break
		}
	}
	decimals := 0
	for d := 0; d < 12; d++ {
		scaled := step * math.Pow(10, float64(d))
		if math.Abs(scaled-math.Round(scaled)) < 1e-6*scaled {
			decimals = d
			break
		}
	}
	if math.Abs(v) < 1e-4 || math.Abs(v) >= 1e15 {
		return strings.Replace(strconv.FormatFloat(v, 'g', 3, 64), "e-0", "e-", 1) + suffix
	}
	return strconv.FormatFloat(v, 'f', decimals, 64) + suffix
}

// logTicker marks a logarithmic axis: powers of ten labelled (with 2 and
// 5 times them too when there are few) over several decades; within about
// a decade, where powers of ten would leave the axis bare, the round
// numbers of the linear ticker.
type logTicker struct{}

// Ticks implements gplot.Ticker.
func (logTicker) Ticks(lo, hi float64) []gplot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return positive(ticker{}.Ticks(lo, hi), lo)
	}
	first, last := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	decades := math.Log10(hi / lo)
	if decades <= 1 {
		return positive(ticker{}.Ticks(lo, hi), lo)
	}
	labelled := map[int]bool{1: true}
	if decades <= 3 {
		labelled[2], labelled[5] = true, true
	}
	var ticks []gplot.Tick
	for e := first; e <= last && len(ticks) <= maxTicks*4; e++ {
		p := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * p
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := gplot.Tick{Value: v}
			if labelled[m] {
				t.Label = formatTick(v, v, v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// positive keeps the ticks a log axis can place (above 0); with none left,
// one at lo.
func positive(ticks []gplot.Tick, lo float64) []gplot.Tick {
	out := ticks[:0]
	for _, t := range ticks {
		if t.Value > 0 {
			out = append(out, t)
		}
	}
	if len(out) == 0 && lo > 0 {
		out = append(out, gplot.Tick{Value: lo, Label: formatTick(lo, lo, lo)})
	}
	return out
}
