package envs_test

import (
	"slices"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/classic"
)

// fixedEnv ends its episodes after a fixed number of steps, terminating or
// truncating, and pays reward = step index so returns are easy to predict.
type fixedEnv struct {
	steps, t int
	truncate bool
}

func (f *fixedEnv) ObservationSpace() envs.Space { return envs.Space{Kind: envs.Box, Dim: 1} }
func (f *fixedEnv) ActionSpace() envs.Space      { return envs.Space{Kind: envs.Discrete, N: 2} }
func (f *fixedEnv) Reset(_ int64, obs []float32) {
	f.t = 0
	obs[0] = 0
}
func (f *fixedEnv) Step(_, obs []float32) (float64, bool, bool) {
	f.t++
	obs[0] = float32(f.t)
	done := f.t == f.steps
	return float64(f.t), done && !f.truncate, done && f.truncate
}

func TestVectorAutoResetAndEpisodes(t *testing.T) {
	v, err := envs.NewVector([]envs.Env{&fixedEnv{steps: 2}, &fixedEnv{steps: 3, truncate: true}})
	if err != nil {
		t.Fatal(err)
	}
	v.Reset(7)
	act := []float32{0, 0}
	type want struct {
		finished  []envs.Episode
		obs       []float32
		finalObs0 float32
	}
	steps := []want{
		{nil, []float32{1, 1}, 0},
		{[]envs.Episode{{Env: 0, Return: 3, Length: 2}}, []float32{0, 2}, 2},
		{[]envs.Episode{{Env: 1, Return: 6, Length: 3, Truncated: true}}, []float32{1, 0}, 2},
	}
	for i, w := range steps {
		v.Step(act)
		if !slices.Equal(v.Finished, w.finished) && !(len(v.Finished) == 0 && len(w.finished) == 0) {
			t.Fatalf("step %d: finished %+v, want %+v", i, v.Finished, w.finished)
		}
		if !slices.Equal(v.Obs, w.obs) {
			t.Fatalf("step %d: obs %v, want %v (reset observation after an episode ends)", i, v.Obs, w.obs)
		}
		if v.FinalObs[0] != w.finalObs0 {
			t.Fatalf("step %d: final obs of env 0 = %v, want %v", i, v.FinalObs[0], w.finalObs0)
		}
	}
	if !v.Truncated[1] || v.Terminated[1] || !v.Done(1) {
		t.Fatalf("env 1 should report truncation only: term=%v trunc=%v", v.Terminated[1], v.Truncated[1])
	}
	if v.FinalObs[1] != 3 {
		t.Fatalf("final observation of the truncated episode = %v, want 3", v.FinalObs[1])
	}
}

func TestVectorRejectsMismatchedSpaces(t *testing.T) {
	if _, err := envs.NewVector(nil); err == nil {
		t.Fatal("empty vector accepted")
	}
	if _, err := envs.NewVector([]envs.Env{classic.NewCartPole(), &fixedEnv{steps: 1}}); err == nil {
		t.Fatal("mismatched spaces accepted")
	}
}

func TestCartPoleSeeding(t *testing.T) {
	a, b := make([]float32, 4), make([]float32, 4)
	e1, _ := envs.Make("CartPole-v1", nil)
	e2, _ := envs.Make("CartPole-v1", nil)
	e1.Reset(42, a)
	e2.Reset(42, b)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different resets: %v vs %v", a, b)
	}
	e2.Reset(43, b)
	if slices.Equal(a, b) {
		t.Fatal("different seeds gave the same reset")
	}
	for _, x := range a {
		if x < -0.05 || x > 0.05 {
			t.Fatalf("reset state %v outside ±0.05", a)
		}
	}
}
