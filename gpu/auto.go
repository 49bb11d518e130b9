package gpu

import "fmt"

// AutoGPUFLOPs is the arithmetic of one minibatch's update from which
// trainer.device=auto takes a GPU: below it, kernel launches and transfers
// dominate and the CPU trains faster. Measured end to end on an H100
// against its host's 16 cores (README, "GPU (CUDA) build"): CartPole's
// default, 6.7 MFLOP a minibatch, trained 8× faster on the CPU; 64 envs ×
// [64,64], 107 MFLOP, tied; 4 envs × [256,256], 102 MFLOP, 1.3× faster on
// the GPU; MinAtar's preset, 959 MFLOP, 5.7× faster on the GPU.
const AutoGPUFLOPs = 100e6

// AutoKeepsCPU says whether "auto" trains on the CPU, a GPU or not, because
// a minibatch of minibatchFLOPs is too little work for one, and why, in
// words for the device line.
func AutoKeepsCPU(minibatchFLOPs float64) (bool, string) {
	if minibatchFLOPs >= AutoGPUFLOPs {
		return false, ""
	}
	return true, fmt.Sprintf("auto: a minibatch is %.3g MFLOP of work, too little for a GPU to pay (from %.0f MFLOP on); trainer.device=cuda insists",
		minibatchFLOPs/1e6, AutoGPUFLOPs/1e6)
}
