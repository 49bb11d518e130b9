package agents

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/agents/layers"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

func init() {
	Register(Spec{
		Name:        "mlp",
		Description: "actor-critic with separate MLPs (CleanRL's PPO agent): categorical or Gaussian actions",
		New:         func(b Build) (Agent, error) { return NewActorCritic(b) },
	})
}

// ActorCritic is CleanRL's PPO agent: separate actor and critic MLPs,
// orthogonal initialisation (gain √2 for hidden layers, 0.01 for the policy
// head, 1 for the value head), zero biases, and either a categorical head
// (discrete actions) or a Gaussian with a state-independent log-std.
type ActorCritic struct {
	dev           gpu.Device
	actor, critic layers.Stack
	hasCritic     bool
	discrete      bool
	obsDim, nOut  int

	params layers.Params
	logStd *layers.Param // Gaussian only

	actBuffers // for acting

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

// NewActorCritic builds the agent on b.Device.
func NewActorCritic(b Build) (*ActorCritic, error) {
	if b.Obs.Kind != envs.Box || b.Obs.Dim <= 0 {
		return nil, fmt.Errorf("mlp needs vector observations, got %v", b.Obs)
	}
	if len(b.Hidden) == 0 {
		return nil, fmt.Errorf("mlp needs at least one hidden layer")
	}
	act, err := gpu.ParseActivation(b.Activation)
	if err != nil {
		return nil, err
	}
	a := &ActorCritic{dev: b.Device, obsDim: b.Obs.Dim, hasCritic: !b.NoCritic}
	if a.discrete, a.nOut, err = policyWidth(b.Act); err != nil {
		return nil, err
	}
	a.actor = mlpStack(&a.params, "actor", a.obsDim, b.Hidden, a.nOut, act, 0.01, b.RNG)
	if a.hasCritic {
		a.critic = mlpStack(&a.params, "critic", a.obsDim, b.Hidden, 1, act, 1, b.RNG)
	}
	if !a.discrete {
		a.logStd = a.params.Add("actor_logstd", 1, a.nOut, layers.NamedTensor{})
		layers.Fill(b.LogStdInit)(a.logStd)
	}
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

// policyWidth is the policy head's width for act: the number of actions
// (discrete) or the action dimension (Gaussian means).
func policyWidth(act envs.Space) (discrete bool, n int, err error) {
	if act.Kind != envs.Discrete {
		return false, act.Dim, nil
	}
	if act.N < 1 {
		return true, act.N, fmt.Errorf("discrete action space with %d actions", act.N)
	}
	return true, act.N, nil
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
	if a.discrete {
		dev.CategoricalPPO(p)
	} else {
		p.LogStd, p.DLogStd = a.logStd.T, a.logStd.G
		dev.GaussianPPO(p)
	}
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

func (a *ActorCritic) reserveAct(n int) { a.actBuffers.grow(a.dev, n, a.obsDim, a.nOut) }

// actBuffers are what acting on n observations at once needs, for the mlp
// and the cnn alike: the observations on the device and host copies of the
// policy's outputs, grown to the largest n asked for.
type actBuffers struct {
	obsDev              gpu.Tensor
	hostOut, hostLogStd []float32
	probs               []float64
	actCap              int
}

func (b *actBuffers) grow(dev gpu.Device, n, obsDim, nOut int) {
	if n <= b.actCap {
		return
	}
	b.obsDev = dev.Alloc(n, obsDim)
	b.hostOut = make([]float32, n*nOut)
	b.hostLogStd = make([]float32, nOut)
	b.probs = make([]float64, nOut)
	b.actCap = n
}

// Values implements Agent.
func (a *ActorCritic) Values(obs []float32, n int, values []float32) {
	a.reserveAct(n)
	x := a.obsDev.RowRange(0, n)
	a.dev.Upload(x, obs[:n*a.obsDim])
	a.acting = acting{obs: x, values: values[:n]}
	a.actValues(a.dev)
}

// Act implements Agent. Sampling happens on the host from the downloaded
// logits (or means), with the caller's random stream, so runs are
// reproducible whatever the device. On a device that can, the critic's
// values are computed on the other core meanwhile.
func (a *ActorCritic) Act(obs []float32, n int, rng *rand.Rand, deterministic bool, actions, logp, values []float32) {
	a.reserveAct(n)
	x := a.obsDev.RowRange(0, n)
	a.dev.Upload(x, obs[:n*a.obsDim])
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
	p, n := &a.acting, a.acting.obs.Rows
	out := a.hostOut[:n*a.nOut]
	dev.Download(out, a.actor.Forward(dev, p.obs))
	if !a.discrete {
		dev.Download(a.hostLogStd, a.logStd.T)
	}
	sampleActions(out, a.hostLogStd, a.probs, a.discrete, p.rng, p.deterministic, p.actions, p.logp)
}

// sampleActions samples one action per row of the downloaded policy outputs
// out (rows of len(probs) logits, or of len(logStd) Gaussian means) into
// actions and logp.
func sampleActions(out, logStd []float32, probs []float64, discrete bool, rng *rand.Rand, deterministic bool, actions, logp []float32) {
	if discrete {
		w := len(probs)
		for i := 0; i < len(out)/w; i++ {
			actions[i], logp[i] = sampleCategorical(out[i*w:(i+1)*w], probs, rng, deterministic)
		}
		return
	}
	w := len(logStd)
	for i := 0; i < len(out)/w; i++ {
		logp[i] = sampleGaussian(out[i*w:(i+1)*w], logStd, actions[i*w:(i+1)*w], rng, deterministic)
	}
}

// actValues writes the critic's estimates (zeros without a critic).
func (a *ActorCritic) actValues(dev gpu.Device) {
	if !a.hasCritic {
		clear(a.acting.values)
		return
	}
	dev.Download(a.acting.values, a.critic.Forward(dev, a.acting.obs))
}

// sampleCategorical draws an index from softmax(logits) and returns it with
// its log-probability; probs is scratch of len(logits).
func sampleCategorical(logits []float32, probs []float64, rng *rand.Rand, deterministic bool) (float32, float32) {
	mx := float64(logits[0])
	best := 0
	for j, v := range logits {
		if float64(v) > mx {
			mx, best = float64(v), j
		}
	}
	var sum float64
	for j, v := range logits {
		probs[j] = math.Exp(float64(v) - mx)
		sum += probs[j]
	}
	choice := best
	if !deterministic {
		u := rng.Float64() * sum
		choice = len(logits) - 1
		for j, p := range probs {
			if u < p {
				choice = j
				break
			}
			u -= p
		}
	}
	return float32(choice), float32(float64(logits[choice]) - mx - math.Log(sum))
}

// sampleGaussian draws actions from N(mean, exp(logStd)²) into out and
// returns the log-density of the (unclipped) sample.
func sampleGaussian(mean, logStd, out []float32, rng *rand.Rand, deterministic bool) float32 {
	var lp float64
	for j, m := range mean {
		sd := math.Exp(float64(logStd[j]))
		z := 0.0
		if !deterministic {
			z = rng.NormFloat64()
		}
		out[j] = float32(float64(m) + sd*z)
		// The log-density of the stored float32 sample.
		zq := (float64(out[j]) - float64(m)) / sd
		lp += -0.5*zq*zq - float64(logStd[j]) - 0.5*math.Log(2*math.Pi)
	}
	return float32(lp)
}
