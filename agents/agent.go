// Package agents holds the policies PPO trains: the Agent and Learner
// interfaces, the registry (an agent's Spec declares its config keys, its
// action distribution, its cost and what it needs of a device), and the
// agents that ship: the actor-critic MLP, the convolutional actor-critic
// and a random baseline. Networks are made of agents/layers; actions come
// from agents/dist.
package agents

import (
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/agents/dist"
	"github.com/agenttrainer/agenttrainer/agents/layers"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// Agent chooses actions. Observations, actions, log-probabilities and
// values are host slices of n rows.
type Agent interface {
	// Act writes, for n observations (n×obsDim), sampled actions (n×actDim),
	// their log-probabilities and the value estimates. deterministic picks
	// the distribution's mode instead of sampling.
	Act(obs []float32, n int, rng *rand.Rand, deterministic bool, actions, logp, values []float32)
	// Values writes value estimates for n observations; PPO bootstraps
	// truncated episodes with them.
	Values(obs []float32, n int, values []float32)
}

// Learner is an Agent whose parameters PPO trains on a device. For each
// minibatch the PPO loop calls Gradients, then clips and steps the flat
// gradient and parameter tensors.
type Learner interface {
	Agent
	// Params and Grads are flat tensors with the same layout.
	Params() gpu.Tensor
	Grads() gpu.Tensor
	// Gradients runs the forward and backward passes of one minibatch of
	// observations held on the device and writes every parameter gradient
	// into Grads: of the policy loss (p, which the learner completes with
	// its outputs and gradient buffers) and, when v is not nil, of the value
	// loss (the learner fills v.Value with its value estimates and v.DValue
	// with their gradient). Loss statistics accumulate into p.Stats and
	// v.Stats.
	Gradients(obs gpu.Tensor, p gpu.PPOPolicyArgs, v *gpu.ValueArgs)
	// Tensors lists the named parameter tensors, PyTorch-style
	// ("actor.0.weight"), for checkpoints.
	Tensors() []NamedTensor
}

// NamedTensor is one parameter tensor for export (layers.NamedTensor).
type NamedTensor = layers.NamedTensor

// Build is what an agent constructor gets.
type Build struct {
	Obs, Act envs.Space
	// Config holds the [agent] section's values by key ("hidden" for
	// agent.hidden): every registered agent's keys, of the types they
	// declare. New fills the keys it lacks with the agent's defaults.
	Config Config
	// Dist is the action distribution (Spec.Distribution's for Act); nil:
	// dist.For(Act).
	Dist dist.Distribution
	// NoCritic builds the policy alone: advantage estimators that compare
	// episodes (GRPO, RLOO) need no value function. Values are then zero.
	NoCritic bool
	Device   gpu.Device
	RNG      *rand.Rand // for initialisation
}

// distribution is b.Dist, or the usual one for b.Act.
func (b Build) distribution() (dist.Distribution, error) {
	if b.Dist != nil {
		return b.Dist, nil
	}
	return dist.For(b.Act)
}
