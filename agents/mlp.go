package agents

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/agents/dist"
	"github.com/agenttrainer/agenttrainer/agents/layers"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

func init() {
	Register(Spec{
		Name:        "mlp",
		Description: "actor-critic with separate MLPs (CleanRL's PPO agent): categorical or Gaussian actions",
		Keys:        actorCriticKeys,
		New:         func(b Build) (Agent, error) { return NewActorCritic(b) },
		Estimate:    mlpEstimate,
	})
}

// actorCriticKeys are the keys of the actor-critic agents (mlp, cnn).
var actorCriticKeys = []Key{
	{Name: "hidden", Default: []int{64, 64}, Check: "each[1,65536]",
		Doc: "Hidden layer sizes: of the actor and of the critic (mlp: separate networks), or of the torso after the convolutions (cnn)."},
	{Name: "activation", Default: "tanh", Check: "oneof=tanh|relu",
		Doc: `Hidden-layer activation: "tanh" or "relu".`},
	{Name: "log_std_init", Default: 0.0, Check: "[-20,20]", // exp(±20): a std float32 squares without overflow
		Doc: "Initial log standard deviation of a Gaussian policy (continuous actions)."},
}

// ActorCritic is CleanRL's PPO agent: separate actor and critic MLPs,
// orthogonal initialisation (gain √2 for hidden layers, 0.01 for the policy
// head, 1 for the value head), zero biases, and the action distribution's
// head: categorical logits, or Gaussian means with a state-independent
// log-std ("actor_logstd").
type ActorCritic struct {
	dev           gpu.Device
	actor, critic layers.Stack
	head          *dist.Head
	hasCritic     bool
	obsDim        int

	params layers.Params
	obsDev gpu.Tensor // observations being acted on, for the most rows yet

	// The minibatch Gradients is working on, and its two passes as
	// function values made once (a method value made per call would be
	// allocated per call).
	mb                    minibatch
	actorPass, criticPass func(gpu.Device)
	acting                acting
	policyStep, valueStep func(gpu.Device)
}

type minibatch struct {
	obs    gpu.Tensor
	policy gpu.PPOPolicyArgs
	value  *gpu.ValueArgs
}

// NewActorCritic builds the agent on b.Device, from b.Config's
// actor-critic keys (agent.hidden, agent.activation, agent.log_std_init).
func NewActorCritic(b Build) (*ActorCritic, error) {
	if b.Obs.Kind != envs.Box || b.Obs.Dim <= 0 {
		return nil, fmt.Errorf("mlp needs vector observations, got %v", b.Obs)
	}
	hidden := b.Config.Ints("hidden")
	if len(hidden) == 0 {
		return nil, fmt.Errorf("mlp needs at least one hidden layer")
	}
	act, err := gpu.ParseActivation(b.Config.String("activation"))
	if err != nil {
		return nil, err
	}
	d, err := b.distribution()
	if err != nil {
		return nil, err
	}
	a := &ActorCritic{dev: b.Device, obsDim: b.Obs.Dim, hasCritic: !b.NoCritic}
	a.actor = mlpStack(&a.params, "actor", a.obsDim, hidden, d.Width(), act, 0.01, b.RNG)
	if a.hasCritic {
		a.critic = mlpStack(&a.params, "critic", a.obsDim, hidden, 1, act, 1, b.RNG)
	}
	a.head = dist.NewHead(d, &a.params, "actor_logstd", layers.Fill(b.Config.Float("log_std_init")))
	a.params.Build(b.Device)
	a.actorPass, a.criticPass = a.runActor, a.runCritic
	a.policyStep, a.valueStep = a.actPolicy, a.actValues
	return a, nil
}

