package remote

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agenttrainer/agenttrainer/envs"
)

// WorkerPool is a batch of sub-environments shared by several environment
// servers (workers): worker w holds a contiguous share of them and all
// workers step at once, each over its own connection. Sub-environment i
// keeps its seed (seed + i) and its random stream whichever worker holds
// it, so a pool gives the results of one server with the same seeds.
//
// With asynchronous stepping (env.args.batch_size) the workers are the
// groups of an envs.AsyncBatchEnv: a rollout sends a step to some of them
// and takes whichever finish first.
//
// A worker that fails (crashes, hangs past env.args.timeout_s, breaks the
// protocol) stops the pool with an error naming the worker, its
// sub-environments and the server's last stderr lines — or, with
// env.args.restart_workers, is started again: its sub-environments are
// reset and the step that failed ends their episodes as truncated.
type WorkerPool struct {
	workers        []*worker
	n              int
	os, as         envs.Space
	reportsSuccess bool
	o              RemoteOptions
	batch          int // asynchronous batch size; 0: lockstep
	group          int // sub-environments per worker when all hold as many, else 0

	done     chan *worker // workers whose job finished
	underWay int          // jobs sent and not yet received

	sent     int          // SendGroup calls (asynchronous group steps)
	seed     atomic.Int64 // the last Reset's seed, for restarted workers
	restarts atomic.Int32
	log      func(string)
	launched *launch // servers started by the pool (srun), or nil
	closed   bool
}

// worker is one server and its share [off, off+n) of the sub-environments.
type worker struct {
	p         *WorkerPool
	idx       int
	off, n    int
	addr      string     // TCP address ("" for a subprocess)
	mu        sync.Mutex // guards conn against abort while a job swaps it
	conn      *RemoteEnv
	reset     bool  // the job is a reset (else a step)
	resetSeed int64 // the reset's seed
	actions   []float32
	// The caller's buffers of the job under way; the worker writes only
	// its own rows.
	obs, finalObs []float32
	rewards       []float64
	term, trunc   []bool
	lastObs       []float32 // the observations a step started from (kept for a restart)
	err           error
}

// OpenPool starts or connects to the workers that o describes and shares n
// sub-environments among them.
func OpenPool(n int, o RemoteOptions) (*WorkerPool, error) {
	w := o.workerCount()
	if n < 1 {
		return nil, fmt.Errorf("the remote environment needs at least one sub-environment (env.num_envs), got %d", n)
	}
	if w > n {
		return nil, &envs.ArgsError{Err: fmt.Errorf("env.args.workers = %d is more than env.num_envs = %d: every worker holds at least one sub-environment", w, n)}
	}
	p := &WorkerPool{n: n, o: o, done: make(chan *worker, w), log: func(s string) { fmt.Fprintln(os.Stderr, s) }}
	p.seed.Store(envs.NoSeed)
	if n%w == 0 {
		p.group = n / w
	}
	if b := o.Pool.BatchSize; b > 0 && b < n {
		switch {
		case p.group == 0:
			return nil, &envs.ArgsError{Err: fmt.Errorf("env.args.batch_size steps whole workers: env.num_envs = %d must be a multiple of env.args.workers = %d", n, w)}
		case b%p.group != 0:
			return nil, &envs.ArgsError{Err: fmt.Errorf("env.args.batch_size = %d must be a multiple of the %d sub-environments each of the %d workers holds (env.num_envs / env.args.workers): a worker steps all of its sub-environments with one message", b, p.group, w)}
		}
		p.batch = b
	} else if b > n {
		return nil, &envs.ArgsError{Err: fmt.Errorf("env.args.batch_size = %d is more than env.num_envs = %d", b, n)}
	}
	addrs := o.Pool.Addresses
	if o.Address != "" {
		addrs = []string{o.Address}
	}
	if o.Pool.Launcher != "" || o.Pool.Rendezvous != "" {
		l, err := startLaunch(&o, w)
		if err != nil {
			return nil, err
		}
		p.launched, p.o = l, o
		if addrs, err = l.addresses(w); err != nil {
			l.stop()
			return nil, err
		}
	}
	off := 0
	for i := range w {
		share := n / w
		if i < n%w {
			share++
		}
		wk := &worker{p: p, idx: i, off: off, n: share}
		if len(addrs) > 0 {
			wk.addr = addrs[i%len(addrs)]
		}
		p.workers = append(p.workers, wk)
		off += share
	}
	// Start them all at once: a Python server takes a while to import.
	errs := make([]error, w)
	var wg sync.WaitGroup
	for i, wk := range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk.conn, errs[i] = p.connect(wk)
		}()
	}
	wg.Wait()
	if err := p.joinErrors(errs); err != nil {
		p.Close()
		return nil, err
	}
	first := p.workers[0].conn
	p.os, p.as, p.reportsSuccess = first.ObservationSpace(), first.ActionSpace(), first.ReportsSuccess()
	for _, wk := range p.workers[1:] {
		if err := p.sameAsFirst(wk.conn); err != nil {
			p.Close()
			return nil, wk.wrap(err)
		}
	}
	return p, nil
}

