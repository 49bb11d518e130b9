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
	return v, nil
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
