package gpu

import (
	"runtime"
	"sync"
	"time"
)

// Bandwidth is a measured rate of reading memory.
type Bandwidth struct {
	GBps  float64 // bytes read per second, in billions
	Cores int
}

// bandwidthBytes is the buffer MeasureBandwidth streams: eight times a
// 32 MB last-level cache, so that it is read from memory.
const bandwidthBytes = 256 << 20

// MeasureBandwidth measures how fast cores goroutines (0: GOMAXPROCS)
// stream a buffer far larger than the caches from memory, each its own
// part with the SIMD dot-product kernel (plain Go without it), for about
// d; the best pass counts. It is the ceiling of work that reads every
// weight once per step, as decoding one sequence does.
func MeasureBandwidth(cores int, d time.Duration) Bandwidth {
	if cores <= 0 {
		cores = runtime.GOMAXPROCS(0)
	}
	buf := make([]float32, bandwidthBytes/4)
	for i := range buf {
		buf[i] = 1
	}
	best := Bandwidth{Cores: cores}
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		var wg sync.WaitGroup
		start := time.Now()
		for c := 0; c < cores; c++ {
			part := buf[len(buf)*c/cores : len(buf)*(c+1)/cores]
			wg.Add(1)
			go func() {
				defer wg.Done()
				bandwidthSink[0] = readAll(part)
			}()
		}
		wg.Wait()
		best.GBps = max(best.GBps, float64(bandwidthBytes)/time.Since(start).Seconds()/1e9)
	}
	return best
}

var bandwidthSink [1]float32

// readAll reads every value of x once.
func readAll(x []float32) float32 {
	if n := len(x) &^ 15; hasFMA && n > 0 {
		return dot16(&x[0], &x[0], n) // the second operand hits the line the first loaded
	}
	var s float32
	for _, v := range x {
		s += v
	}
	return s
}
