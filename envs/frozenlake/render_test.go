package frozenlake

import (
	"flag"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs/envtest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestRenderGolden drives FrozenLake from a fixed seed through a fixed run
// of actions and compares its picture with testdata/render/FrozenLake-v1.txt
// (go test ./envs/frozenlake -run RenderGolden -update rewrites it).
func TestRenderGolden(t *testing.T) {
	envtest.CheckRender(t, envtest.RenderCase{ID: "FrozenLake-v1", Seed: 3, Actions: []float32{3, 2, 2, 3}, Steps: 4}, *update)
}
