package envs

import (
	"errors"
	"fmt"
	"io"
)

// BatchEnv is a backend that steps N sub-environments together, such as an
// environment server in another process (remote.RemoteEnv). Buffers are
// caller-owned and laid out sub-environment by sub-environment: obs and
// finalObs N×ObservationSpace().Size(), actions N×ActionSpace().Size()
// (a discrete action is the integer index as a float), one reward and flag
// per sub-environment.
//
// Step auto-resets like Gymnasium's vector environments: obs receives the
// observations to act on next, and for every sub-environment whose episode
// ended (terminated or truncated) finalObs receives the observation it ended
// on; other rows of finalObs are left alone.
type BatchEnv interface {
	NumEnvs() int
	ObservationSpace() Space
	ActionSpace() Space
	// Reset resets sub-environment i with seed+i, or every sub-environment
	// without re-seeding when seed is NoSeed.
	Reset(seed int64, obs []float32) error
	Step(actions, obs, finalObs []float32, rewards []float64, terminated, truncated []bool) error
	Close() error
}

// AsyncBatchEnv is a BatchEnv whose sub-environments step in groups that
// can be under way at once (remote.WorkerPool: one group per worker
// process). Asynchronous stepping (EnvPool's: env.args.batch_size) drives
// it through Vector.SendAsync and Vector.RecvAsync.
type AsyncBatchEnv interface {
	BatchEnv
	// AsyncBatch is the number of sub-environments one asynchronous step
	// takes (a multiple of GroupSize), or 0 when the backend steps all of
	// them in lockstep.
	AsyncBatch() int
	// GroupSize is the number of sub-environments per group: group g holds
	// [g·GroupSize, (g+1)·GroupSize).
	GroupSize() int
	// SendGroup starts group g's step. actions are laid out as Step's
	// (N×ActDim); the group's rows are read before SendGroup returns. The
	// results go to the group's rows of the other buffers, which the
	// caller leaves alone until RecvGroup has returned g.
	SendGroup(g int, actions, obs, finalObs []float32, rewards []float64, terminated, truncated []bool) error
	// RecvGroup waits until a group under way has finished its step and
	// returns it, or −1 when none is under way.
	RecvGroup() (int, error)
}

// BatchSuccessReporter is implemented by batch backends whose episodes can
// succeed or fail: after a Step, Succeeded(i) tells for each sub-environment
// whose episode ended.
type BatchSuccessReporter interface {
	ReportsSuccess() bool
	Succeeded(i int) bool
}

// NewBatchVector wraps a batch backend in a Vector with the usual fields
// (Obs, FinalObs, Rewards, Terminated, Truncated, Finished) and episode
// bookkeeping; its Envs is nil. Vector.Step has no error result, so a
// backend failure is kept and reported by Vector.Err; after one the vector
// does nothing more. Vector.Close closes the backend.
func NewBatchVector(b BatchEnv) (*Vector, error) {
	n := b.NumEnvs()
	if n < 1 {
		return nil, fmt.Errorf("a batch of environments needs at least one sub-environment, got %d", n)
	}
	v := newVector(n, b.ObservationSpace(), b.ActionSpace())
	v.batch, v.batchRew, v.batchTrunc = b, make([]float64, n), make([]bool, n)
	if sr, ok := b.(BatchSuccessReporter); ok && sr.ReportsSuccess() {
		v.batchSR = sr
	}
	if a, ok := b.(AsyncBatchEnv); ok && a.AsyncBatch() > 0 && a.AsyncBatch() < n {
		v.async = a
		v.asyncActs = make([]float32, n*v.ActDim)
	}
	return v, nil
}

// AsyncBatch is the number of sub-environments each asynchronous step
// takes (env.args.batch_size of a pool of remote workers), or 0 when the
// vector steps all of them in lockstep with Step.
func (v *Vector) AsyncBatch() int {
	if v.async == nil {
		return 0
	}
	return v.async.AsyncBatch()
}

// AsyncGroupSize is the number of sub-environments that step together
// (a worker's share); SendAsync takes whole groups.
func (v *Vector) AsyncGroupSize() int {
	if v.async == nil {
		return 0
	}
	return v.async.GroupSize()
}

