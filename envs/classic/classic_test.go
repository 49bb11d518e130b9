package classic

import (
	"bufio"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

// classicControlIDs are the Gymnasium classic-control environments.
var classicControlIDs = []string{"Acrobot-v1", "CartPole-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1"}

// resetRanges are Gymnasium's reset distributions, per state variable.
var resetRanges = map[string][][2]float64{
	"Acrobot-v1":               {{-0.1, 0.1}, {-0.1, 0.1}, {-0.1, 0.1}, {-0.1, 0.1}},
	"CartPole-v1":              {{-0.05, 0.05}, {-0.05, 0.05}, {-0.05, 0.05}, {-0.05, 0.05}},
	"MountainCar-v0":           {{-0.6, -0.4}, {0, 0}},
	"MountainCarContinuous-v0": {{-0.6, -0.4}, {0, 0}},
	"Pendulum-v1":              {{-math.Pi, math.Pi}, {-1, 1}},
}

func makeStateful(t *testing.T, id string) (envs.Env, envs.Stateful) {
	t.Helper()
	e, err := envs.Make(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e, stateOf(t, e)
}

// goldenHeader reads the spaces and time limit recorded from Gymnasium.
func goldenHeader(t *testing.T, id string) (h struct {
	MaxEpisodeSteps int `json:"max_episode_steps"`
	Obs             struct {
		Low, High []float64
	} `json:"observation_space"`
	Act struct {
		Type      string
		N         int
		Low, High []float64
	} `json:"action_space"`
}) {
	t.Helper()
	f, err := os.Open("testdata/gymnasium/" + id + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	if !sc.Scan() {
		t.Fatalf("%s: empty golden file", id)
	}
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func float32s(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	return out
}

func TestClassicControlSpacesMatchGymnasium(t *testing.T) {
	for _, id := range classicControlIDs {
		t.Run(id, func(t *testing.T) {
			h := goldenHeader(t, id)
			spec, _ := envs.Lookup(id)
			if spec.MaxEpisodeSteps != h.MaxEpisodeSteps {
				t.Errorf("MaxEpisodeSteps = %d, Gymnasium's is %d", spec.MaxEpisodeSteps, h.MaxEpisodeSteps)
			}
			e, _ := envs.Make(id, nil)
			os, as := e.ObservationSpace(), e.ActionSpace()
			if os.Kind != envs.Box || os.Dim != len(h.Obs.Low) ||
				!slices.Equal(os.Low, float32s(h.Obs.Low)) || !slices.Equal(os.High, float32s(h.Obs.High)) {
				t.Errorf("observation space %v %v…%v, Gymnasium's is %v…%v", os, os.Low, os.High, h.Obs.Low, h.Obs.High)
			}
			switch h.Act.Type {
			case "Discrete":
				if as.Kind != envs.Discrete || as.N != h.Act.N {
					t.Errorf("action space %v, Gymnasium's is Discrete(%d)", as, h.Act.N)
				}
			default:
				if as.Kind != envs.Box || as.Dim != len(h.Act.Low) ||
					!slices.Equal(as.Low, float32s(h.Act.Low)) || !slices.Equal(as.High, float32s(h.Act.High)) {
					t.Errorf("action space %v %v…%v, Gymnasium's is %v…%v", as, as.Low, as.High, h.Act.Low, h.Act.High)
				}
			}
		})
	}
}

func TestClassicControlSeeding(t *testing.T) {
	for _, id := range classicControlIDs {
		t.Run(id, func(t *testing.T) {
			e1, s1 := makeStateful(t, id)
			e2, s2 := makeStateful(t, id)
			n := e1.ObservationSpace().Dim
			a, b := make([]float32, n), make([]float32, n)
			e1.Reset(42, a)
			e2.Reset(42, b)
			if !slices.Equal(a, b) || !slices.Equal(s1.State(), s2.State()) {
				t.Fatalf("same seed, different resets: %v vs %v", s1.State(), s2.State())
			}
			first := slices.Clone(s1.State())
			e2.Reset(43, b)
			if slices.Equal(first, s2.State()) {
				t.Fatal("different seeds gave the same reset")
			}
			e1.Reset(envs.NoSeed, a) // goes on with seed 42's stream
			if slices.Equal(first, s1.State()) {
				t.Fatal("an unseeded reset repeated the seeded one")
			}
			e2.Reset(42, b)
			e2.Reset(envs.NoSeed, b)
			if !slices.Equal(s1.State(), s2.State()) {
				t.Fatal("unseeded resets after the same seed differ")
			}
		})
	}
}

// TestClassicControlResetRanges draws many resets: every state variable
// stays in Gymnasium's range (Acrobot's float32 rounding may land on the
// float32 nearest the bound) and the draws spread over the range.
func TestClassicControlResetRanges(t *testing.T) {
	for _, id := range classicControlIDs {
		t.Run(id, func(t *testing.T) {
			e, st := makeStateful(t, id)
			obs := make([]float32, e.ObservationSpace().Dim)
			ranges := resetRanges[id]
			lo, hi := make([]float64, len(ranges)), make([]float64, len(ranges))
			for i := range lo {
				lo[i], hi[i] = math.Inf(1), math.Inf(-1)
			}
			for seed := int64(0); seed < 2000; seed++ {
				e.Reset(seed, obs)
				for i, x := range st.State() {
					r := ranges[i]
					if x < float64(float32(r[0])) || x > float64(float32(r[1])) {
						t.Fatalf("seed %d: state[%d] = %v outside [%v, %v]", seed, i, x, r[0], r[1])
					}
					lo[i], hi[i] = min(lo[i], x), max(hi[i], x)
				}
				if os := e.ObservationSpace(); !inBox(obs, os) {
					t.Fatalf("seed %d: reset observation %v outside %v…%v", seed, obs, os.Low, os.High)
				}
			}
			for i, r := range ranges {
				if w := r[1] - r[0]; lo[i] > r[0]+0.01*w || hi[i] < r[1]-0.01*w {
					t.Errorf("state[%d] drawn over [%v, %v], want it to fill [%v, %v]", i, lo[i], hi[i], r[0], r[1])
				}
			}
		})
	}
}

func inBox(x []float32, s envs.Space) bool {
	for i, v := range x {
		if !(v >= s.Low[i] && v <= s.High[i]) {
			return false
		}
	}
	return true
}

// stepFrom sets state s, applies action once and returns the outcome.
func stepFrom(e envs.Env, st envs.Stateful, s []float64, action float32) (next []float64, obs []float32, r float64, term bool) {
	obs = make([]float32, e.ObservationSpace().Dim)
	st.SetState(s)
	r, term, _ = e.Step([]float32{action}, obs)
	return slices.Clone(st.State()), obs, r, term
}

// TestContinuousActionClipping: actions beyond the box act like its bound
// (Gymnasium clips them); MountainCarContinuous still charges the action as
// given, Pendulum the clipped torque; NaN acts as 0 and pays nothing.
func TestContinuousActionClipping(t *testing.T) {
	cases := []struct {
		id    string
		state []float64
		// reward for the action a outside the box, given the reward at its bound
		reward func(a float32, atBound float64) float64
	}{
		{"MountainCarContinuous-v0", []float64{-0.5, 0.01},
			func(a float32, atBound float64) float64 {
				b := max(-1, min(1, float64(a)))
				return atBound + 0.1*b*b - 0.1*float64(a)*float64(a)
			}},
		{"Pendulum-v1", []float64{2.5, -3}, func(_ float32, atBound float64) float64 { return atBound }},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			e, st := makeStateful(t, c.id)
			as := e.ActionSpace()
			for _, a := range []float32{as.High[0] * 1.5, as.High[0] + 100, as.Low[0] * 1.5, float32(math.Inf(-1))} {
				bound := max(as.Low[0], min(as.High[0], a))
				want, wantObs, wantR, _ := stepFrom(e, st, c.state, bound)
				got, gotObs, gotR, _ := stepFrom(e, st, c.state, a)
				if !slices.Equal(got, want) || !slices.Equal(gotObs, wantObs) {
					t.Errorf("action %v: state %v, want %v as for %v", a, got, want, bound)
				}
				if w := c.reward(a, wantR); math.Abs(gotR-w) > 1e-9*max(1, math.Abs(w)) && !(math.IsInf(w, -1) && math.IsInf(gotR, -1)) {
					t.Errorf("action %v: reward %v, want %v", a, gotR, w)
				}
			}
			want, _, wantR, _ := stepFrom(e, st, c.state, 0)
			got, obs, r, _ := stepFrom(e, st, c.state, float32(math.NaN()))
			if !slices.Equal(got, want) || r != wantR || slices.ContainsFunc(obs, func(x float32) bool { return x != x }) {
				t.Errorf("NaN action: state %v reward %v obs %v, want state %v reward %v as for 0", got, r, obs, want, wantR)
			}
		})
	}
}

// TestDiscreteActionClamping: an index outside the space does not crash;
// it is rounded and clamped, and NaN picks action 0. (CartPole-v1 reads
// anything but exactly 1 as 0.)
func TestDiscreteActionClamping(t *testing.T) {
	cases := []struct {
		id    string
		state []float64
	}{
		{"Acrobot-v1", []float64{0.3, -0.2, 0.5, -1}},
		{"MountainCar-v0", []float64{-0.5, 0.01}},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			e, st := makeStateful(t, c.id)
			last := float32(e.ActionSpace().N - 1)
			for _, p := range [][2]float32{{-3, 0}, {float32(math.NaN()), 0}, {last + 5, last}, {0.6, 1}, {last - 0.2, last}} {
				got, _, _, _ := stepFrom(e, st, c.state, p[0])
				want, _, _, _ := stepFrom(e, st, c.state, p[1])
				if !slices.Equal(got, want) {
					t.Errorf("action %v: state %v, want %v as for action %v", p[0], got, want, p[1])
				}
			}
		})
	}
}

