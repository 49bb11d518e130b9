package trainer

import "github.com/agenttrainer/agenttrainer/trainer/config"

// UpdateFLOPs counts the floating-point work in the matrix products of one
// PPO update with cfg's agent (obs inputs of image shape H×W×C when shape
// is given, outputs policy outputs): for every sample and epoch, the forward
// pass, the weight gradients and the input gradients of all but the first
// layer, at 2 operations per multiply-add. The mlp has an actor and a critic
// of its own; the cnn one torso (convolutions as products over patches, then
// the dense layers) under both heads. Biases, activations and losses are
// left out; they are a few percent.
func UpdateFLOPs(cfg config.Config, obs int, shape []int, outputs int) float64 {
	var macs float64
	// add books a layer of n multiply-adds per sample; first has no input
	// gradient.
	add := func(n int, first bool) {
		macs += 2 * float64(n) // forward and weight gradient
		if !first {
			macs += float64(n) // input gradient
		}
	}
	if cfg.Agent.Name == "cnn" && len(shape) == 3 {
		h, w, c := shape[0], shape[1], shape[2]
		for i, l := range cfg.Agent.Conv {
			if len(l) < 3 || l[2] < 1 {
				return 0 // the agent refuses it
			}
			k, stride, pad := l[1], l[2], 0
			if len(l) > 3 {
				pad = l[3]
			}
			oh, ow := (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
			add(oh*ow*k*k*c*l[0], i == 0)
			h, w, c = oh, ow, l[0]
		}
		sizes := append([]int{h * w * c}, cfg.Agent.Hidden...)
		for i := 1; i < len(sizes); i++ {
			add(sizes[i-1]*sizes[i], false)
		}
		feat := sizes[len(sizes)-1]
		add(feat*outputs, false)
		add(feat, false) // the value head
	} else {
		for _, out := range []int{outputs, 1} {
			sizes := append(append([]int{obs}, cfg.Agent.Hidden...), out)
			for i := 1; i < len(sizes); i++ {
				add(sizes[i-1]*sizes[i], i == 1)
			}
		}
	}
	return 2 * macs * float64(cfg.BatchSize()*cfg.PPO.UpdateEpochs)
}

// minibatchFLOPs is UpdateFLOPs over the minibatches of an update: the work
// a device takes at once, which trainer.device=auto weighs (gpu.AutoKeepsCPU).
func minibatchFLOPs(cfg config.Config, obs int, shape []int, outputs int) float64 {
	return UpdateFLOPs(cfg, obs, shape, outputs) / float64(cfg.PPO.UpdateEpochs*cfg.PPO.NumMinibatches)
}
