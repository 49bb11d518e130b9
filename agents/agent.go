// Package agents holds the policies PPO trains: the Agent and Learner
// interfaces, a registry, the actor-critic MLP and a random baseline.
package agents

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

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
	Obs, Act   envs.Space
	Conv       [][]int // convolution layers (cnn): out_channels, kernel, stride[, padding]
	Hidden     []int
	Activation string
	LogStdInit float64 // initial log-std of a Gaussian policy
	// NoCritic builds the policy alone: advantage estimators that compare
	// episodes (GRPO, RLOO) need no value function. Values are then zero.
	NoCritic bool
	Device   gpu.Device
	RNG      *rand.Rand // for initialisation
}

// Spec describes a registered agent.
type Spec struct {
	Name        string
	Description string
	New         func(Build) (Agent, error)
}

var registry = map[string]Spec{}

// Register adds an agent to the registry; it panics on a duplicate name.
func Register(s Spec) {
	if s.Name == "" || s.New == nil {
		panic("agents: Register needs a name and a constructor")
	}
	if _, dup := registry[s.Name]; dup {
		panic("agents: duplicate registration of " + s.Name)
	}
	registry[s.Name] = s
}

// Lookup returns a registered agent's spec.
func Lookup(name string) (Spec, bool) {
	s, ok := registry[name]
	return s, ok
}

// Names lists the registered agents in sorted order.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New builds a registered agent.
func New(name string, b Build) (Agent, error) {
	s, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown agent %q (registered: %s)", name, strings.Join(Names(), ", "))
	}
	return s.New(b)
}
