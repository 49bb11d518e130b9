//go:build cuda

package trainer

import (
	"testing"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// TestCUDAObjective holds the CUDA device's fused losses (and the tokens'
// loss through it) to the plain-Go objective, as TestObjective does the
// CPU's.
func TestCUDAObjective(t *testing.T) {
	g, err := gpu.OpenCUDA(0)
	if err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	defer g.Close()
	checkObjective(t, g, 1e-4)
}
