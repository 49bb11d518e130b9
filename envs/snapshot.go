package envs

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// Snapshotter is implemented by environments whose whole state (physics,
// random stream, counters) can be saved and restored, so that a resumed
// training continues exactly where the checkpoint left it.
type Snapshotter interface {
	Snapshot() ([]byte, error)
	Restore([]byte) error
}

// PCGRand is a random stream that can be saved: math/rand/v2's Rand does
// not expose its source, so the source is kept beside it. Worlds with no
// Python original to follow (FrozenLake's slips) draw from it so that their
// snapshots hold their random streams; worlds that reproduce Python draw
// from NumPy's streams (internal/nprand) instead.
type PCGRand struct {
	*rand.Rand
	src *rand.PCG
}

// NewPCGRand returns a stream seeded with seed.
func NewPCGRand(seed int64) PCGRand {
	src := rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)
	return PCGRand{rand.New(src), src}
}

// MarshalBinary saves the stream's state.
func (r PCGRand) MarshalBinary() ([]byte, error) { return r.src.MarshalBinary() }

// UnmarshalBinary restores a state saved by MarshalBinary.
func (r PCGRand) UnmarshalBinary(b []byte) error { return r.src.UnmarshalBinary(b) }

type timeLimitSnapshot struct {
	Elapsed int    `json:"elapsed"`
	Inner   []byte `json:"inner"`
}

// Snapshot implements Snapshotter when the wrapped environment does.
func (t *TimeLimit) Snapshot() ([]byte, error) {
	s, ok := t.Env.(Snapshotter)
	if !ok {
		return nil, fmt.Errorf("%T cannot save its state", t.Env)
	}
	inner, err := s.Snapshot()
	if err != nil {
		return nil, err
	}
	return json.Marshal(timeLimitSnapshot{Elapsed: t.elapsed, Inner: inner})
}

// Restore implements Snapshotter.
func (t *TimeLimit) Restore(b []byte) error {
	s, ok := t.Env.(Snapshotter)
	if !ok {
		return fmt.Errorf("%T cannot restore its state", t.Env)
	}
	var ts timeLimitSnapshot
	if err := json.Unmarshal(b, &ts); err != nil {
		return fmt.Errorf("bad time-limit snapshot: %v", err)
	}
	t.elapsed = ts.Elapsed
	return s.Restore(ts.Inner)
}

type vectorSnapshot struct {
	Envs    [][]byte  `json:"envs"`
	Obs     []float32 `json:"obs"`
	Returns []float64 `json:"returns"`
	Lengths []int     `json:"lengths"`
}

// Snapshot saves every sub-environment, the current observations and the
// running episode returns, or says why it cannot.
func (v *Vector) Snapshot() ([]byte, error) {
	if v.batch != nil {
		return nil, errBatchSnapshot
	}
	s := vectorSnapshot{Obs: v.Obs, Returns: v.returns, Lengths: v.lengths}
	for i, e := range v.Envs {
		sn, ok := e.(Snapshotter)
		if !ok {
			return nil, fmt.Errorf("environment %T cannot save its state", e)
		}
		b, err := sn.Snapshot()
		if err != nil {
			return nil, fmt.Errorf("environment %d: %w", i, err)
		}
		s.Envs = append(s.Envs, b)
	}
	return json.Marshal(s)
}

// Restore loads a snapshot taken by Snapshot of a vector of the same shape.
func (v *Vector) Restore(b []byte) error {
	if v.batch != nil {
		return errBatchSnapshot
	}
	var s vectorSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("bad vector snapshot: %v", err)
	}
	if len(s.Envs) != len(v.Envs) || len(s.Obs) != len(v.Obs) || len(s.Returns) != len(v.returns) || len(s.Lengths) != len(v.lengths) {
		return fmt.Errorf("snapshot of %d environments does not fit %d", len(s.Envs), len(v.Envs))
	}
	for i, e := range v.Envs {
		sn, ok := e.(Snapshotter)
		if !ok {
			return fmt.Errorf("environment %T cannot restore its state", e)
		}
		if err := sn.Restore(s.Envs[i]); err != nil {
			return fmt.Errorf("environment %d: %w", i, err)
		}
	}
	copy(v.Obs, s.Obs)
	copy(v.returns, s.Returns)
	copy(v.lengths, s.Lengths)
	return nil
}
