package layers

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestOrthogonalInit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range []struct{ rows, cols int }{{64, 4}, {4, 64}, {64, 64}, {2, 64}} {
		w := make([]float32, s.rows*s.cols)
		orthogonal(w, s.rows, s.cols, math.Sqrt2, r)
		// The shorter side's vectors are orthogonal with squared norm gain².
		short, long := s.cols, s.rows
		at := func(i, j int) float64 { return float64(w[j*s.cols+i]) } // column i, element j
		if s.rows < s.cols {
			short, long = s.rows, s.cols
			at = func(i, j int) float64 { return float64(w[i*s.cols+j]) }
		}
		for i := 0; i < short; i++ {
			for k := 0; k <= i; k++ {
				var dot float64
				for j := 0; j < long; j++ {
					dot += at(i, j) * at(k, j)
				}
				want := 0.0
				if i == k {
					want = 2
				}
				if math.Abs(dot-want) > 1e-5 {
					t.Fatalf("%dx%d: <v%d,v%d> = %v, want %v", s.rows, s.cols, i, k, dot, want)
				}
			}
		}
	}
}