// TestClassicControlTimeLimit runs episodes that cannot end on their own
// (no force from rest) into the registered time limit.
func TestClassicControlTimeLimit(t *testing.T) {
	idle := map[string]float32{"Acrobot-v1": 1, "MountainCar-v0": 1, "MountainCarContinuous-v0": 0, "Pendulum-v1": 0}
	for id, a := range idle {
		t.Run(id, func(t *testing.T) {
			e, _ := envs.Make(id, nil)
			spec, _ := envs.Lookup(id)
			obs := make([]float32, e.ObservationSpace().Dim)
			e.Reset(7, obs)
			for step := 1; ; step++ {
				_, term, trunc := e.Step([]float32{a}, obs)
				if term {
					t.Fatalf("terminated at step %d", step)
				}
				if trunc {
					if step != spec.MaxEpisodeSteps {
						t.Fatalf("truncated at step %d, want %d", step, spec.MaxEpisodeSteps)
					}
					return
				}
				if step > spec.MaxEpisodeSteps {
					t.Fatal("never truncated")
				}
			}
		})
	}
}

// TestClassicControlSurvivesBadStates: states no episode reaches (set from
// outside) must not crash or hang Step or Render.
func TestClassicControlSurvivesBadStates(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, id := range classicControlIDs {
		e, st := makeStateful(t, id)
		obs := make([]float32, e.ObservationSpace().Dim)
		act := make([]float32, e.ActionSpace().Size())
		for _, v := range []float64{nan, inf, -inf, 1e300, -1e17} {
			s := slices.Repeat([]float64{v}, len(st.State()))
			st.SetState(s)
			e.Step(act, obs)
			e.(envs.Renderer).Render()
		}
	}
}

