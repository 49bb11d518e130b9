// Package numtest compares float32 results that may differ by rounding,
// such as the same computation on the CPU and on a GPU.
package numtest

import "math"

// RelErr is max|got−want| / max|want| (the absolute error when want is all
// zeros), with a NaN on one side only counting as an infinite error (on
// both, as agreement), and the index of the largest difference.
func RelErr(got, want []float32) (float64, int) {
	var maxDiff, maxRef float64
	at := 0
	for i := range want {
		gotNaN, wantNaN := math.IsNaN(float64(got[i])), math.IsNaN(float64(want[i]))
		if gotNaN && wantNaN {
			continue // they agree
		}
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if gotNaN != wantNaN {
			d = math.Inf(1)
		}
		if d > maxDiff {
			maxDiff, at = d, i
		}
		maxRef = math.Max(maxRef, math.Abs(float64(want[i])))
	}
	if maxRef == 0 {
		return maxDiff, at
	}
	return maxDiff / maxRef, at
}
