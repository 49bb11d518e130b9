package frozenlake

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestRenderGolden drives FrozenLake from a fixed seed through a fixed run
// of actions and compares its picture with testdata/render/FrozenLake-v1.txt
// (go test ./envs/frozenlake -run RenderGolden -update rewrites it).
func TestRenderGolden(t *testing.T) {
	const id, steps = "FrozenLake-v1", 4
	actions := []float32{3, 2, 2, 3} // cycled through
	e, err := envs.Make(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := e.(envs.Renderer)
	if !ok {
		t.Fatalf("%T does not render", e)
	}
	obs := make([]float32, e.ObservationSpace().Dim)
	e.Reset(3, obs)
	for i := 0; i < steps; i++ {
		if _, term, trunc := e.Step(actions[i%len(actions):][:1], obs); term || trunc {
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
	path := filepath.Join("testdata", "render", id+".txt")
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
}