// TestStepDoesNotAllocate keeps the training hot path free of garbage.
func TestStepDoesNotAllocate(t *testing.T) {
	for _, id := range classicControlIDs {
		e, _ := envs.Make(id, nil)
		obs := make([]float32, e.ObservationSpace().Dim)
		act := make([]float32, e.ActionSpace().Size())
		act[0] = 1
		e.Reset(1, obs)
		allocs := testing.AllocsPerRun(200, func() {
			if _, term, trunc := e.Step(act, obs); term || trunc {
				e.Reset(envs.NoSeed, obs)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: Step allocates %v times", id, allocs)
		}
	}
}

// The classic-control environments read no arguments: any env.args key is
// refused (a misspelt key would otherwise change nothing, silently).
func TestClassicControlRefusesArguments(t *testing.T) {
	for _, id := range []string{"CartPole-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1"} {
		if _, err := envs.Make(id, nil); err != nil {
			t.Fatalf("%s without args: %v", id, err)
		}
		_, err := envs.Make(id, envs.Params{"gravity": 9.8})
		var argsErr *envs.ArgsError
		if !errors.As(err, &argsErr) || !strings.Contains(err.Error(), id+`: unknown argument "gravity" (it takes no arguments)`) {
			t.Errorf("%s with gravity: %v", id, err)
		}
	}
}
