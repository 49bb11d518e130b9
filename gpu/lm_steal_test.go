package gpu

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// Every chunk of every job runs exactly once, whoever takes it, and run
// returns only when all have returned (go test -race checks the sharing).
func TestStealerRunsEveryChunkOnce(t *testing.T) {
	for _, helpers := range []int{0, 1, 3} {
		s := newStealer(helpers)
		r := rand.New(rand.NewPCG(1, uint64(helpers)))
		for job := 0; job < 2000; job++ {
			n := 1 + r.IntN(40)
			counts := make([]atomic.Int32, n)
			var running atomic.Int32
			s.run(n, func(c int) {
				running.Add(1)
				counts[c].Add(1)
				for i := 0; i < r2(c); i++ { // uneven chunks
					_ = i
				}
				running.Add(-1)
			})
			if running.Load() != 0 {
				t.Fatalf("helpers %d job %d: run returned while a chunk ran", helpers, job)
			}
			for c := range counts {
				if got := counts[c].Load(); got != 1 {
					t.Fatalf("helpers %d job %d: chunk %d of %d ran %d times", helpers, job, c, n, got)
				}
			}
		}
	}
}

func r2(c int) int { return (c * 7919) % 1000 }
