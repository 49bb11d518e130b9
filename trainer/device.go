package trainer

import (
	"fmt"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// gpuWorthFLOPs is the arithmetic of one minibatch's update (UpdateFLOPs
// over the minibatches of an update) from which trainer.device=auto takes a
// GPU: below it, kernel launches and transfers dominate and the CPU trains
// faster. Measured end to end on an H100 against its host's 16 cores
// (README, "GPU (CUDA) build"): CartPole's default, 6.7 MFLOP a minibatch,
// trained 8× faster on the CPU; 64 envs × [64,64], 107 MFLOP, tied; 4 envs
// × [256,256], 102 MFLOP, 1.3× faster on the GPU; MinAtar's preset, 959
// MFLOP, 5.7× faster on the GPU.
const gpuWorthFLOPs = 100e6

// autoPrefersCPU says whether trainer.device=auto should train on the CPU
// although a GPU may be there, because one minibatch is too little work
// for it, and why, in words for the device line.
func autoPrefersCPU(cfg config.Config, obsDim int, shape []int, outputs int) (bool, string) {
	perMinibatch := UpdateFLOPs(cfg, obsDim, shape, outputs) / float64(cfg.PPO.UpdateEpochs*cfg.PPO.NumMinibatches)
	if perMinibatch >= gpuWorthFLOPs {
		return false, ""
	}
	return true, fmt.Sprintf("auto: a minibatch is %.3g MFLOP of work, too little for a GPU to pay (from %.0f MFLOP on); trainer.device=cuda insists",
		perMinibatch/1e6, gpuWorthFLOPs/1e6)
}
