package numtest

import (
	"math"
	"testing"
)

func TestRelErr(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		got, want []float32
		err       float64
		at        int
	}{
		{[]float32{1, 2, 3}, []float32{1, 2, 3}, 0, 0},
		{[]float32{1, 2.5, 4}, []float32{1, 2, 4}, 0.125, 1}, // 0.5 / max|want| 4
		{[]float32{0, 0.5}, []float32{0, 0}, 0.5, 1},         // all-zero want: absolute
		{[]float32{1, nan}, []float32{1, 2}, math.Inf(1), 1},
		{[]float32{nan, 1}, []float32{nan, 1}, 0, 0}, // NaN on both sides agrees
	} {
		err, at := RelErr(tc.got, tc.want)
		if err != tc.err || at != tc.at {
			t.Errorf("RelErr(%v, %v) = %v at %d, want %v at %d", tc.got, tc.want, err, at, tc.err, tc.at)
		}
	}
}
