package trainer

import (
	"fmt"
	"github.com/agenttrainer/agenttrainer/internal/memlimit"
	"runtime"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// Memory is estimated before anything large is allocated, so that a
// configuration that cannot fit is refused with the figures instead of
// ending in Go's fatal out-of-memory error (which no caller can recover
// from, and which left the terminal raw in the app).

// perEnvBytes is a generous allowance for one environment instance and its
// slot in the vector runner (classic control needs a few hundred bytes).
const perEnvBytes = 4 << 10

// memoryEstimate is the bytes a training of cfg holds at its peak, for
// observations obs and actions act, with the part that dominates named:
// the environments and the rollout, the agent's parameters with their
// gradients and Adam's moments, and the agent's own buffers (its estimate).
func memoryEstimate(cfg *config.Config, obs, act envs.Space) (total float64, biggest memoryPart) {
	const f32 = 4.0
	envs, steps := float64(cfg.Env.NumEnvs), float64(cfg.PPO.NumSteps)
	batch := envs * steps
	// An observation's floats, and the wider of an action's and of a
	// categorical policy's logits.
	od, od1 := float64(obs.Size()), float64(max(act.Size(), act.N))
	parts := []memoryPart{
		{"environments", "fewer env.num_envs", envs * (perEnvBytes + 6*f32*(od+od1))},
		// The rollout on the host (observations, actions and ten per-sample
		// figures) and twice on the device (the batch and a minibatch; the
		// CPU reads the batch where it lies, so this is an upper bound).
		{"the rollout buffers (env.num_envs × ppo.num_steps)", "fewer env.num_envs or a smaller ppo.num_steps", 3 * batch * f32 * (od + od1 + 10)},
	}
	// The agent's parameters, gradients and two Adam moments, three host
	// copies when a checkpoint is written, and its buffers for a minibatch
	// and for acting. TestMemoryEstimateBoundsTheHeap holds this to what a
	// training holds.
	e := estimate(cfg, obs, act)
	if e.Params > 0 {
		threads := float64(cfg.Trainer.Threads)
		if threads == 0 {
			threads = float64(runtime.GOMAXPROCS(0)) // as gpu.NewCPU counts them
		}
		// The CPU device's scratch besides: per core, buffers to pack
		// operands in (a quarter MB with the side-by-side halves'), and
		// transposed copies of the widest layer (for products with a
		// transposed operand, and the convolution gradients' transposed
		// dense weights).
		scratch := threads*(256<<10) + f32*2*e.Widest
		parts = append(parts, memoryPart{e.Weights.Name, e.Weights.Fix, f32*7*e.Params + scratch})
	}
	for _, p := range e.Activations {
		parts = append(parts, memoryPart{p.Name, p.Fix, p.Bytes})
	}
	for _, p := range parts {
		total += p.bytes
		if p.bytes > biggest.bytes {
			biggest = p
		}
	}
	return total, biggest
}

// memoryPart is one use of memory in the estimate, with what reduces it.
type memoryPart struct {
	name, fix string
	bytes     float64
}

// memoryLimit is what the trainer may plan to use (internal/memlimit).
func memoryLimit() float64 { return float64(memlimit.Available()) }

// checkMemory refuses a configuration whose estimate exceeds limit.
func checkMemory(cfg *config.Config, obs, act envs.Space, limit float64) error {
	need, biggest := memoryEstimate(cfg, obs, act)
	if need <= limit {
		return nil
	}
	return &config.Error{Msg: fmt.Sprintf("this training would need about %s of memory (mostly %s: %s), more than the %s this machine can give it; try %s",
		bytesText(need), biggest.name, bytesText(biggest.bytes), bytesText(limit), biggest.fix)}
}

// checkThreads refuses more threads than the machine has cores: the extra
// ones only wait for each other.
func checkThreads(threads int) error {
	if n := runtime.NumCPU(); threads > n {
		return &config.Error{Key: "trainer.threads", Msg: fmt.Sprintf("%d is more than the %d cores of this machine; use 0 (all of them) or 1 to %d", threads, n, n)}
	}
	return nil
}

func bytesText(b float64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.1f TiB", b/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", b/(1<<10))
}
