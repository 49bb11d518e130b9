package gpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// stealer runs the chunks of a job on the calling goroutine and on helper
// goroutines, each taking the next chunk not yet taken, so that the caller
// waits only for chunks a helper has actually started. A decoding step is
// a hundred small jobs; on a machine running more threads than it has
// cores, a helper the scheduler has not run for a few milliseconds would
// hold every one of them up if the caller waited for its share (as the
// worker pool's parts do), where here the caller simply takes its share
// too. On an idle machine the helpers take their chunks within
// microseconds and the work splits as the pool's would.
//
// The job's state is one word: its epoch, its chunk count and the next
// chunk to take. A helper reads the job's function, then takes a chunk by
// compare-and-swap on the state it read, so it never runs a chunk of a job
// that has already ended. Helpers start on demand and end after a second
// without work, so an unused device leaves no goroutine behind.
type stealer struct {
	state   atomic.Uint64 // epoch<<32 | chunks<<16 | next
	done    atomic.Int64  // chunks finished in this epoch
	fn      atomic.Pointer[func(int)]
	helpers int // how many may run beside the caller
	alive   atomic.Int32
	parked  atomic.Int32
	wake    chan struct{}
	mu      sync.Mutex // starting helpers
}

// maxStealChunks bounds a job's chunks (16 bits of the state).
const maxStealChunks = 1<<16 - 1

// stealSpin is how long an idle helper polls for the next job before it
// parks; stealLinger how long it stays parked before it ends.
const stealSpin, stealLinger = 200 * time.Microsecond, time.Second

func newStealer(helpers int) *stealer {
	return &stealer{helpers: helpers, wake: make(chan struct{}, helpers)}
}

// stealers holds each CPU device's stealer (the device type is not ours
// to extend here; the helpers end on their own when idle).
var stealers sync.Map

func (d *CPU) stealer() *stealer {
	if s, ok := stealers.Load(d); ok {
		return s.(*stealer)
	}
	s, _ := stealers.LoadOrStore(d, newStealer(d.threads-1))
	return s.(*stealer)
}

func stealFields(st uint64) (epoch uint64, chunks, next int) {
	return st >> 32, int(st >> 16 & 0xffff), int(st & 0xffff)
}

// run calls fn(chunk) for every chunk in [0, chunks), on the caller and on
// the helpers, and returns when all have returned. It is called from one
// goroutine at a time (the device's).
func (s *stealer) run(chunks int, fn func(chunk int)) {
	if chunks <= 0 {
		return
	}
	if s.helpers == 0 || chunks == 1 {
		for c := 0; c < chunks; c++ {
			fn(c)
		}
		return
	}
	if chunks > maxStealChunks {
		panic("gpu: too many chunks for one job")
	}
	s.fn.Store(&fn)
	s.done.Store(0)
	epoch, _, _ := stealFields(s.state.Load())
	s.state.Store((epoch+1)<<32 | uint64(chunks)<<16)
	s.ensureHelpers()
	for p := s.parked.Load(); p > 0; p-- {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	for {
		st := s.state.Load()
		_, n, next := stealFields(st)
		if next >= n {
			break
		}
		if s.state.CompareAndSwap(st, st+1) {
			fn(next)
			s.done.Add(1)
		}
	}
	for spins := 0; s.done.Load() < int64(chunks); spins++ {
		if spins%64 == 63 {
			runtime.Gosched() // a helper finishing a chunk may need this core
		}
	}
}

// ensureHelpers starts helpers up to the number allowed.
func (s *stealer) ensureHelpers() {
	if int(s.alive.Load()) >= s.helpers {
		return
	}
	s.mu.Lock()
	for int(s.alive.Load()) < s.helpers {
		s.alive.Add(1)
		go s.help()
	}
	s.mu.Unlock()
}

// help takes chunks of whatever job is current, polls for the next for a
// while, parks, and ends after stealLinger without work.
func (s *stealer) help() {
	defer s.alive.Add(-1)
	timer := time.NewTimer(stealLinger)
	defer timer.Stop()
	idleSince := time.Now()
	for polls := 0; ; polls++ {
		st := s.state.Load()
		_, n, next := stealFields(st)
		if next < n {
			fn := s.fn.Load()
			if s.state.CompareAndSwap(st, st+1) {
				(*fn)(next)
				s.done.Add(1)
				idleSince = time.Now()
			}
			continue
		}
		if polls%64 != 63 || time.Since(idleSince) < stealSpin {
			if polls%64 == 63 {
				runtime.Gosched()
			}
			continue
		}
		// Park: announce it, look once more (a job posted meanwhile saw
		// no parked helper to wake), then wait.
		s.parked.Add(1)
		if _, n, next := stealFields(s.state.Load()); next < n {
			s.parked.Add(-1)
			continue
		}
		timer.Reset(stealLinger)
		select {
		case <-s.wake:
			s.parked.Add(-1)
			idleSince = time.Now()
		case <-timer.C:
			s.parked.Add(-1)
			return
		}
	}
}
