package envs_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/classic"
)

func randomDiscrete(r *rand.Rand, acts []float32, n int) {
	for i := range acts {
		acts[i] = float32(r.IntN(n))
	}
}

// goBatch is a BatchEnv made of Go environments, to check that a batch
// vector behaves exactly like an ordinary one.
type goBatch struct {
	envs   []envs.Env
	closed int
}

func (g *goBatch) NumEnvs() int                 { return len(g.envs) }
func (g *goBatch) ObservationSpace() envs.Space { return g.envs[0].ObservationSpace() }
func (g *goBatch) ActionSpace() envs.Space      { return g.envs[0].ActionSpace() }
func (g *goBatch) Close() error                 { g.closed++; return nil }
func (g *goBatch) Reset(seed int64, obs []float32) error {
	d := g.ObservationSpace().Size()
	for i, e := range g.envs {
		s := seed + int64(i)
		if seed == envs.NoSeed {
			s = envs.NoSeed
		}
		e.Reset(s, obs[i*d:(i+1)*d])
	}
	return nil
}
func (g *goBatch) Step(actions, obs, finalObs []float32, rewards []float64, term, trunc []bool) error {
	d, a := g.ObservationSpace().Size(), g.ActionSpace().Size()
	for i, e := range g.envs {
		o := obs[i*d : (i+1)*d]
		rewards[i], term[i], trunc[i] = e.Step(actions[i*a:(i+1)*a], o)
		if term[i] || trunc[i] {
			copy(finalObs[i*d:], o)
			e.Reset(envs.NoSeed, o)
		}
	}
	return nil
}

func TestBatchVectorMatchesVector(t *testing.T) {
	for _, id := range []string{"CartPole-v1", "MountainCarContinuous-v0", "Acrobot-v1"} {
		t.Run(id, func(t *testing.T) {
			mk := func() []envs.Env {
				list := make([]envs.Env, 5)
				for i := range list {
					e, err := envs.Make(id, nil)
					if err != nil {
						t.Fatal(err)
					}
					list[i] = e
				}
				return list
			}
			want, err := envs.NewVector(mk())
			if err != nil {
				t.Fatal(err)
			}
			gb := &goBatch{envs: mk()}
			got, err := envs.NewBatchVector(gb)
			if err != nil {
				t.Fatal(err)
			}
			want.Reset(9)
			got.Reset(9)
			r := rand.New(rand.NewPCG(5, 6))
			acts := make([]float32, 5*want.ActDim)
			// Rollout buffers hand the vector a window of a larger slice.
			big := make([]float32, 3*len(acts))
			for step := 0; step < 1200; step++ {
				if sp := want.ActionSpace(); sp.Kind == envs.Discrete {
					randomDiscrete(r, acts, sp.N)
				} else {
					randomAction(sp, r, acts)
				}
				win := big[len(acts) : 2*len(acts)]
				copy(win, acts)
				want.Step(acts)
				got.Step(win)
				if err := got.Err(); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Obs, want.Obs) || !slices.Equal(got.Rewards, want.Rewards) ||
					!slices.Equal(got.Terminated, want.Terminated) || !slices.Equal(got.Truncated, want.Truncated) ||
					!slices.Equal(got.Finished, want.Finished) {
					t.Fatalf("step %d: batch vector differs:\n got  %v %v %v %v %+v\n want %v %v %v %v %+v", step,
						got.Obs, got.Rewards, got.Terminated, got.Truncated, got.Finished,
						want.Obs, want.Rewards, want.Terminated, want.Truncated, want.Finished)
				}
				for i := range 5 {
					if want.Done(i) && !slices.Equal(got.FinalObs[i*want.ObsDim:(i+1)*want.ObsDim], want.FinalObs[i*want.ObsDim:(i+1)*want.ObsDim]) {
						t.Fatalf("step %d: final observation of %d differs", step, i)
					}
				}
			}
			if want.Err() != nil {
				t.Errorf("an ordinary vector reports %v", want.Err())
			}
			if _, err := got.Snapshot(); err == nil || !strings.Contains(err.Error(), "cannot save their state") {
				t.Errorf("snapshot of a batch vector: %v", err)
			}
			got.Close()
			got.Close()
			if gb.closed != 1 {
				t.Errorf("backend closed %d times, want once", gb.closed)
			}
		})
	}
}

func TestBatchVectorMisuse(t *testing.T) {
	v, err := envs.NewBatchVector(&goBatch{envs: []envs.Env{classic.NewCartPole(), classic.NewCartPole()}})
	if err != nil {
		t.Fatal(err)
	}
	v.Reset(1)
	// One sub-environment of a remote batch cannot be swapped or reset alone.
	if err := v.Replace(1, classic.NewCartPole(), 4); err == nil || !strings.Contains(err.Error(), "cannot be replaced one by one") {
		t.Errorf("replacing one slot: %v", err)
	}
	if err := v.Err(); err != nil {
		t.Errorf("a refused replacement broke the vector: %v", err)
	}
	v.Step([]float32{0}) // one action for two sub-environments
	if err := v.Err(); err == nil || !strings.Contains(err.Error(), "stepped with 1 action values; the batch of 2 needs 2") {
		t.Errorf("stepping with too few actions: %v", err)
	}
	if _, err := envs.NewBatchVector(&goBatch{}); err == nil {
		t.Error("an empty batch was accepted")
	}
}