// connect opens worker wk's connection: a subprocess or a TCP server.
func (p *WorkerPool) connect(wk *worker) (*RemoteEnv, error) {
	o := p.o
	o.EnvOffset = wk.off
	if wk.addr != "" {
		o.Command, o.Address = nil, wk.addr
	}
	if p.launched != nil {
		o.Secret, o.AllowRemote = p.launched.secret, true // our own servers, authenticated
	}
	if o.Stderr != nil {
		o.Stderr = &prefixWriter{prefix: fmt.Sprintf("[env worker %d] ", wk.idx), w: o.Stderr}
	}
	r, err := OpenRemote(wk.n, o)
	if err != nil {
		return nil, wk.wrap(err)
	}
	return r, nil
}

// sameAsFirst checks that a worker serves what worker 0 does.
func (p *WorkerPool) sameAsFirst(r *RemoteEnv) error {
	os, as := r.ObservationSpace(), r.ActionSpace()
	switch {
	case os.Dim != p.os.Dim || as.Kind != p.as.Kind || as.N != p.as.N || as.Dim != p.as.Dim:
		return fmt.Errorf("it serves %v observations and %v actions, worker 0 %v and %v: every worker must serve the same environment", os, as, p.os, p.as)
	case r.ReportsSuccess() != p.reportsSuccess:
		return fmt.Errorf("it reports success %v, worker 0 %v: every worker must serve the same environment", r.ReportsSuccess(), p.reportsSuccess)
	}
	return nil
}

func (p *WorkerPool) joinErrors(errs []error) error {
	var bad []error
	for _, err := range errs {
		if err != nil {
			bad = append(bad, err)
		}
	}
	return errors.Join(bad...)
}

// wrap names the worker in err.
func (w *worker) wrap(err error) error {
	return &WorkerError{Worker: w.idx, Workers: len(w.p.workers), First: w.off, Last: w.off + w.n - 1, Err: err}
}

// WorkerError is the failure of one worker of a pool.
type WorkerError struct {
	Worker, Workers int // which worker (0-based) of how many
	First, Last     int // its sub-environments
	Err             error
}

func (e *WorkerError) Error() string {
	return fmt.Sprintf("env worker %d of %d (sub-environments %d–%d): %v", e.Worker, e.Workers, e.First, e.Last, e.Err)
}

func (e *WorkerError) Unwrap() error { return e.Err }

// NumEnvs implements BatchEnv.
func (p *WorkerPool) NumEnvs() int { return p.n }

// ObservationSpace implements BatchEnv.
func (p *WorkerPool) ObservationSpace() envs.Space { return p.os }

// ActionSpace implements BatchEnv.
func (p *WorkerPool) ActionSpace() envs.Space { return p.as }

// ReportsSuccess implements BatchSuccessReporter.
func (p *WorkerPool) ReportsSuccess() bool { return p.reportsSuccess }

