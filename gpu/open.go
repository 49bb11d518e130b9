//go:build !cuda

package gpu

import "fmt"

// HasCUDA reports whether this binary was built with the cuda tag.
const HasCUDA = false

// Open returns the device a config's trainer.device names, and a sentence
// saying which device was chosen and why. minibatchFLOPs, the work of one
// minibatch's update, matters to "auto" in a cuda build only.
func Open(spec string, threads int, minibatchFLOPs float64) (Device, string, error) {
	switch spec {
	case "", "auto", "cpu":
		d := NewCPU(threads)
		why := "asked for the CPU"
		if spec != "cpu" {
			why = "auto: this binary was built without the cuda tag"
		}
		return d, fmt.Sprintf("%s (%s)", d.Name(), why), nil
	}
	return nil, "", fmt.Errorf("trainer.device=%s: this binary was built without CUDA support; build with `go build -tags cuda` on a machine with the CUDA toolkit (see README), or use trainer.device=cpu", spec)
}
