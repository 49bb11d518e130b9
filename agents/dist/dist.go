// Package dist holds the action distributions policies sample from and PPO
// scores: categorical (discrete actions), diagonal Gaussian (a box of
// continuous actions) and tokens (a categorical over a vocabulary at each
// generated position, with a mask of the positions that are the
// policy's). Each owns its sampling, log-probabilities and entropy, in
// plain Go on the host, and the PPO policy loss it runs on the device.
package dist

import (
	"fmt"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/agents/layers"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// Distribution is a family of action distributions, one for each row of a
// policy head's outputs (logits, means), with parameters that every row
// shares (a Gaussian's state-independent log-stds). A value belongs to one
// agent: it keeps scratch for sampling.
type Distribution interface {
	// Width is the number of head outputs one row takes.
	Width() int
	// ActionDim is the number of floats one action takes in a rollout.
	ActionDim() int
	// Shared is the number of state-independent parameters.
	Shared() int
	// Sample draws one action for each row of out (rows of Width values;
	// shared holds the shared parameters) into actions (rows of
	// ActionDim) with its log-probability; deterministic takes the mode.
	Sample(out, shared []float32, rng *rand.Rand, deterministic bool, actions, logp []float32)
	// LogProb writes the log-probability of each row's action, computed
	// in float64 from the head's outputs given in float64: the plain-Go
	// reference of what Loss computes on the device.
	LogProb(out, shared []float64, actions []float32, logp []float64)
	// Entropy writes each row's entropy, as LogProb in float64.
	Entropy(out, shared, ent []float64)
	// Loss is PPO's clipped-surrogate policy loss with its entropy bonus
	// on dev: p.Out holds the head's outputs and p.DOut receives their
	// gradient, p.LogStd and p.DLogStd the shared parameters and theirs
	// (trainer/objective.go writes the loss out in plain Go).
	Loss(dev gpu.Device, p gpu.PPOPolicyArgs)
}

// For is the usual distribution for an action space: categorical over a
// discrete space's actions, a diagonal Gaussian over a box.
func For(act envs.Space) (Distribution, error) {
	switch act.Kind {
	case envs.Discrete:
		if act.N < 1 {
			return nil, fmt.Errorf("discrete action space with %d actions", act.N)
		}
		return NewCategorical(act.N), nil
	case envs.Box:
		if act.Dim < 1 {
			return nil, fmt.Errorf("continuous action space of %d dimensions", act.Dim)
		}
		return NewGaussian(act.Dim), nil
	}
	return nil, fmt.Errorf("no action distribution for %v", act)
}

// Head is a distribution as an agent holds it: its shared parameters,
// registered with the agent's, and the host buffers acting fills.
type Head struct {
	Dist   Distribution
	shared *layers.Param // nil without shared parameters
	out    []float32     // the head's outputs for acting, on the host
	host   []float32     // the shared parameters, on the host
}

// NewHead registers d's shared parameters in p under name (CleanRL calls a
// Gaussian's "actor_logstd"), initialised by init.
func NewHead(d Distribution, p *layers.Params, name string, init layers.Init) *Head {
	h := &Head{Dist: d}
	if n := d.Shared(); n > 0 {
		h.shared = p.Add(name, 1, n, layers.NamedTensor{})
		if init != nil {
			init(h.shared)
		}
		h.host = make([]float32, n)
	}
	return h
}

// Act samples an action for each of the rows of out, the head's outputs
// on dev: downloaded, then sampled on the host with the caller's random
// stream, so that runs are reproducible whatever the device.
func (h *Head) Act(dev gpu.Device, out gpu.Tensor, rng *rand.Rand, deterministic bool, actions, logp []float32) {
	if n := out.Len(); len(h.out) < n {
		h.out = make([]float32, n)
	}
	host := h.out[:out.Len()]
	dev.Download(host, out)
	if h.shared != nil {
		dev.Download(h.host, h.shared.T)
	}
	h.Dist.Sample(host, h.host, rng, deterministic, actions, logp)
}

// Loss runs the distribution's loss with the shared parameters filled in.
func (h *Head) Loss(dev gpu.Device, p gpu.PPOPolicyArgs) {
	if h.shared != nil {
		p.LogStd, p.DLogStd = h.shared.T, h.shared.G
	}
	h.Dist.Loss(dev, p)
}