// Succeeded implements BatchSuccessReporter.
func (p *WorkerPool) Succeeded(i int) bool {
	for _, w := range p.workers {
		if i < w.off+w.n {
			return w.conn != nil && w.conn.Succeeded(i-w.off)
		}
	}
	return false
}

// Workers is the number of workers.
func (p *WorkerPool) Workers() int { return len(p.workers) }

// Restarts is how many times a failed worker was started again.
func (p *WorkerPool) Restarts() int { return int(p.restarts.Load()) }

// SetLog sends the pool's notes (a worker restarted) to log instead of
// the process's stderr.
func (p *WorkerPool) SetLog(log func(string)) { p.log = log }

// String names the pool.
func (p *WorkerPool) String() string {
	return fmt.Sprintf("%d env workers (%s)", len(p.workers), p.workers[0].conn)
}

// Reset implements BatchEnv: every worker resets its share at once,
// sub-environment i with seed + i.
func (p *WorkerPool) Reset(seed int64, obs []float32) error {
	p.seed.Store(seed)
	if err := p.drain(); err != nil {
		return err
	}
	for _, w := range p.workers {
		w.reset, w.resetSeed = true, offsetSeed(seed, w.off)
		p.start(w, nil, obs, nil, nil, nil, nil)
	}
	return p.wait(len(p.workers))
}

func offsetSeed(seed int64, off int) int64 {
	if seed == envs.NoSeed {
		return envs.NoSeed
	}
	return seed + int64(off)
}

// Step implements BatchEnv: every worker steps its share at once.
func (p *WorkerPool) Step(actions, obs, finalObs []float32, rewards []float64, terminated, truncated []bool) error {
	if err := p.drain(); err != nil {
		return err
	}
	for _, w := range p.workers {
		w.reset = false
		p.start(w, actions, obs, finalObs, rewards, terminated, truncated)
	}
	return p.wait(len(p.workers))
}

// AsyncBatch implements envs.AsyncBatchEnv: env.args.batch_size, or 0.
func (p *WorkerPool) AsyncBatch() int { return p.batch }

// GroupSize implements envs.AsyncBatchEnv: a worker's share.
func (p *WorkerPool) GroupSize() int { return p.group }

// SendGroup implements envs.AsyncBatchEnv: worker g starts a step.
func (p *WorkerPool) SendGroup(g int, actions, obs, finalObs []float32, rewards []float64, terminated, truncated []bool) error {
	if g < 0 || g >= len(p.workers) || p.group == 0 {
		return fmt.Errorf("no worker %d to step (the pool has %d)", g, len(p.workers))
	}
	w := p.workers[g]
	w.reset = false
	p.sent++
	p.start(w, actions, obs, finalObs, rewards, terminated, truncated)
	return nil
}

// AsyncSteps is the number of asynchronous group steps sent so far.
func (p *WorkerPool) AsyncSteps() int { return p.sent }

// RecvGroup implements envs.AsyncBatchEnv: it waits for a worker's step
// to finish and returns the worker, or −1 when none is under way.
func (p *WorkerPool) RecvGroup() (int, error) {
	if p.underWay == 0 {
		return -1, nil
	}
	w := <-p.done
	p.underWay--
	if w.err != nil {
		return w.idx, w.err
	}
	return w.idx, nil
}

// start sends worker w its job. The worker's own rows of actions are
// copied now; its rows of the other buffers are written when the job ends.
func (p *WorkerPool) start(w *worker, actions, obs, finalObs []float32, rewards []float64, term, trunc []bool) {
	d, a := p.os.Dim, p.as.Size()
	lo, hi := w.off, w.off+w.n
	w.obs = obs[lo*d : hi*d]
	if !w.reset {
		w.actions = append(w.actions[:0], actions[lo*a:hi*a]...)
		w.finalObs, w.rewards, w.term, w.trunc = finalObs[lo*d:hi*d], rewards[lo:hi], term[lo:hi], trunc[lo:hi]
	}
	w.err = nil
	p.underWay++
	go func() {
		w.err = w.run()
		p.done <- w
	}()
}