// SendAsync starts a step of the sub-environments ids, which are whole
// groups (ids[j…j+AsyncGroupSize()) the consecutive sub-environments of
// one group), none of them under way: actions row j (ActDim values) is
// for sub-environment ids[j]. Their rows of Obs, FinalObs, Rewards,
// Terminated and Truncated belong to the backend until RecvAsync returns
// them; a failure is kept for Err.
func (v *Vector) SendAsync(ids []int, actions []float32) {
	if v.err != nil {
		return
	}
	if v.async == nil {
		v.fail(errors.New("SendAsync on a vector that does not step asynchronously"))
		return
	}
	size, a := v.async.GroupSize(), v.ActDim
	if len(ids)%size != 0 || len(actions) < len(ids)*a {
		v.fail(fmt.Errorf("SendAsync with %d sub-environments and %d action values; want whole groups of %d and %d values each", len(ids), len(actions), size, a))
		return
	}
	for j := 0; j < len(ids); j += size {
		g := ids[j] / size
		for k := range size {
			if ids[j+k] != g*size+k {
				v.fail(fmt.Errorf("SendAsync: sub-environments %v are not whole groups of %d in order", ids, size))
				return
			}
		}
		copy(v.asyncActs[g*size*a:(g+1)*size*a], actions[j*a:(j+size)*a])
		if err := v.async.SendGroup(g, v.asyncActs, v.Obs, v.FinalObs, v.batchRew, v.Terminated, v.batchTrunc); err != nil {
			v.fail(err)
			return
		}
	}
}

// RecvAsync waits until one group sent by SendAsync has finished its step
// and returns its sub-environments, whose rows of Obs, FinalObs, Rewards,
// Terminated and Truncated now hold the step's results; Finished holds the
// episodes that ended among them. It returns nil when no group is under
// way, or on a failure (then Err says what).
func (v *Vector) RecvAsync() []int {
	v.Finished = v.Finished[:0]
	if v.async == nil || v.err != nil {
		return nil
	}
	g, err := v.async.RecvGroup()
	if err != nil {
		v.fail(err)
		return nil
	}
	if g < 0 {
		return nil
	}
	size := v.async.GroupSize()
	v.asyncIDs = v.asyncIDs[:0]
	for i := g * size; i < (g+1)*size; i++ {
		v.asyncIDs = append(v.asyncIDs, i)
		ep := v.account(i, v.batchRew[i], v.Terminated[i], v.batchTrunc[i])
		if ep != nil && v.batchSR != nil {
			ep.Success, ep.HasSuccess = v.batchSR.Succeeded(i), true
		}
	}
	return v.asyncIDs
}

func (v *Vector) fail(err error) {
	if v.err == nil {
		v.err = err
	}
}

// stepBatch steps every sub-environment with one backend call; the backend
// has already auto-reset the ones whose episode ended.
func (v *Vector) stepBatch(actions []float32) {
	clear(v.Rewards)
	clear(v.Terminated)
	clear(v.Truncated)
	n := v.Len()
	if v.err != nil {
		return
	}
	if len(actions) < n*v.ActDim {
		v.fail(fmt.Errorf("stepped with %d action values; the batch of %d needs %d", len(actions), n, n*v.ActDim))
		return
	}
	if err := v.batch.Step(actions[:n*v.ActDim], v.Obs, v.FinalObs, v.batchRew, v.Terminated, v.batchTrunc); err != nil {
		v.fail(err)
		clear(v.Terminated)
		return
	}
	for i := 0; i < n; i++ {
		ep := v.account(i, v.batchRew[i], v.Terminated[i], v.batchTrunc[i])
		if ep != nil && v.batchSR != nil {
			ep.Success, ep.HasSuccess = v.batchSR.Succeeded(i), true
		}
	}
}

func (v *Vector) resetBatch(seed int64) {
	clear(v.returns)
	clear(v.lengths)
	if v.err != nil {
		return
	}
	if err := v.batch.Reset(seed, v.Obs); err != nil {
		v.fail(err)
	}
}

var errBatchSnapshot = errors.New("remote and batch sub-environments cannot save their state (their server owns it)")

// Err returns the error that stopped a batch-backed vector (a remote
// environment server that crashed, hung or broke the protocol), or nil.
// Vectors of ordinary environments never fail. Check it after every Step
// and Reset.
func (v *Vector) Err() error { return v.err }

// Batch returns the backend of a vector built by NewBatchVector or
// remote.NewRemoteVector (a *remote.RemoteEnv for the latter).
func (v *Vector) Batch() (BatchEnv, bool) { return v.batch, v.batch != nil }

// Close releases what the vector's environments hold: it closes a batch
// backend (stopping a remote environment server) once, and calls Close on
// environments that implement io.Closer. Calling it again does no harm.
func (v *Vector) Close() error {
	if v.batch != nil {
		if v.closed {
			return nil
		}
		v.closed = true
		v.fail(errors.New("the environments were closed"))
		return v.batch.Close()
	}
	var errs []error
	for _, e := range v.Envs {
		if c, ok := e.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
