//go:build cuda

package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// HasCUDA reports whether this binary was built with the cuda tag.
const HasCUDA = true

// Open returns the device a config's trainer.device names, and a sentence
// saying which device was chosen and why. "auto" takes GPU 0 when a
// minibatch's update is work enough for it (minibatchFLOPs, AutoKeepsCPU),
// the driver answers and the kernels load, and otherwise the CPU, saying
// why.
func Open(spec string, threads int, minibatchFLOPs float64) (Device, string, error) {
	switch {
	case spec == "cpu":
		d := NewCPU(threads)
		return d, fmt.Sprintf("%s (asked for the CPU)", d.Name()), nil
	case spec == "" || spec == "auto":
		if keep, why := AutoKeepsCPU(minibatchFLOPs); keep {
			d := NewCPU(threads)
			return d, fmt.Sprintf("%s (%s)", d.Name(), why), nil
		}
		g, err := OpenCUDA(0)
		if err == nil {
			return g, fmt.Sprintf("%s (auto: GPU 0 answered)", g.Name()), nil
		}
		d := NewCPU(threads)
		return d, fmt.Sprintf("%s (auto: no usable GPU: %v)", d.Name(), err), nil
	case spec == "cuda" || strings.HasPrefix(spec, "cuda:"):
		n := 0
		if s, ok := strings.CutPrefix(spec, "cuda:"); ok {
			var err error
			if n, err = strconv.Atoi(s); err != nil || n < 0 {
				return nil, "", fmt.Errorf("%q: want cuda:N with N a GPU number (0, 1, …)", spec)
			}
		}
		g, err := OpenCUDA(n)
		if err != nil {
			return nil, "", fmt.Errorf("%s is not usable: %v (trainer.device=cpu or auto trains on the CPU)", spec, err)
		}
		return g, fmt.Sprintf("%s (asked for %s)", g.Name(), spec), nil
	}
	return nil, "", fmt.Errorf(`unknown device %q (choose "auto", "cpu", "cuda" or "cuda:N")`, spec)
}