// wait receives k finished jobs and reports the failures of all of them.
func (p *WorkerPool) wait(k int) error {
	var errs []error
	for range k {
		w := <-p.done
		p.underWay--
		if w.err != nil {
			errs = append(errs, w.err)
		}
	}
	return errors.Join(errs...)
}

// drain waits for jobs still under way (an asynchronous rollout that was
// cut short) before a lockstep call.
func (p *WorkerPool) drain() error {
	return p.wait(p.underWay)
}

// run does the worker's job; a failure restarts it when allowed.
func (w *worker) run() error {
	if w.conn == nil {
		return w.wrap(errors.New("the worker is gone (an earlier failure)"))
	}
	if w.reset {
		err := w.conn.Reset(w.resetSeed, w.obs)
		if err == nil {
			return nil
		}
		return w.recover(err, false)
	}
	restart := w.p.o.Pool.RestartWorkers
	if restart {
		w.lastObs = append(w.lastObs[:0], w.obs...)
	}
	err := w.conn.Step(w.actions, w.obs, w.finalObs, w.rewards, w.term, w.trunc)
	if err == nil {
		return nil
	}
	return w.recover(err, true)
}

// recover restarts a failed worker when env.args.restart_workers allows,
// resetting its sub-environments; after a failed step their episodes end
// as truncated (reward 0, the observation the step started from as the
// final one). Otherwise, or when the restart fails, it returns the failure.
func (w *worker) recover(failure error, stepped bool) error {
	p := w.p
	failure = w.wrap(failure)
	if !p.o.Pool.RestartWorkers {
		return failure
	}
	k := p.restarts.Add(1)
	if int(k) > p.o.Pool.MaxRestarts {
		return fmt.Errorf("%w\n(not restarted: the workers have been restarted %d times, env.args.max_restarts)", failure, p.o.Pool.MaxRestarts)
	}
	w.conn.Close()
	conn, err := p.connect(w)
	w.mu.Lock()
	w.conn = conn
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w\nrestarting it failed: %v", failure, err)
	}
	// Fresh seeds for the fresh episodes: sub-environment i gets
	// seed + k·N + i for the k-th restart.
	seed := p.seed.Load()
	if seed != envs.NoSeed {
		seed += int64(k) * int64(p.n)
	}
	if err := conn.Reset(offsetSeed(seed, w.off), w.obs); err != nil {
		return fmt.Errorf("%w\nthe restarted worker failed its reset: %v", failure, err)
	}
	if stepped {
		copy(w.finalObs, w.lastObs)
		clear(w.rewards)
		clear(w.term)
		for i := range w.trunc {
			w.trunc[i] = true
		}
	}
	p.log(fmt.Sprintf("warning: %v\nrestarted it (restart %d of at most %d, env.args.max_restarts); its sub-environments start new episodes, the ones cut short count as truncated",
		failure, k, p.o.Pool.MaxRestarts))
	return nil
}

// abort drops the worker's connection (killing a subprocess) under a job
// that is under way, which then fails at once.
func (w *worker) abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn != nil {
		w.conn.t.Close()
	}
}

// Close implements BatchEnv: it closes every worker at once and stops
// the servers the pool launched.
func (p *WorkerPool) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	if p.underWay > 0 { // an asynchronous rollout was cut short: end those steps now
		for _, w := range p.workers {
			w.abort()
		}
		p.drain()
	}
	var wg sync.WaitGroup
	for _, w := range p.workers {
		if w.conn == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.conn.Close()
		}()
	}
	wg.Wait()
	if p.launched != nil {
		p.launched.stop()
	}
	return nil
}

// prefixWriter starts every line written through it with a prefix.
type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	midway bool
}

func (pw *prefixWriter) Write(b []byte) (int, error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	var sb strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if !pw.midway {
			sb.WriteString(pw.prefix)
		}
		sb.WriteString(line)
		pw.midway = !strings.HasSuffix(line, "\n")
	}
	pw.w.Write([]byte(sb.String()))
	return len(b), nil
}
