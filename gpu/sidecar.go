package gpu

import (
	"runtime"
	"sync/atomic"
	"time"
)

// sidecarSpin is how long the sidecar keeps polling for the next job before
// it parks. Waking a parked goroutine costs an OS thread wake-up, which on a
// virtual machine takes tens of microseconds, as long as a whole CartPole
// minibatch pass, and on this project's 2-core machine 110–130 µs before a
// woken worker started its half of a MinAtar product. PPO's minibatches
// (and rollout steps) follow each other within microseconds, but a MinAtar
// minibatch has stretches of a few hundred microseconds on one core (the
// heads and the loss); polling through them made its update 17–20 % faster
// than polling for 50 µs (medians of 7 runs of go test ./trainer -bench
// Update/MinAtar; CartPole unchanged). A sidecar idle for longer (a paused
// run, a slow environment) gives its core back.
const sidecarSpin = time.Millisecond

// sidecarWait is how long the caller polls for the sidecar to finish a job
// before it sleeps until told.
const sidecarWait = 20 * time.Microsecond

// Job states.
const (
	sideIdle int32 = iota
	sidePosted
	sideTaken
	sideFinished
)

// sidecar is a goroutine that runs one job at a time beside its caller's.
type sidecar struct {
	state  atomic.Int32
	fn     func(Device) // the posted job, set before state becomes sidePosted
	dev    Device
	parked atomic.Bool // the sidecar sleeps on wake
	quit   atomic.Bool
	wake   chan struct{}

	waiting atomic.Bool // the caller sleeps on done
	done    chan struct{}
}

func startSidecar() *sidecar {
	s := &sidecar{wake: make(chan struct{}, 1), done: make(chan struct{}, 1)}
	go s.loop()
	return s
}

func (s *sidecar) loop() {
	since := time.Now()
	for polls := 0; !s.quit.Load(); polls++ {
		if s.state.Load() != sidePosted {
			// Poll, every 64 polls reading the clock and letting the
			// process's other goroutines run: polling for a millisecond
			// without yielding held a core from them (the control
			// server of a training, and its viewers in the same process,
			// answered only when the scheduler preempted the sidecar).
			if polls%64 != 0 {
				continue
			}
			if time.Since(since) < sidecarSpin {
				runtime.Gosched()
				continue
			}
			// Park. The state is checked again after parked is set, so a job
			// posted in between is not missed (run reads parked after posting).
			s.parked.Store(true)
			if s.state.Load() != sidePosted && !s.quit.Load() {
				<-s.wake
			}
			s.parked.Store(false)
			since = time.Now()
			continue
		}
		if s.state.CompareAndSwap(sidePosted, sideTaken) {
			s.fn(s.dev)
			s.state.Store(sideFinished)
			if s.waiting.Load() {
				signal(s.done)
			}
		}
		since = time.Now()
	}
}

// signal leaves a token in ch (buffered, 1) unless one is already there.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run runs side(sideDev) on the sidecar and main(mainDev) here, and returns
// when both are done. If the sidecar has not started its job by the time
// main is done (it was parked and is slow to wake), the caller takes the job
// back, so run is never slower than running the two in turn by more than
// the bookkeeping.
func (s *sidecar) run(side func(Device), sideDev Device, main func(Device), mainDev Device) {
	s.post(side, sideDev)
	main(mainDev)
	s.finish(true)
}

// post hands job(dev) to the sidecar; finish must follow.
func (s *sidecar) post(job func(Device), dev Device) {
	s.fn, s.dev = job, dev
	s.state.Store(sidePosted)
	if s.parked.Load() {
		signal(s.wake)
	}
}

// finish returns when the posted job is done. With takeBack, a job the
// sidecar has not started yet is run here instead.
func (s *sidecar) finish(takeBack bool) {
	if takeBack && s.state.CompareAndSwap(sidePosted, sideTaken) {
		s.fn(s.dev) // the sidecar has not started it: run it here
	} else {
		s.await()
	}
	s.fn, s.dev = nil, nil
	s.state.Store(sideIdle)
}

// await returns once the sidecar has finished the job it took: it polls
// for sidecarWait, then sleeps until the sidecar signals. On a busy machine
// the sidecar's thread can lose its core in the middle of a job, and
// polling for it would only take that core from it for a whole time slice.
func (s *sidecar) await() {
	since := time.Now()
	for polls := 1; s.state.Load() != sideFinished; polls++ {
		if polls%64 == 0 && time.Since(since) > sidecarWait {
			s.waiting.Store(true) // then the state again: see loop's parking
			for s.state.Load() != sideFinished {
				<-s.done
			}
			s.waiting.Store(false)
			return
		}
	}
}

func (s *sidecar) stop() {
	s.quit.Store(true)
	signal(s.wake)
}
