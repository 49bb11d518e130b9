package gpu

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// BenchmarkMatMulShapes times, on one core, the products of a CartPole
// minibatch pass (128 rows, 4 → 64 → 64 → 2 MLP), the 256-wide products
// of the scaling configurations and MinAtar's, reporting each one's
// arithmetic rate.
func BenchmarkMatMulShapes(b *testing.B) {
	for _, s := range []struct {
		name           string
		m, n, k        int
		transA, transB bool
	}{
		{"fwd/128x4·4x64", 128, 64, 4, false, false},
		{"fwd/128x64·64x64", 128, 64, 64, false, false},
		{"fwd/128x64·64x2", 128, 2, 64, false, false},
		{"dW/(128x4)ᵀ·128x64", 4, 64, 128, true, false},
		{"dW/(128x64)ᵀ·128x64", 64, 64, 128, true, false},
		{"dW/(128x64)ᵀ·128x2", 64, 2, 128, true, false},
		{"dX/128x64·(64x64)ᵀ", 128, 64, 64, false, true},
		{"dX/128x2·(64x2)ᵀ", 128, 64, 2, false, true},
		// 256-wide layers on minibatches of 2048 and 8192 rows.
		{"fwd/2048x256·256x256", 2048, 256, 256, false, false},
		{"dW/(2048x256)ᵀ·2048x256", 256, 256, 2048, true, false},
		{"dX/2048x256·(256x256)ᵀ", 2048, 256, 256, false, true},
		{"fwd/8192x256·256x256", 8192, 256, 256, false, false},
		{"dW/(8192x256)ᵀ·8192x256", 256, 256, 8192, true, false},
		{"dX/8192x256·(256x256)ᵀ", 8192, 256, 256, false, true},
		// MinAtar's 16-channel 3×3 convolution on 4 channels, as products
		// over the patches of a 64-frame chunk, and its dense layer on a
		// minibatch of 1,024.
		{"conv/4096x36·36x16", 4096, 16, 36, false, false},
		{"convdW/(4096x36)ᵀ·4096x16", 36, 16, 4096, true, false},
		{"fwd/1024x1024·1024x128", 1024, 128, 1024, false, false},
		{"dW/(1024x1024)ᵀ·1024x128", 1024, 128, 1024, true, false},
		{"dX/1024x128·(1024x128)ᵀ", 1024, 1024, 128, false, true},
		// The 20M language model's training products (8×256 tokens, hidden
		// 512, fused q/k/v 1,024, fused gate/up 2,816, vocabulary 4,096).
		{"lm/qkv/2048x512·512x1024", 2048, 1024, 512, false, false},
		{"lm/gu/2048x512·512x2816", 2048, 2816, 512, false, false},
		{"lm/down/2048x1408·1408x512", 2048, 512, 1408, false, false},
		{"lm/head/2048x512·512x4096", 2048, 4096, 512, false, false},
		{"lm/dW/(2048x512)ᵀ·2048x2816", 512, 2816, 2048, true, false},
		{"lm/dX/2048x2816·(512x2816)ᵀ", 2048, 512, 2816, false, true},
	} {
		b.Run(s.name, func(b *testing.B) {
			d := NewCPU(benchThreads)
			defer d.Close()
			ar, ac, br, bc := operandShapes(s.m, s.n, s.k, s.transA, s.transB)
			a, bm, c := d.Alloc(ar, ac), d.Alloc(br, bc), d.Alloc(s.m, s.n)
			for i, x := range [][]float32{d.Data(a), d.Data(bm)} {
				for j := range x {
					x[j] = float32((j*7+i)%13) * 0.1
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.MatMul(c, a, s.transA, bm, s.transB, 0)
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// benchThreads is the thread count of BenchmarkMatMulShapes' device (one
// core unless BENCH_THREADS says otherwise, to see how a product splits).
var benchThreads = func() int {
	n, _ := strconv.Atoi(os.Getenv("BENCH_THREADS"))
	return max(n, 1)
}()

// BenchmarkTranspose times the copy a product with a transposed weight
// makes first: MinAtar's 1,024×128 hidden layer (rows 4 KB apart) and a
// 256-wide one.
func BenchmarkTranspose(b *testing.B) {
	for _, s := range []struct{ rows, cols int }{{1024, 128}, {256, 256}} {
		b.Run(fmt.Sprintf("%dx%d", s.rows, s.cols), func(b *testing.B) {
			ldd := paddedStride(s.rows) // as the products lay out their copies
			src, dst := make([]float32, s.rows*s.cols), make([]float32, s.cols*ldd)
			b.SetBytes(int64(8 * len(src)))
			for i := 0; i < b.N; i++ {
				transpose(dst, ldd, src, s.rows, s.cols)
			}
		})
	}
}
