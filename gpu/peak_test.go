package gpu

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// BenchmarkFMAPeak measures the machine's float32 multiply-add peak as this
// package reaches it: the 4×16 register-tiled kernel on operands that stay
// in L1 (k = 256: B is 16 KB), one goroutine per core. It is the yardstick
// for the fraction of peak that the PPO update reaches (trainer's
// BenchmarkUpdate).
func BenchmarkFMAPeak(b *testing.B) {
	if !hasFMA {
		b.Skip("no AVX2/FMA kernel on this machine")
	}
	for _, cores := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(map[bool]string{true: "cores=1", false: "cores=all"}[cores == 1], func(b *testing.B) {
			const k = 256
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := 0; w < cores; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a, bm, c := make([]float32, 4*k), make([]float32, k*16), make([]float32, 4*16)
					for i := 0; i < b.N; i++ {
						gemm4x16(&c[0], 16, &a[0], k, &bm[0], 16, k, true)
					}
				}()
			}
			wg.Wait()
			flops := float64(cores) * float64(b.N) * 2 * 4 * 16 * k
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkMeasurePeak reports MeasurePeak on one core and on all of them.
func BenchmarkMeasurePeak(b *testing.B) {
	for _, cores := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(map[bool]string{true: "cores=1", false: "cores=all"}[cores == 1], func(b *testing.B) {
			var p Peak
			for i := 0; i < b.N; i++ {
				p = MeasurePeak(cores, 200*time.Millisecond)
			}
			b.ReportMetric(p.GFLOPS, "GFLOP/s")
		})
	}
}

// BenchmarkSustainedPeak runs MeasurePeak's fastest register-only loop on
// every core for the whole benchmark time: the rate a sitting sustains.
// MeasurePeak keeps its best sample, the machine's best moment; on a
// shared virtual machine the rate drifts by 10–20 % from minute to minute,
// so a fraction of the peak compares medians taken side by side, this one
// beside BenchmarkUpdate's (trainer).
func BenchmarkSustainedPeak(b *testing.B) {
	loops := peakLoops()
	if len(loops) == 0 {
		b.Skip("no assembly loop on this machine")
	}
	l, cores := loops[len(loops)-1], runtime.GOMAXPROCS(0)
	const iters = 1 << 16
	var wg sync.WaitGroup
	for c := 0; c < cores; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < b.N; i++ {
				l.run(iters)
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(cores)*float64(b.N)*iters*l.flopsPerIter/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
