package gpu

import (
	"testing"
	"time"
)

// TestBothRunsEachOnce runs many pairs of jobs, with pauses long enough for
// the sidecar to park between some of them, main jobs short enough that the
// caller sometimes takes the side job back, and side jobs long enough that
// the caller sleeps until they finish: every job must run exactly once, on
// a handle of its own, before Both returns.
func TestBothRunsEachOnce(t *testing.T) {
	for _, threads := range []int{1, 2} {
		d := NewCPU(threads)
		var sides, mains int
		var sideDev, mainDev Device
		side := func(dev Device) {
			if sides%100 == 7 {
				time.Sleep(10 * sidecarWait)
			}
			sides++
			sideDev = dev
		}
		main := func(dev Device) { mains++; mainDev = dev }
		for i := 0; i < 3000; i++ {
			if i%500 == 0 {
				time.Sleep(2 * sidecarSpin) // let the sidecar park
			}
			before := sides
			d.Both(side, main)
			if sides != before+1 || mains != i+1 {
				t.Fatalf("threads=%d, pair %d: side ran %d times, main %d times", threads, i, sides-before, mains-i)
			}
		}
		switch {
		case threads == 1 && (sideDev != Device(d) || mainDev != Device(d)):
			t.Errorf("one thread: jobs should run on the device itself")
		case threads == 2 && (sideDev == mainDev || sideDev == Device(d)):
			t.Errorf("two threads: jobs share a handle")
		}
		d.Close()
		d.Both(side, main) // after Close, in turn on the caller's goroutine
		if sides != 3001 || mains != 3001 {
			t.Errorf("threads=%d after Close: %d/%d runs", threads, sides, mains)
		}
	}
}
