package envs

import (
	"runtime"
	"sync"
	"time"
)

// SetThreads lets Step spread the sub-environments over up to threads
// cores (0: GOMAXPROCS; 1: one after the other, the default). The pool
// steps in parallel only while that is faster: built-in worlds step in
// well under a microsecond (CartPole) to a few (MinAtar), while handing
// work to another core costs tens of microseconds (a woken thread on a
// virtual machine took 110–130 µs to start, gpu/sidecar.go), so it pays
// only for many sub-environments of a costly world. Each sub-environment
// is stepped by exactly one goroutine and the bookkeeping (returns,
// Finished in index order) stays sequential: the results are the same
// bits whichever way a step ran. A vector with BeforeReset set, or of a
// batch backend, always steps as before.
func (v *Vector) SetThreads(threads int) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	threads = min(threads, len(v.Envs)/minEnvsPerThread)
	if v.batch != nil || threads < 2 {
		v.pool = nil
		return
	}
	n := len(v.Envs)
	v.pool = &stepPool{threads: threads, rewards: make([]float64, n), flags: make([]uint8, n), success: make([]bool, n)}
}

// Threads is the number of cores Step may use (1 unless SetThreads gave
// more and there are enough sub-environments).
func (v *Vector) Threads() int {
	if v.pool == nil {
		return 1
	}
	return v.pool.threads
}

// Tuning of the stepping pool.
const (
	// minEnvsPerThread: fewer sub-environments per core are never split.
	minEnvsPerThread = 4
	// minParallelCost: a vector step that costs less one after the other
	// is never tried in parallel (a thread's wake-up costs more).
	minParallelCost = 50 * time.Microsecond
	// probeEvery: one step in probeEvery measures the mode not in use, so
	// a world whose cost changes (longer episodes, a ramping difficulty)
	// is followed.
	probeEvery = 64
)

// stepPool steps a vector's sub-environments on several cores when that
// measured faster. seqCost and parCost are running means of a whole vector
// step's wall time one after the other and in parallel (0: not measured).
type stepPool struct {
	threads          int
	tick             int
	force            int     // tests: +1 always parallel, −1 never
	seqCost, parCost float64 // nanoseconds

	// Per sub-environment results of a parallel step, booked afterwards.
	rewards []float64
	flags   []uint8 // bit 0 terminated, bit 1 truncated
	success []bool
	wg      sync.WaitGroup
}

// mode decides how the next step runs: in parallel or not, and whether it
// is timed (every parallel step, the first one and every probeEvery-th).
func (p *stepPool) mode() (parallel, timed bool) {
	if p.force != 0 {
		return p.force > 0, false
	}
	p.tick++
	probe := p.tick%probeEvery == 0
	worth := p.seqCost >= float64(minParallelCost)
	parallel = worth && (p.parCost == 0 || p.parCost < p.seqCost)
	if probe && worth {
		parallel = !parallel // measure the other mode now and then
	}
	return parallel, parallel || probe || p.seqCost == 0
}

func (p *stepPool) step(v *Vector, actions []float32) {
	parallel, timed := p.mode()
	if !timed {
		if parallel {
			p.stepParallel(v, actions)
		} else {
			v.stepSeq(actions) // the common case of a cheap world: not even timed
		}
		return
	}
	start := time.Now()
	if parallel {
		p.stepParallel(v, actions)
	} else {
		v.stepSeq(actions)
	}
	cost := float64(time.Since(start))
	at := &p.seqCost
	if parallel {
		at = &p.parCost
	}
	if *at == 0 {
		*at = cost
	} else {
		*at += (cost - *at) / 8
	}
}

// stepParallel steps contiguous shares of the sub-environments on
// p.threads goroutines (the caller's among them), then books the results
// in index order exactly as stepSeq does.
func (p *stepPool) stepParallel(v *Vector, actions []float32) {
	n := len(v.Envs)
	share := (n + p.threads - 1) / p.threads
	for lo := share; lo < n; lo += share {
		p.wg.Add(1)
		go func(lo, hi int) {
			p.stepRange(v, actions, lo, hi)
			p.wg.Done()
		}(lo, min(lo+share, n))
	}
	p.stepRange(v, actions, 0, min(share, n))
	p.wg.Wait()
	for i, e := range v.Envs {
		f := p.flags[i]
		ep := v.account(i, p.rewards[i], f&1 != 0, f&2 != 0)
		if ep == nil {
			continue
		}
		if _, ok := unwrapTo[SuccessReporter](e); ok {
			ep.Success, ep.HasSuccess = p.success[i], true
		}
	}
}

// stepRange steps sub-environments [lo, hi): what stepSeq does to each but
// the bookkeeping.
func (p *stepPool) stepRange(v *Vector, actions []float32, lo, hi int) {
	d, a := v.ObsDim, v.ActDim
	for i := lo; i < hi; i++ {
		e := v.Envs[i]
		obs := v.Obs[i*d : (i+1)*d]
		r, term, trunc := e.Step(actions[i*a:(i+1)*a], obs)
		p.rewards[i] = r
		p.flags[i] = 0
		if term {
			p.flags[i] |= 1
		}
		if trunc {
			p.flags[i] |= 2
		}
		if !term && !trunc {
			continue
		}
		if s, ok := unwrapTo[SuccessReporter](e); ok {
			p.success[i] = s.Succeeded()
		}
		if s, ok := unwrapTo[StatsReporter](e); ok { // slot i is this goroutine's alone
			v.EpisodeStats[i] = v.EpisodeStats[i][:0]
			s.EpisodeStats(func(name string, x float64) { v.EpisodeStats[i] = append(v.EpisodeStats[i], Stat{name, x}) })
		}
		copy(v.FinalObs[i*d:(i+1)*d], obs)
		e.Reset(NoSeed, obs)
	}
}
