package gpu

import (
	"math/rand/v2"
	"testing"
)

// A product from packed weights has Linear's bits for every row count,
// and a weight packed again after it was written gives the new product.
func TestLinearPackedMatchesLinearBits(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(3, 3))
	var p PackedWeight // reused across shapes, as a generator reuses its packs
	for _, m := range []int{1, 3, 6, 7, 17, 64, 128, 129, 320, 513} {
		for _, nk := range [][2]int{{576, 576}, {200, 300}, {4096, 512}, {1408, 700}, {8, 40}, {1000, 300}, {960, 576}, {208, 300}} {
			for _, beta := range []float32{0, 1, 0.5} {
				n, k := nk[0], nk[1]
				a, b, c0 := randSlice(r, m*k, 1), randSlice(r, k*n, 1), randSlice(r, m*n, 1)
				at, bt := tensorFrom(d, m, k, a), tensorFrom(d, k, n, b)
				d.PackWeight(&p, bt)
				for round := 0; round < 2; round++ {
					c1, c2 := tensorFrom(d, m, n, c0), tensorFrom(d, m, n, c0)
					d.LinearPacked(c1, at, &p, beta)
					d.Linear(c2, at, bt, beta)
					for i, v := range d.Data(c2) {
						if d.Data(c1)[i] != v {
							t.Fatalf("m %d n %d k %d beta %v round %d: element %d is %v, Linear gives %v", m, n, k, beta, round, i, d.Data(c1)[i], v)
						}
					}
					// The weight changes in place: packed again, the
					// product follows it.
					for i := range d.Data(bt) {
						d.Data(bt)[i] = float32(r.NormFloat64())
					}
					d.PackWeight(&p, bt)
				}
			}
		}
	}
}
