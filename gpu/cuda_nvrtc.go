//go:build cuda

package gpu

import (
	"fmt"
	"strings"
	"sync"

	"gorgonia.org/cu/nvrtc"
)

// The kernels are compiled once per process and compute capability; every
// CUDA device opened afterwards loads the cached PTX.
var ptxCache struct {
	sync.Mutex
	byArch map[string]string
}

// kernelPTX compiles the kernel source for a device of compute capability
// major.minor. It asks NVRTC for the device's own virtual architecture
// first, then for older ones (their PTX is JIT-compiled forward by the
// driver) in case this NVRTC predates the device. It returns the PTX and
// the architecture it was compiled for.
func kernelPTX(major, minor int) (string, string, error) {
	ptxCache.Lock()
	defer ptxCache.Unlock()
	if ptxCache.byArch == nil {
		ptxCache.byArch = map[string]string{}
	}
	own := major*10 + minor
	archs := []int{own}
	for _, a := range []int{120, 100, 90, 89, 87, 86, 80, 75, 70} {
		if a < own {
			archs = append(archs, a)
		}
	}
	var errs []string
	for _, a := range archs {
		arch := fmt.Sprintf("compute_%d", a)
		if ptx, ok := ptxCache.byArch[arch]; ok {
			return ptx, arch, nil
		}
		ptx, err := compileKernels(arch)
		if err == nil {
			ptxCache.byArch[arch] = ptx
			return ptx, arch, nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", arch, err))
		if !strings.Contains(err.Error(), "arch") {
			break // not an architecture problem: older ones fail the same way
		}
	}
	return "", "", fmt.Errorf("NVRTC could not compile the kernels: %s", strings.Join(errs, "; "))
}

func compileKernels(arch string) (string, error) {
	prog, err := nvrtc.CreateProgram(cudaSource(), "agenttrainer_kernels.cu")
	if err != nil {
		return "", fmt.Errorf("nvrtcCreateProgram: %v", err)
	}
	defer prog.Destroy()
	// --fmad=false: no fused multiply-adds, so float32 results round like
	// the CPU device's (Go does not fuse on amd64 by default).
	if err := prog.Compile("--gpu-architecture="+arch, "--fmad=false"); err != nil {
		log, _ := prog.GetLog()
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(log))
	}
	return prog.GetPTX()
}