// mlpStack is one network of dense layers from in through hidden to out,
// act between them and none after the last, initialised as CleanRL's
// (orthogonal, gain √2, the head's headGain). PyTorch numbers a
// Sequential's modules: Linear layers sit at even indices with the
// activations between them.
func mlpStack(p *layers.Params, name string, in int, hidden []int, out int, act gpu.Activation, headGain float64, rng *rand.Rand) layers.Stack {
	sizes := append(append([]int{in}, hidden...), out)
	var s layers.Stack
	for i := 1; i < len(sizes); i++ {
		gain, a := math.Sqrt2, act
		if i == len(sizes)-1 {
			gain, a = headGain, gpu.Identity
		}
		s = append(s, layers.NewDense(p, fmt.Sprintf("%s.%d", name, 2*(i-1)), sizes[i-1], sizes[i], a, layers.Orthogonal(gain, rng)))
	}
	return s
}

// headWidth is the policy head's width for act under the usual
// distribution (0 when there is none).
func headWidth(act envs.Space) int {
	d, err := dist.For(act)
	if err != nil {
		return 0
	}
	return d.Width()
}

// f32 is the bytes of a float32.
const f32 = 4.0

// mlpEstimate counts the actor's and the critic's layers (the critic's
// even without one: an upper bound), each with its activations and their
// gradients for a minibatch and for acting.
func mlpEstimate(w Workload) Estimate {
	var e Estimate
	var acts float64
	e.Params, e.Widest, acts = denseCost(w, float64(w.Obs.Dim))
	e.FLOPs = 2 * mlpMACs(w)
	e.Weights = MemoryPart{Name: "the networks' weights (agent.hidden)", Fix: "a narrower agent.hidden"}
	e.Activations = []MemoryPart{denseActivations(acts)}
	return e
}

// denseCost counts, from a torso's output of width in, the hidden layers
// and a head of each kind (policy, value): parameters, the widest weight,
// and activations with their gradients (floats).
func denseCost(w Workload, in0 float64) (params, widest, acts float64) {
	mb, envs := float64(w.Minibatch), float64(w.Acting)
	for _, out := range []float64{float64(headWidth(w.Act)), 1} {
		in := in0
		for _, h := range append(w.Config.Ints("hidden"), 0) {
			width := float64(h)
			if h == 0 {
				width = out
			}
			params += in*width + width
			widest = max(widest, in*width)
			acts += 2 * (mb + envs) * width
			in = width
		}
	}
	return params, widest, acts
}

func denseActivations(acts float64) MemoryPart {
	return MemoryPart{Name: "the networks' activations (a minibatch of env.num_envs × ppo.num_steps / ppo.num_minibatches)",
		Fix: "more ppo.num_minibatches, a smaller batch or a narrower agent.hidden", Bytes: f32 * acts}
}

// mlpMACs is the multiply-adds of one sample's update in the actor and
// the critic: forward and weight gradient of every layer, and the input
// gradient of all but the first.
func mlpMACs(w Workload) float64 {
	var macs float64
	for _, out := range []int{headWidth(w.Act), 1} {
		sizes := append(append([]int{w.Obs.Dim}, w.Config.Ints("hidden")...), out)
		for i := 1; i < len(sizes); i++ {
			macs += layerMACs(sizes[i-1]*sizes[i], i == 1)
		}
	}
	return macs
}

// layerMACs books a layer of n multiply-adds a sample: forward and weight
// gradient, and the input gradient unless it is the first layer.
func layerMACs(n int, first bool) float64 {
	macs := 2 * float64(n)
	if !first {
		macs += float64(n)
	}
	return macs
}

// Params implements Learner.
func (a *ActorCritic) Params() gpu.Tensor { return a.params.Flat() }

// Grads implements Learner.
func (a *ActorCritic) Grads() gpu.Tensor { return a.params.Grads() }

// Tensors implements Learner.
func (a *ActorCritic) Tensors() []NamedTensor { return a.params.Named() }

// minParallelRows is the minibatch size from which Gradients runs actor and
// critic on two cores: below it, handing the critic to the other core costs
// more than its pass.
const minParallelRows = 32

