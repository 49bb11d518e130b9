package envs_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/classic"
	_ "github.com/agenttrainer/agenttrainer/envs/frozenlake" // TestSnapshotRestoreContinuesExactly covers every world that registers here
)

func randomAction(sp envs.Space, r *rand.Rand, out []float32) {
	if sp.Kind == envs.Discrete {
		out[0] = float32(r.IntN(sp.N))
		return
	}
	for i := range out {
		out[i] = float32(r.NormFloat64())
	}
}

// TestSnapshotRestoreContinuesExactly runs every registered environment
// (inside a vector, with auto-reset), saves it, and checks that a fresh
// vector restored from the snapshot produces the same future, resets and
// random draws included.
func TestSnapshotRestoreContinuesExactly(t *testing.T) {
	for _, id := range envs.IDs() {
		t.Run(id, func(t *testing.T) {
			mk := func() *envs.Vector {
				list := make([]envs.Env, 3)
				for i := range list {
					e, err := envs.Make(id, nil)
					if err != nil {
						t.Fatal(err)
					}
					list[i] = e
				}
				v, err := envs.NewVector(list)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			a := mk()
			a.Reset(11)
			r := rand.New(rand.NewPCG(1, 2))
			acts := make([]float32, 3*a.ActDim)
			for i := 0; i < 700; i++ { // long enough for time limits and resets
				randomAction(a.ActionSpace(), r, acts)
				a.Step(acts)
			}
			snap, err := a.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			b := mk()
			if err := b.Restore(snap); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Obs, b.Obs) {
				t.Fatalf("restored observations differ: %v vs %v", a.Obs, b.Obs)
			}
			for i := 0; i < 700; i++ {
				randomAction(a.ActionSpace(), r, acts)
				a.Step(acts)
				b.Step(acts)
				if !slices.Equal(a.Obs, b.Obs) || !slices.Equal(a.Rewards, b.Rewards) || !slices.Equal(a.Finished, b.Finished) {
					t.Fatalf("step %d after restore: %v/%v vs %v/%v", i, a.Obs, a.Finished, b.Obs, b.Finished)
				}
			}
		})
	}
}

func TestRestoreRejectsBadSnapshots(t *testing.T) {
	v, _ := envs.NewVector([]envs.Env{classic.NewCartPole()})
	for _, bad := range []string{"", "{", `{"envs":[]}`, `{"envs":["e30="],"obs":[0,0,0,0],"returns":[0],"lengths":[0]}`} {
		if err := v.Restore([]byte(bad)); err == nil {
			t.Errorf("snapshot %q accepted", bad)
		}
	}
}
