package envs

import (
	"errors"
	"fmt"
	"io"
)

// BatchEnv is a backend that steps N sub-environments together, such as an
// environment server in another process (RemoteEnv). Buffers are
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
// bookkeeping. Vector.Step has no error result, so a backend failure is kept
// and reported by Vector.Err; after one the vector does nothing more.
// Vector.Close closes the backend.
//
// The vector's Envs are N slots that forward to the backend: the Step of
// slot 0 steps all sub-environments, and slots must be used in order,
// through the Vector only (Step, Reset; Replace and per-slot resets fail).
func NewBatchVector(b BatchEnv) (*Vector, error) {
	n := b.NumEnvs()
	if n < 1 {
		return nil, fmt.Errorf("a batch of environments needs at least one sub-environment, got %d", n)
	}
	os, as := b.ObservationSpace(), b.ActionSpace()
	st := &batchState{b: b, n: n, od: os.Size(), ad: as.Size(), os: os, as: as}
	st.obs, st.finalObs = make([]float32, n*st.od), make([]float32, n*st.od)
	st.rewards = make([]float64, n)
	st.term, st.trunc, st.pending = make([]bool, n), make([]bool, n), make([]bool, n)
	sr, ok := b.(BatchSuccessReporter)
	list := make([]Env, n)
	for i := range list {
		s := &batchSlot{st: st, i: i}
		if ok && sr.ReportsSuccess() {
			list[i] = &batchSuccessSlot{s, sr}
		} else {
			list[i] = s
		}
	}
	return NewVector(list)
}

// batchState is what the slots of one batch share.
type batchState struct {
	b      BatchEnv
	n      int
	od, ad int
	os, as Space

	obs, finalObs []float32
	rewards       []float64
	term, trunc   []bool
	pending       []bool // episode ended on this step; the vector's auto-reset is next

	mode   int // modeIdle, modeStep, modeReset
	next   int // the slot expected next in this round
	err    error
	closed bool
}

const (
	modeIdle = iota
	modeStep
	modeReset
)

func (st *batchState) fail(err error) {
	if st.err == nil {
		st.err = err
	}
}

func (st *batchState) beginStep(action []float32) {
	st.mode, st.next = modeStep, 0
	clear(st.pending)
	clear(st.term)
	clear(st.trunc)
	clear(st.rewards)
	if st.err != nil {
		return
	}
	// The vector hands slot 0 the first action; the rest of the N actions
	// follow it in the same array.
	all := action[:cap(action)]
	if len(action) != st.ad || len(all) < st.n*st.ad {
		st.fail(fmt.Errorf("batch slot 0 was stepped with %d of %d actions: batch slots only work inside the Vector NewBatchVector built", len(all), st.n*st.ad))
		return
	}
	if err := st.b.Step(all[:st.n*st.ad], st.obs, st.finalObs, st.rewards, st.term, st.trunc); err != nil {
		st.fail(err)
		clear(st.term)
		clear(st.trunc)
		clear(st.rewards)
	}
}

func (st *batchState) beginReset(seed int64) {
	st.mode, st.next = modeReset, 0
	clear(st.pending)
	if st.err != nil {
		return
	}
	if err := st.b.Reset(seed, st.obs); err != nil {
		st.fail(err)
	}
}

func (st *batchState) row(b []float32, i int) []float32 { return b[i*st.od : (i+1)*st.od] }

// batchSlot is sub-environment i of a batch, seen as an Env by the Vector.
type batchSlot struct {
	st *batchState
	i  int
}

func (s *batchSlot) ObservationSpace() Space { return s.st.os }
func (s *batchSlot) ActionSpace() Space      { return s.st.as }

// Step implements Env; slot 0 steps the whole batch.
func (s *batchSlot) Step(action, obs []float32) (float64, bool, bool) {
	st := s.st
	if s.i == 0 {
		st.beginStep(action)
	} else if st.mode != modeStep || st.next != s.i {
		st.fail(fmt.Errorf("batch slot %d was stepped out of order: batch slots only work inside the Vector NewBatchVector built", s.i))
	}
	st.next = s.i + 1
	if st.err != nil {
		return 0, false, false
	}
	term, trunc := st.term[s.i], st.trunc[s.i]
	if term || trunc {
		copy(obs, st.row(st.finalObs, s.i))
		st.pending[s.i] = true
	} else {
		copy(obs, st.row(st.obs, s.i))
	}
	return st.rewards[s.i], term, trunc
}

// Reset implements Env: right after an episode ended it hands over the
// observation the backend auto-reset to; otherwise slot 0 resets the whole
// batch and the other slots take their part of it.
func (s *batchSlot) Reset(seed int64, obs []float32) {
	st := s.st
	if st.pending[s.i] {
		st.pending[s.i] = false
		copy(obs, st.row(st.obs, s.i))
		return
	}
	if s.i == 0 {
		st.beginReset(seed)
	} else if st.mode != modeReset || st.next != s.i {
		st.fail(fmt.Errorf("batch slot %d was reset on its own: the sub-environments of a batch are reset together by Vector.Reset", s.i))
	}
	st.next = s.i + 1
	if st.err == nil {
		copy(obs, st.row(st.obs, s.i))
	}
}

var errBatchSnapshot = errors.New("remote and batch sub-environments cannot save their state (their server owns it)")

// Snapshot implements Snapshotter by saying why it cannot.
func (s *batchSlot) Snapshot() ([]byte, error) { return nil, errBatchSnapshot }

// Restore implements Snapshotter by saying why it cannot.
func (s *batchSlot) Restore([]byte) error { return errBatchSnapshot }

func (s *batchSlot) batch() *batchState { return s.st }

// batchSuccessSlot is a slot of a backend that reports success.
type batchSuccessSlot struct {
	*batchSlot
	sr BatchSuccessReporter
}

// Succeeded implements SuccessReporter.
func (s *batchSuccessSlot) Succeeded() bool { return s.sr.Succeeded(s.i) }

type batchMember interface{ batch() *batchState }

// Err returns the error that stopped a batch-backed vector (a remote
// environment server that crashed, hung or broke the protocol), or nil.
// Vectors of ordinary environments never fail. Check it after every Step
// and Reset.
func (v *Vector) Err() error {
	for _, e := range v.Envs {
		if m, ok := e.(batchMember); ok {
			if err := m.batch().err; err != nil {
				return err
			}
		}
	}
	return nil
}

// Close releases what the vector's environments hold: it closes batch
// backends (stopping a remote environment server) once, and calls Close on
// environments that implement io.Closer. Vectors of ordinary environments
// need no Close; calling it does no harm.
func (v *Vector) Close() error {
	var errs []error
	for _, e := range v.Envs {
		if m, ok := e.(batchMember); ok {
			st := m.batch()
			if st.closed {
				continue
			}
			st.closed = true
			st.fail(errors.New("the environments were closed"))
			if err := st.b.Close(); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if c, ok := e.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
