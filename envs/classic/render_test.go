package classic

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestRenderGolden drives each environment from a fixed seed (or state)
// through a fixed run of actions and compares its picture with
// testdata/render/<ID>.txt (go test ./envs/classic -run RenderGolden -update
// rewrites them).
func TestRenderGolden(t *testing.T) {
	cases := []struct {
		id      string
		state   []float64 // set after the reset, unless nil
		actions []float32 // cycled through
		steps   int
	}{
		{"Acrobot-v1", []float64{1.5, 0.6, 0.5, -0.5}, []float32{2}, 2},
		{"CartPole-v1", nil, []float32{1, 0}, 12},
		{"MountainCar-v0", nil, []float32{2}, 60},
		{"MountainCarContinuous-v0", nil, []float32{-1}, 40},
		{"Pendulum-v1", nil, []float32{1.5}, 15},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			e, err := envs.Make(c.id, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := e.(envs.Renderer)
			if !ok {
				t.Fatalf("%T does not render", e)
			}
			obs := make([]float32, e.ObservationSpace().Dim)
			e.Reset(3, obs)
			if c.state != nil {
				stateOf(t, e).SetState(c.state)
			}
			for i := 0; i < c.steps; i++ {
				if _, term, trunc := e.Step(c.actions[i%len(c.actions):][:1], obs); term || trunc {
					t.Fatalf("episode ended at step %d; pick a shorter run", i)
				}
			}
			got := r.Render()
			if got != r.Render() {
				t.Fatal("Render is not deterministic")
			}
			if n := strings.Count(got, "\n") + 1; n > 15 {
				t.Errorf("picture has %d lines; keep it small", n)
			}
			path := filepath.Join("testdata", "render", c.id+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Render() =\n%s\nwant\n%s", got, want)
			}
		})
	}
}
