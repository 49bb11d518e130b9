package classic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenttrainer/agenttrainer/internal/nprand"

	"github.com/agenttrainer/agenttrainer/envs"
)

// goldenLine is one line of a gym-golden-trajectories/v1 file (the format
// is documented in each file's header line).
type goldenLine struct {
	Type       string          `json:"type"`
	EnvID      string          `json:"env_id"`
	Format     string          `json:"format"`
	Episode    int             `json:"episode"`
	ResetSeed  *int64          `json:"reset_seed"`
	T          int             `json:"t"`
	ResetObs   []float64       `json:"reset_obs"`
	ResetState []float64       `json:"reset_state"`
	Obs        []float64       `json:"obs"`
	State      []float64       `json:"state"`
	Action     json.RawMessage `json:"action"`
	Reward     float64         `json:"reward"`
	Terminated bool            `json:"terminated"`
	Truncated  bool            `json:"truncated"`
	NextObs    []float64       `json:"next_obs"`
	NextState  []float64       `json:"next_state"`
}

type goldenEpisode struct {
	start goldenLine
	steps []goldenLine
}

func readGolden(t *testing.T, path string) (envID string, eps []goldenEpisode) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l goldenLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch l.Type {
		case "header":
			if l.Format != "gym-golden-trajectories/v1" {
				t.Fatalf("%s: unknown format %q", path, l.Format)
			}
			envID = l.EnvID
		case "episode":
			eps = append(eps, goldenEpisode{start: l})
		case "step":
			eps[len(eps)-1].steps = append(eps[len(eps)-1].steps, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return envID, eps
}

// goldenAction decodes a recorded action: an integer for discrete spaces, a
// list of floats for boxes.
func goldenAction(raw json.RawMessage) []float32 {
	var list []float64
	if json.Unmarshal(raw, &list) == nil {
		out := make([]float32, len(list))
		for i, v := range list {
			out[i] = float32(v)
		}
		return out
	}
	var x float64
	if err := json.Unmarshal(raw, &x); err != nil {
		panic(fmt.Sprintf("bad action %s", raw))
	}
	return []float32{float32(x)}
}

// ulpsApart counts the float32 values between a and b.
func ulpsApart(a, b float32) int64 {
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	if ia < 0x80000000 != (ib < 0x80000000) {
		return math.MaxInt64
	}
	d := ia - ib
	if d < 0 {
		d = -d
	}
	return d
}

func stateOf(t *testing.T, e envs.Env) envs.Stateful {
	for {
		if s, ok := e.(envs.Stateful); ok {
			return s
		}
		u, ok := e.(interface{ Unwrap() envs.Env })
		if !ok {
			t.Fatalf("%T cannot set its state", e)
		}
		e = u.Unwrap()
	}
}

// TestGymnasiumGolden replays every recorded Gymnasium trajectory in
// testdata/gymnasium: first the seeded reset, whose internal state must be
// reset_state and whose observation reset_obs, both bit for bit (NumPy's
// Generator(PCG64(SeedSequence(reset_seed))) through nprand); then step by
// step from each recorded state, where observations must match to within
// one float32 ulp and rewards and flags exactly; and whole episodes from
// the reset state, within wholeEpisodeULPs.
func TestGymnasiumGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/gymnasium/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no golden files in testdata/gymnasium")
	}
	for _, path := range files {
		envID, eps := readGolden(t, path)
		t.Run(envID, func(t *testing.T) {
			e, err := envs.Make(envID, nil)
			if err != nil {
				t.Fatal(err)
			}
			obs := make([]float32, e.ObservationSpace().Dim)
			allowed, ok := wholeEpisodeULPs[envID]
			if !ok {
				allowed = 1
			}
			var steps, maxDrift int64
			for _, ep := range eps {
				if ep.start.ResetSeed == nil {
					t.Fatalf("episode %d has no reset_seed: every episode of the format starts with reset(seed=reset_seed)", ep.start.Episode)
				}
				e.Reset(*ep.start.ResetSeed, obs)
				st := stateOf(t, e)
				checkReset(t, ep.start, st.State(), obs)
				for _, s := range ep.steps {
					st.SetState(s.State)
					r, term, trunc := e.Step(goldenAction(s.Action), obs)
					where := fmt.Sprintf("episode %d step %d", s.Episode, s.T)
					for i, want := range s.NextObs {
						if u := ulpsApart(obs[i], float32(want)); u > 1 {
							t.Fatalf("%s: obs[%d] = %v, want %v (%d ulp)", where, i, obs[i], float32(want), u)
						}
					}
					if r != s.Reward || term != s.Terminated || trunc != s.Truncated {
						t.Fatalf("%s: got reward %v term %v trunc %v, want %v %v %v",
							where, r, term, trunc, s.Reward, s.Terminated, s.Truncated)
					}
					steps++
				}
				// Whole episode from the reset state.
				e.Reset(*ep.start.ResetSeed, obs)
				st.SetState(ep.start.ResetState)
				for _, s := range ep.steps {
					r, term, trunc := e.Step(goldenAction(s.Action), obs)
					for i, want := range s.NextObs {
						u := ulpsApart(obs[i], float32(want))
						if u > allowed {
							t.Fatalf("episode %d step %d from reset: obs[%d] = %v, want %v (%d ulp, %d allowed)",
								s.Episode, s.T, i, obs[i], float32(want), u, allowed)
						}
						maxDrift = max(maxDrift, u)
					}
					if r != s.Reward || term != s.Terminated || trunc != s.Truncated {
						t.Fatalf("episode %d step %d from reset: got %v %v %v, want %v %v %v",
							s.Episode, s.T, r, term, trunc, s.Reward, s.Terminated, s.Truncated)
					}
				}
			}
			t.Logf("%d episodes, %d steps; largest whole-episode drift %d ulp", len(eps), steps, maxDrift)
		})
	}
}

