package gpu

import (
	"fmt"
	"testing"
)

// BenchmarkGemmRows times gemmRows on one core for the 20M model's
// products (1,024 rows: a core's half of the 8×256 tokens), with B's rows
// n apart as a weight is stored and a cache line further apart, and with
// the packing buffers the device gives it.
func BenchmarkGemmRows(b *testing.B) {
	for _, s := range []struct{ m, n, k int }{{1024, 1024, 512}, {1024, 2816, 512}, {1024, 512, 1408}, {1024, 4096, 512}, {512, 2816, 2048}} {
		for _, v := range []struct {
			pad    int
			packed bool
		}{{0, false}, {16, false}, {0, true}} {
			pad := v.pad
			b.Run(fmt.Sprintf("%dx%dx%d/pad=%d/packed=%v", s.m, s.n, s.k, pad, v.packed), func(b *testing.B) {
				ldb := s.n + pad
				a, bm, c := make([]float32, s.m*s.k), make([]float32, s.k*ldb), make([]float32, s.m*s.n)
				for i := range a {
					a[i] = float32(i%13) * 0.1
				}
				for i := range bm {
					bm[i] = float32(i%7) * 0.1
				}
				g := gemmArgs{c: c, a: a, b: bm, n: s.n, k: s.k, ldb: ldb, overwrite: true}
				var pack *gemmPack
				if v.packed {
					pack = &gemmPack{}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					gemmRows(&g, 0, s.m, pack)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
