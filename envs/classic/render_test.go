package classic

import (
	"flag"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/envtest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestRenderGolden drives each environment from a fixed seed (or state)
// through a fixed run of actions and compares its picture with
// testdata/render/<ID>.txt (go test ./envs/classic -run RenderGolden -update
// rewrites them).
func TestRenderGolden(t *testing.T) {
	setState := func(s []float64) func(*testing.T, envs.Env) {
		return func(t *testing.T, e envs.Env) { stateOf(t, e).SetState(s) }
	}
	for _, c := range []envtest.RenderCase{
		{ID: "Acrobot-v1", Seed: 3, SetUp: setState([]float64{1.5, 0.6, 0.5, -0.5}), Actions: []float32{2}, Steps: 2},
		{ID: "CartPole-v1", Seed: 3, Actions: []float32{1, 0}, Steps: 12},
		{ID: "MountainCar-v0", Seed: 3, Actions: []float32{2}, Steps: 60},
		{ID: "MountainCarContinuous-v0", Seed: 3, Actions: []float32{-1}, Steps: 40},
		{ID: "Pendulum-v1", Seed: 3, Actions: []float32{1.5}, Steps: 15},
	} {
		t.Run(c.ID, func(t *testing.T) { envtest.CheckRender(t, c, *update) })
	}
}
