package trainer

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/agenttrainer/agenttrainer/gpu"
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
// observations of obsDim floats (an image of shape H×W×C when shape is
// set) and outputs policy outputs (logits or means), with the part that
// dominates named.
func memoryEstimate(cfg *config.Config, obsDim, outputs int, shape []int) (total float64, biggest memoryPart) {
	const f32 = 4.0
	envs, steps := float64(cfg.Env.NumEnvs), float64(cfg.PPO.NumSteps)
	batch := envs * steps
	od, od1 := float64(obsDim), float64(outputs)
	parts := []memoryPart{
		{"environments", "fewer env.num_envs", envs * (perEnvBytes + 6*f32*(od+od1))},
		// The rollout on the host (observations, actions and ten per-sample
		// figures) and twice on the device (the batch and a minibatch; the
		// CPU reads the batch where it lies, so this is an upper bound).
		{"the rollout buffers (env.num_envs × ppo.num_steps)", "fewer env.num_envs or a smaller ppo.num_steps", 3 * batch * f32 * (od + od1 + 10)},
	}
	// Actor and critic: parameters, gradients and two Adam moments, three
	// host copies when a checkpoint is written, and each layer's
	// activations and their gradients for a minibatch and for acting.
	// TestMemoryEstimateBoundsTheHeap holds this to what a training holds.
	mb := batch / float64(max(cfg.PPO.NumMinibatches, 1))
	threads := float64(cfg.Trainer.Threads)
	if threads == 0 {
		threads = float64(runtime.GOMAXPROCS(0)) // as gpu.NewCPU counts them
	}
	var params, acts, widest float64
	in0 := od
	if cfg.Agent.Name == "cnn" && len(shape) == 3 {
		// The cnn's convolutions: per layer its weights, and for a
		// minibatch and for acting its patches (batch × OH × OW × K·K·C),
		// outputs and their gradients (batch × OH × OW × channels each).
		// Actor and critic share them, and the hidden layers, which the
		// loop below counts twice: an overestimate by at most one torso.
		h, w, c := shape[0], shape[1], shape[2]
		var convActs float64
		for _, l := range cfg.Agent.Conv {
			if len(l) < 3 || l[1] < 1 || l[2] < 1 {
				break // refused by the agent with its own message
			}
			pad := 0
			if len(l) > 3 {
				pad = l[3]
			}
			oh, ow := (h+2*pad-l[1])/l[2]+1, (w+2*pad-l[1])/l[2]+1
			if oh < 1 || ow < 1 {
				break
			}
			patch := float64(l[1] * l[1] * c)
			params += patch*float64(l[0]) + float64(l[0])
			widest = max(widest, patch*float64(l[0]))
			convActs += (mb + envs) * float64(oh*ow) * (patch + 2*float64(l[0]))
			h, w, c = oh, ow, l[0]
		}
		in0 = float64(h * w * c)
		convActs += threads * gpu.ConvBlock * in0 // per core, a block of frames' output gradient
		parts = append(parts, memoryPart{"the convolutions' activations (minibatch × height × width × channels per agent.conv layer)",
			"more ppo.num_minibatches, a smaller batch, fewer channels or a larger stride in agent.conv", f32 * convActs})
	}
	for _, out := range []float64{od1, 1} {
		in := in0
		for _, h := range append(cfg.Agent.Hidden, 0) {
			w := float64(h)
			if h == 0 {
				w = out
			}
			params += in*w + w
			widest = max(widest, in*w)
			acts += 2 * (mb + envs) * w
			in = w
		}
	}
	// The CPU device's scratch besides: per core, buffers to pack operands
	// in (a quarter MB with the side-by-side halves'), and transposed
	// copies of the widest layer (for products with a transposed operand,
	// and the convolution gradients' transposed dense weights).
	scratch := threads*(256<<10) + f32*2*widest
	parts = append(parts,
		memoryPart{"the networks' weights (agent.hidden)", "a narrower agent.hidden", f32*7*params + scratch},
		memoryPart{"the networks' activations (a minibatch of env.num_envs × ppo.num_steps / ppo.num_minibatches)",
			"more ppo.num_minibatches, a smaller batch or a narrower agent.hidden", f32 * acts})
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

// memoryLimit is how much this process may plan to use: 80 % of the memory
// the kernel reports available (MemAvailable), or 8 GiB where that cannot
// be read.
func memoryLimit() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 8 << 30
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil && kb > 0 {
				return 0.8 * kb * 1024
			}
		}
	}
	return 8 << 30
}

// checkMemory refuses a configuration whose estimate exceeds limit.
func checkMemory(cfg *config.Config, obsDim, outputs int, shape []int, limit float64) error {
	need, biggest := memoryEstimate(cfg, obsDim, outputs, shape)
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
