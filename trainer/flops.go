package trainer

import (
	"runtime"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// estimate is what cfg's agent says it costs with observations obs and
// actions act (agents.Spec.Estimate): nothing for an agent that does not
// estimate, or one built by a library caller's factory.
func estimate(cfg *config.Config, obs, act envs.Space) agents.Estimate {
	spec, ok := agents.Lookup(cfg.Agent.Name)
	if !ok || spec.Estimate == nil {
		return agents.Estimate{}
	}
	threads := cfg.Trainer.Threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0) // as gpu.NewCPU counts them
	}
	return spec.Estimate(agents.Workload{Obs: obs, Act: act, Config: cfg.Agent.Params,
		Minibatch: cfg.BatchSize() / max(cfg.PPO.NumMinibatches, 1), Acting: cfg.Env.NumEnvs,
		Threads: threads, NoCritic: cfg.Grouped()})
}

// UpdateFLOPs counts the floating-point work in the matrix products of one
// PPO update with cfg's agent on observations obs and actions act: what
// the agent estimates for a sample in an epoch (forward pass, weight
// gradients, input gradients), over every sample and epoch. Biases,
// activations and losses are left out; they are a few percent.
func UpdateFLOPs(cfg config.Config, obs, act envs.Space) float64 {
	return estimate(&cfg, obs, act).FLOPs * float64(cfg.BatchSize()*cfg.PPO.UpdateEpochs)
}

// minibatchFLOPs is UpdateFLOPs over the minibatches of an update: the work
// a device takes at once, which trainer.device=auto weighs (gpu.AutoKeepsCPU).
func minibatchFLOPs(cfg config.Config, obs, act envs.Space) float64 {
	return UpdateFLOPs(cfg, obs, act) / float64(cfg.PPO.UpdateEpochs*cfg.PPO.NumMinibatches)
}
