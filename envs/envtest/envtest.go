// Package envtest holds what the tests of environment packages share: the
// golden check of an environment's text picture.
package envtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

// RenderCase is one environment driven to a picture: reset with Seed,
// SetUp (optional) run on it, then Steps steps of one-element Actions,
// cycled.
type RenderCase struct {
	ID      string
	Seed    int64
	SetUp   func(t *testing.T, e envs.Env)
	Actions []float32
	Steps   int
}

// CheckRender compares the picture of c's environment with
// testdata/render/<ID>.txt, or rewrites that file when update is set (the
// calling package's -update flag). The picture must be deterministic and
// small; the episode must not end on the way.
func CheckRender(t *testing.T, c RenderCase, update bool) {
	t.Helper()
	e, err := envs.Make(c.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := e.(envs.Renderer)
	if !ok {
		t.Fatalf("%T does not render", e)
	}
	obs := make([]float32, e.ObservationSpace().Dim)
	e.Reset(c.Seed, obs)
	if c.SetUp != nil {
		c.SetUp(t, e)
	}
	for i := 0; i < c.Steps; i++ {
		if _, term, trunc := e.Step(c.Actions[i%len(c.Actions):][:1], obs); term || trunc {
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
	path := filepath.Join("testdata", "render", c.ID+".txt")
	if update {
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