// Gradients implements Learner. Actor and critic share nothing but the
// observations, so on a device that can, their passes run side by side.
func (a *ActorCritic) Gradients(obs gpu.Tensor, p gpu.PPOPolicyArgs, v *gpu.ValueArgs) {
	a.mb = minibatch{obs: obs, policy: p, value: v}
	c, ok := a.dev.(gpu.Concurrent)
	if ok && a.hasCritic && obs.Rows >= minParallelRows {
		c.Both(a.criticPass, a.actorPass)
		return
	}
	a.actorPass(a.dev)
	if a.hasCritic {
		a.criticPass(a.dev)
	}
}

// runActor is the policy's forward pass, fused loss and backward pass.
func (a *ActorCritic) runActor(dev gpu.Device) {
	p, rows := a.mb.policy, a.mb.obs.Rows
	p.Out, p.DOut = a.actor.Forward(dev, a.mb.obs), a.actor.Grad(rows)
	a.head.Loss(dev, p)
	a.actor.Backward(dev, p.DOut, layers.InputGrad{})
}

// runCritic is the critic's forward pass, value loss and backward pass;
// without value-loss arguments the critic gets zero gradients.
func (a *ActorCritic) runCritic(dev gpu.Device) {
	v, rows := a.mb.value, a.mb.obs.Rows
	if v == nil {
		a.critic.ZeroGrads(dev)
		return
	}
	v.Value, v.DValue = a.critic.Forward(dev, a.mb.obs), a.critic.Grad(rows)
	dev.ValueLoss(*v)
	a.critic.Backward(dev, v.DValue, layers.InputGrad{})
}

// upload puts n observations on the device, in a buffer grown to the
// largest n asked for; the mlp and the cnn act this way alike.
func upload(dev gpu.Device, buf *gpu.Tensor, obs []float32, n, obsDim int) gpu.Tensor {
	if buf.Rows < n {
		*buf = dev.Alloc(n, obsDim)
	}
	x := buf.RowRange(0, n)
	dev.Upload(x, obs[:n*obsDim])
	return x
}

// Values implements Agent.
func (a *ActorCritic) Values(obs []float32, n int, values []float32) {
	a.acting = acting{obs: upload(a.dev, &a.obsDev, obs, n, a.obsDim), values: values[:n]}
	a.actValues(a.dev)
}

// Act implements Agent. Sampling happens on the host from the downloaded
// logits (or means), with the caller's random stream, so runs are
// reproducible whatever the device. On a device that can, the critic's
// values are computed on the other core meanwhile.
func (a *ActorCritic) Act(obs []float32, n int, rng *rand.Rand, deterministic bool, actions, logp, values []float32) {
	x := upload(a.dev, &a.obsDev, obs, n, a.obsDim)
	a.acting = acting{obs: x, rng: rng, deterministic: deterministic, actions: actions, logp: logp, values: values[:n]}
	if c, ok := a.dev.(gpu.Concurrent); ok && a.hasCritic {
		c.Both(a.valueStep, a.policyStep)
		return
	}
	a.policyStep(a.dev)
	a.valueStep(a.dev)
}

// acting is what Act's two halves work on.
type acting struct {
	obs                   gpu.Tensor
	rng                   *rand.Rand
	deterministic         bool
	actions, logp, values []float32
}

// actPolicy samples actions and their log-probabilities.
func (a *ActorCritic) actPolicy(dev gpu.Device) {
	p := &a.acting
	a.head.Act(dev, a.actor.Forward(dev, p.obs), p.rng, p.deterministic, p.actions, p.logp)
}

// actValues writes the critic's estimates (zeros without a critic).
func (a *ActorCritic) actValues(dev gpu.Device) {
	if !a.hasCritic {
		clear(a.acting.values)
		return
	}
	dev.Download(a.acting.values, a.critic.Forward(dev, a.acting.obs))
}
