package trainer

import "github.com/agenttrainer/agenttrainer/trainer/config"

// UpdateFLOPs counts the floating-point work in the matrix products of one
// PPO update with cfg's MLP actor and critic (obs inputs, outputs policy
// outputs): for every sample and epoch, the forward pass of both networks,
// the weight gradients and the input gradients of all but the first layers,
// at 2 operations per multiply-add. Biases, activations and losses are left
// out; they are a few percent.
func UpdateFLOPs(cfg config.Config, obs, outputs int) float64 {
	var macs float64
	for _, out := range []int{outputs, 1} {
		sizes := append(append([]int{obs}, cfg.Agent.Hidden...), out)
		for i := 1; i < len(sizes); i++ {
			layer := float64(sizes[i-1] * sizes[i])
			macs += 2 * layer // forward and weight gradient
			if i > 1 {
				macs += layer // input gradient
			}
		}
	}
	return 2 * macs * float64(cfg.BatchSize()*cfg.PPO.UpdateEpochs)
}
