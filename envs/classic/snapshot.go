package classic

import (
	"encoding/json"
	"fmt"
	"github.com/agenttrainer/agenttrainer/internal/nprand"

	"github.com/agenttrainer/agenttrainer/envs"
)

// physicsSnapshot is the saved form of an environment described by a state
// vector and a random stream.
type physicsSnapshot struct {
	State []float64 `json:"state"`
	RNG   []byte    `json:"rng"`
	Extra []int64   `json:"extra,omitempty"`
}

func snapshotPhysics(state []float64, r *nprand.Generator, extra ...int64) ([]byte, error) {
	rb, err := r.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return json.Marshal(physicsSnapshot{State: state, RNG: rb, Extra: extra})
}

func restorePhysics(b []byte, dim, extra int, r *nprand.Generator) (physicsSnapshot, error) {
	var s physicsSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("bad environment snapshot: %v", err)
	}
	if len(s.State) != dim || len(s.Extra) != extra {
		return s, fmt.Errorf("environment snapshot has %d state values and %d counters, want %d and %d", len(s.State), len(s.Extra), dim, extra)
	}
	if err := r.UnmarshalBinary(s.RNG); err != nil {
		return s, fmt.Errorf("bad random-stream snapshot: %v", err)
	}
	return s, nil
}

// restoreStateful restores an environment that is a state vector plus a
// random stream (every classic-control environment).
func restoreStateful(b []byte, s envs.Stateful, r *nprand.Generator) error {
	snap, err := restorePhysics(b, len(s.State()), 0, r)
	if err != nil {
		return err
	}
	s.SetState(snap.State)
	return nil
}
