package envs_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	_ "github.com/agenttrainer/agenttrainer/envs/classic"
	_ "github.com/agenttrainer/agenttrainer/envs/frozenlake"
	_ "github.com/agenttrainer/agenttrainer/envs/minatar" // TestSnapshotRestoreContinuesExactly then covers MinAtar too
)

// makeVector builds n sub-environments of id (with args) through the
// registry, wrapped in their time limits, as the trainer does.
func makeVector(t testing.TB, id string, n int, args envs.Params) *envs.Vector {
	t.Helper()
	list := make([]envs.Env, n)
	for i := range list {
		e, err := envs.Make(id, args)
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

// TestParallelStepSameBits steps built-in worlds one after the other and on
// a pool of goroutines (every step in parallel, forced): observations,
// final observations, rewards, flags and episodes (with success where the
// world reports it) are the same bits over thousands of steps and hundreds
// of auto-resets.
func TestParallelStepSameBits(t *testing.T) {
	for _, c := range []struct {
		id      string
		n       int
		args    envs.Params
		steps   int
		threads int
	}{
		{"MinAtar/Breakout-v1", 16, nil, 1500, 2},
		{"MinAtar/SpaceInvaders-v1", 13, nil, 1000, 3},
		{"CartPole-v1", 32, nil, 3000, 4},
		{"Pendulum-v1", 9, nil, 600, 2},
		{"FrozenLake-v1", 12, envs.Params{"size": int64(4), "p": 0.8, "seed": int64(3), "is_slippery": true}, 2000, 2},
	} {
		seq, par := makeVector(t, c.id, c.n, c.args), makeVector(t, c.id, c.n, c.args)
		par.SetThreads(c.threads)
		if par.Threads() != c.threads {
			t.Fatalf("%s: %d threads, want %d", c.id, par.Threads(), c.threads)
		}
		envs.ForceParallel(par, true)
		seq.Reset(5)
		par.Reset(5)
		rng := rand.New(rand.NewPCG(1, 2))
		acts := make([]float32, c.n*seq.ActDim)
		episodes := 0
		for step := range c.steps {
			as := seq.ActionSpace()
			for i := range acts {
				if as.Kind == envs.Discrete {
					acts[i] = float32(rng.IntN(as.N))
				} else {
					acts[i] = float32(rng.Float64()*4 - 2)
				}
			}
			seq.Step(acts)
			par.Step(acts)
			same := slices.Equal(bitsOf(seq.Obs), bitsOf(par.Obs)) && slices.Equal(bitsOf(seq.Rewards), bitsOf(par.Rewards)) &&
				slices.Equal(seq.Terminated, par.Terminated) && slices.Equal(seq.Truncated, par.Truncated) && slices.Equal(seq.Finished, par.Finished)
			for i := range c.n {
				if seq.Done(i) && !slices.Equal(bitsOf(seq.FinalObs[i*seq.ObsDim:(i+1)*seq.ObsDim]), bitsOf(par.FinalObs[i*seq.ObsDim:(i+1)*seq.ObsDim])) {
					same = false
				}
			}
			if !same {
				t.Fatalf("%s: step %d differs in parallel:\n seq %v %+v\n par %v %+v", c.id, step, seq.Rewards, seq.Finished, par.Rewards, par.Finished)
			}
			episodes += len(seq.Finished)
		}
		if episodes < 2*c.n {
			t.Errorf("%s: only %d episodes ended: the comparison saw too few resets", c.id, episodes)
		}
	}
}

func bitsOf(xs []float32) []uint32 {
	out := make([]uint32, len(xs))
	for i, x := range xs {
		out[i] = math.Float32bits(x)
	}
	return out
}

// TestSetThreads: a vector splits only when every core gets several
// sub-environments.
func TestSetThreads(t *testing.T) {
	for _, c := range []struct{ n, threads, want int }{{4, 2, 1}, {8, 2, 2}, {8, 4, 2}, {64, 16, 16}, {64, 1, 1}} {
		v := makeVector(t, "CartPole-v1", c.n, nil)
		v.SetThreads(c.threads)
		if v.Threads() != c.want {
			t.Errorf("%d envs, SetThreads(%d): %d threads, want %d", c.n, c.threads, v.Threads(), c.want)
		}
	}
}

// BenchmarkVectorStep steps built-in worlds one after the other and with
// the stepping pool on every core (choosing per step as in training).
//
//	go test -run '^$' -bench VectorStep ./envs
func BenchmarkVectorStep(b *testing.B) {
	for _, c := range []struct {
		id string
		n  int
	}{{"CartPole-v1", 4}, {"CartPole-v1", 256}, {"MinAtar/Breakout-v1", 64}, {"MinAtar/Seaquest-v1", 256}} {
		for _, threads := range []int{1, 0} {
			name := c.id + "/" + strconv.Itoa(c.n) + "/seq"
			if threads == 0 {
				name = c.id + "/" + strconv.Itoa(c.n) + "/pool"
			}
			b.Run(name, func(b *testing.B) {
				v := makeVector(b, c.id, c.n, nil)
				v.SetThreads(threads)
				v.Reset(1)
				rng := rand.New(rand.NewPCG(1, 2))
				acts := make([]float32, c.n)
				for b.Loop() {
					for i := range acts {
						acts[i] = float32(rng.IntN(v.ActionSpace().N))
					}
					v.Step(acts)
				}
				b.ReportMetric(float64(c.n*b.N)/b.Elapsed().Seconds(), "steps/s")
			})
		}
	}
}

// scoring is CartPole reporting its episode's length as a figure
// (envs.StatsReporter), read before the automatic reset.
type scoring struct {
	envs.Env
	steps int
}

func (s *scoring) Reset(seed int64, obs []float32) { s.steps = 0; s.Env.Reset(seed, obs) }
func (s *scoring) Step(a, obs []float32) (float64, bool, bool) {
	s.steps++
	return s.Env.Step(a, obs)
}
func (s *scoring) EpisodeStats(report func(string, float64)) { report("len", float64(s.steps)) }

// TestStatsSameOnThePool: what environments report for their episodes is
// what they reported whether the vector stepped them one after the other
// or on its pool, and is their episode's length.
func TestStatsSameOnThePool(t *testing.T) {
	build := func() *envs.Vector {
		list := make([]envs.Env, 8)
		for i := range list {
			e, err := envs.Make("CartPole-v1", nil)
			if err != nil {
				t.Fatal(err)
			}
			list[i] = &scoring{Env: e}
		}
		v, err := envs.NewVector(list)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	seq, par := build(), build()
	par.SetThreads(2)
	envs.ForceParallel(par, true)
	seq.Reset(1)
	par.Reset(1)
	r := rand.New(rand.NewPCG(1, 2))
	acts := make([]float32, 8)
	episodes := 0
	for step := 0; step < 2000; step++ {
		for i := range acts {
			acts[i] = float32(r.IntN(2))
		}
		seq.Step(acts)
		par.Step(acts)
		if len(seq.Finished) != len(par.Finished) {
			t.Fatalf("step %d: %d and %d episodes ended", step, len(seq.Finished), len(par.Finished))
		}
		for _, ep := range seq.Finished {
			a, b := seq.EpisodeStats[ep.Env], par.EpisodeStats[ep.Env]
			if len(a) != 1 || !slices.Equal(a, b) || a[0].Value != float64(ep.Length) {
				t.Fatalf("step %d, env %d: stats %v one after the other, %v on the pool, episode length %d", step, ep.Env, a, b, ep.Length)
			}
			episodes++
		}
	}
	if episodes < 100 {
		t.Fatalf("only %d episodes ended", episodes)
	}
}