// wholeEpisodeULPs is how far (in float32 ulps) an observation may drift
// when a whole episode is replayed from its reset state; 1 unless listed.
// Envs whose Gymnasium code calls NumPy's vectorised sin/cos (about an ulp
// off the C library) may need more, and say why here.
var wholeEpisodeULPs = map[string]int64{}

// checkReset compares the state and observation right after reset(seed)
// with the recording, bit for bit.
func checkReset(t *testing.T, ep goldenLine, state []float64, obs []float32) {
	t.Helper()
	if len(state) != len(ep.ResetState) || len(ep.ResetObs) != len(obs) {
		t.Fatalf("episode %d: reset gives %d state values and %d observations, the recording %d and %d",
			ep.Episode, len(state), len(obs), len(ep.ResetState), len(ep.ResetObs))
	}
	for i, want := range ep.ResetState {
		if math.Float64bits(state[i]) != math.Float64bits(want) {
			t.Fatalf("episode %d: after reset(seed=%d) state[%d] = %v, Gymnasium had %v",
				ep.Episode, *ep.ResetSeed, i, state[i], want)
		}
	}
	for i, want := range ep.ResetObs {
		// The recording writes each float32 as the float64 it is exactly.
		if float64(obs[i]) != want {
			t.Fatalf("episode %d: reset(seed=%d) observation[%d] = %v, Gymnasium returned %v",
				ep.Episode, *ep.ResetSeed, i, float64(obs[i]), want)
		}
	}
}

// TestUnseededResetContinuesTheStream: reset(seed) then reset() without a
// seed starts the second episode from the next draws of the same
// Generator(PCG64(SeedSequence(seed))), as Gymnasium's np_random does.
func TestUnseededResetContinuesTheStream(t *testing.T) {
	f32 := func(x float64) float64 { return float64(float32(x)) }
	tests := []struct {
		id string
		// start draws one reset's state from g as the env's Gymnasium code does.
		start func(g *nprand.Generator) []float64
	}{
		{"CartPole-v1", func(g *nprand.Generator) []float64 {
			return []float64{g.Uniform(-0.05, 0.05), g.Uniform(-0.05, 0.05), g.Uniform(-0.05, 0.05), g.Uniform(-0.05, 0.05)}
		}},
		{"Acrobot-v1", func(g *nprand.Generator) []float64 {
			return []float64{f32(g.Uniform(-0.1, 0.1)), f32(g.Uniform(-0.1, 0.1)), f32(g.Uniform(-0.1, 0.1)), f32(g.Uniform(-0.1, 0.1))}
		}},
		{"MountainCar-v0", func(g *nprand.Generator) []float64 { return []float64{g.Uniform(-0.6, -0.4), 0} }},
		{"MountainCarContinuous-v0", func(g *nprand.Generator) []float64 { return []float64{g.Uniform(-0.6, -0.4), 0} }},
		{"Pendulum-v1", func(g *nprand.Generator) []float64 { return []float64{g.Uniform(-math.Pi, math.Pi), g.Uniform(-1, 1)} }},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			e, err := envs.Make(tt.id, nil)
			if err != nil {
				t.Fatal(err)
			}
			obs := make([]float32, e.ObservationSpace().Dim)
			g := nprand.NewGenerator(42)
			e.Reset(42, obs)
			for i, want := range [][]float64{tt.start(g), tt.start(g), tt.start(g)} {
				if i > 0 {
					e.Reset(envs.NoSeed, obs)
				}
				if got := stateOf(t, e).State(); !slices.Equal(got, want) {
					t.Fatalf("reset %d after reset(seed=42): state %v, np_random's next draws give %v", i, got, want)
				}
			}
		})
	}
}
