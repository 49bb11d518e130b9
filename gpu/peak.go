package gpu

import (
	"runtime"
	"sync"
	"time"
)

// peakLoop is a multiply-add loop on registers only: run(n) performs n
// iterations of flopsPerIter float32 operations.
type peakLoop struct {
	name         string
	run          func(n int)
	flopsPerIter float64
}

// portableLoop is the peak of plain Go: eight independent float32
// multiply-add chains the compiler keeps in registers.
func portableLoop(n int) {
	a0, a1, a2, a3, a4, a5, a6, a7 := float32(0), float32(0), float32(0), float32(0), float32(0), float32(0), float32(0), float32(0)
	x, y := float32(0.999), float32(1e-3)
	for i := 0; i < n; i++ {
		a0 = a0*x + y
		a1 = a1*x + y
		a2 = a2*x + y
		a3 = a3*x + y
		a4 = a4*x + y
		a5 = a5*x + y
		a6 = a6*x + y
		a7 = a7*x + y
	}
	peakSink = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
}

var peakSink float32

// Peak is a measured floating-point peak.
type Peak struct {
	GFLOPS float64 // float32 operations per second, in billions
	Cores  int     // goroutines that ran the loop at once
	Loop   string  // which loop reached it
}

// MeasurePeak measures the machine's float32 peak on the given number of
// cores (0: GOMAXPROCS): each core runs register-only multiply-add loops
// (AVX2 and AVX-512 where the CPU has them, else plain Go) with no memory
// traffic, repeatedly for about d, and the best rate of the best loop
// counts. This is the ceiling no kernel can pass; BenchmarkFMAPeak and
// the trainer's update rate are measured against it.
func MeasurePeak(cores int, d time.Duration) Peak {
	if cores <= 0 {
		cores = runtime.GOMAXPROCS(0)
	}
	loops := append(peakLoops(), peakLoop{"portable Go", portableLoop, 8 * 2})
	if len(loops) > 1 {
		loops = loops[:len(loops)-1] // assembly loops make the portable one moot
	}
	best := Peak{Cores: cores}
	for _, l := range loops {
		const iters = 1 << 16
		deadline := time.Now().Add(d / time.Duration(len(loops)))
		for time.Now().Before(deadline) {
			var wg sync.WaitGroup
			start := time.Now()
			for c := 0; c < cores; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l.run(iters)
				}()
			}
			wg.Wait()
			rate := float64(cores) * iters * l.flopsPerIter / time.Since(start).Seconds() / 1e9
			if rate > best.GFLOPS {
				best.GFLOPS, best.Loop = rate, l.name
			}
		}
	}
	return best
}
