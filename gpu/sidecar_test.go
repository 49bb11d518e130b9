package gpu

import (
	"sync/atomic"
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

// TestEachRunsEveryPartOnce: the pool runs every part of a split exactly
// once before each returns, with workers polling, parked (after pauses
// longer than sidecarSpin) or slow, and after Close on the caller alone.
func TestEachRunsEveryPartOnce(t *testing.T) {
	d := NewCPU(4)
	var runs [4]atomic.Int64
	fn := func(part int) {
		if part == 2 && runs[2].Load()%50 == 3 {
			time.Sleep(10 * sidecarWait) // a slow worker: the caller sleeps until it is done
		}
		runs[part].Add(1)
	}
	for round := 1; round <= 600; round++ {
		if round%200 == 0 {
			time.Sleep(2 * sidecarSpin) // let the workers park
		}
		parts := 1 + round%4
		d.pool.each(parts, fn)
		for p := 0; p < 4; p++ {
			if want := expectedRuns(round, p); runs[p].Load() != want {
				t.Fatalf("round %d (%d parts): part %d ran %d times, want %d", round, parts, p, runs[p].Load(), want)
			}
		}
	}
	d.Close()
	before := runs[0].Load()
	d.pool.each(d.pool.parts(), fn)
	if d.pool.parts() != 1 || runs[0].Load() != before+1 {
		t.Fatalf("after Close: %d parts, part 0 ran %d more times", d.pool.parts(), runs[0].Load()-before)
	}
}

// expectedRuns counts the rounds 1…round in which part p ran: round r
// splits into 1 + r mod 4 parts.
func expectedRuns(round, p int) int64 {
	var n int64
	for r := 1; r <= round; r++ {
		if p < 1+r%4 {
			n++
		}
	}
	return n
}
