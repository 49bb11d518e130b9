package agents

import (
	"fmt"
	"math"
	"math/rand/v2"

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

// linear is one fully connected layer. W is stored in×out so the forward
// product needs no transpose; export transposes to PyTorch's out×in.
type linear struct {
	in, out int
	w, b    gpu.Tensor // parameters (views into the flat parameter tensor)
	dw, db  gpu.Tensor // gradients (views into the flat gradient tensor)
}

// network is a stack of linear layers with an activation between them and
// none after the last.
type network struct {
	layers []linear
	act    gpu.Activation
	// Per-layer outputs of the last forward pass and the gradient buffers
	// of the backward pass, sized for cap rows.
	outs, grads []gpu.Tensor
	cap         int
	input       gpu.Tensor
}

func (n *network) reserve(dev gpu.Device, rows int) {
	if rows <= n.cap {
		return
	}
	n.outs, n.grads = n.outs[:0], n.grads[:0]
	for _, l := range n.layers {
		n.outs = append(n.outs, dev.Alloc(rows, l.out))
		n.grads = append(n.grads, dev.Alloc(rows, l.out))
	}
	n.cap = rows
}

// forward returns the output for x (rows×in), keeping activations.
func (n *network) forward(dev gpu.Device, x gpu.Tensor) gpu.Tensor {
	n.reserve(dev, x.Rows)
	n.input = x
	h := x
	for i, l := range n.layers {
		y := n.outs[i].RowRange(0, x.Rows)
		dev.MatMul(y, h, false, l.w, false, 0)
		act := n.act
		if i == len(n.layers)-1 {
			act = gpu.Identity
		}
		dev.BiasAct(y, l.b, act)
		h = y
	}
	return h
}

// outGrad is the buffer the loss writes the output gradient into.
func (n *network) outGrad(rows int) gpu.Tensor {
	return n.grads[len(n.layers)-1].RowRange(0, rows)
}

// backward turns the gradient in outGrad into parameter gradients.
func (n *network) backward(dev gpu.Device) {
	rows := n.input.Rows
	for i := len(n.layers) - 1; i >= 0; i-- {
		l := n.layers[i]
		dy := n.grads[i].RowRange(0, rows)
		prev := n.input
		if i > 0 {
			prev = n.outs[i-1].RowRange(0, rows)
		}
		dev.MatMul(l.dw, prev, true, dy, false, 0)
		dev.ColSum(l.db, dy, 0)
		if i > 0 {
			dprev := n.grads[i-1].RowRange(0, rows)
			dev.MatMul(dprev, dy, false, l.w, true, 0)
			dev.ActGrad(dprev, prev, n.act)
		}
	}
}

// ActorCritic is CleanRL's PPO agent: separate actor and critic MLPs,
// orthogonal initialisation (gain √2 for hidden layers, 0.01 for the policy
// head, 1 for the value head), zero biases, and either a categorical head
// (discrete actions) or a Gaussian with a state-independent log-std.
type ActorCritic struct {
	dev           gpu.Device
	actor, critic network
	hasCritic     bool
	discrete      bool
	obsDim, nOut  int

	params, grads   gpu.Tensor
	logStd, dLogStd gpu.Tensor // Gaussian only
	names           []NamedTensor

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
	actorSizes := append(append([]int{a.obsDim}, b.Hidden...), a.nOut)
	criticSizes := append(append([]int{a.obsDim}, b.Hidden...), 1)
	total := countParams(actorSizes)
	if a.hasCritic {
		total += countParams(criticSizes)
	}
	if !a.discrete {
		total += a.nOut
	}
	a.params = b.Device.Alloc(1, total)
	a.grads = b.Device.Alloc(1, total)
	host := make([]float32, total)
	off := 0
	a.actor = a.layout("actor", actorSizes, act, &off, host, b.RNG, 0.01)
	if a.hasCritic {
		a.critic = a.layout("critic", criticSizes, act, &off, host, b.RNG, 1)
	}
	if !a.discrete {
		a.logStd, a.dLogStd = layoutLogStd(a.params, a.grads, off, a.nOut, b.LogStdInit, host)
		a.names = append(a.names, NamedTensor{Name: "actor_logstd", T: a.logStd})
	}
	b.Device.Upload(a.params, host)
	a.actorPass, a.criticPass = a.runActor, a.runCritic
	a.policyStep, a.valueStep = a.actPolicy, a.actValues
	return a, nil
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

// layoutLogStd carves a Gaussian policy's n log-stds out of the flat tensors
// at off, the last parameters, and sets them to init in host.
func layoutLogStd(params, grads gpu.Tensor, off, n int, init float64, host []float32) (logStd, dLogStd gpu.Tensor) {
	for j := 0; j < n; j++ {
		host[off+j] = float32(init)
	}
	return params.Slice(off, 1, n), grads.Slice(off, 1, n)
}

// newLinear is the in×out layer whose weight and then bias start at off in
// the flat parameter and gradient tensors.
func newLinear(params, grads gpu.Tensor, off, in, out int) linear {
	return linear{in: in, out: out,
		w: params.Slice(off, in, out), dw: grads.Slice(off, in, out),
		b: params.Slice(off+in*out, 1, out), db: grads.Slice(off+in*out, 1, out)}
}

// storeTransposed writes a PyTorch out×in weight torch into host, stored in×out.
func storeTransposed(host, torch []float32, in, out int) {
	for o := 0; o < out; o++ {
		for j := 0; j < in; j++ {
			host[j*out+o] = torch[o*in+j]
		}
	}
}

func countParams(sizes []int) int {
	n := 0
	for i := 1; i < len(sizes); i++ {
		n += sizes[i-1]*sizes[i] + sizes[i]
	}
	return n
}

// layout carves one network's layers out of the flat tensors and
// initialises their weights in host (biases stay zero).
func (a *ActorCritic) layout(name string, sizes []int, act gpu.Activation, off *int, host []float32, rng *rand.Rand, headGain float64) network {
	n := network{act: act}
	for i := 1; i < len(sizes); i++ {
		in, out := sizes[i-1], sizes[i]
		l := newLinear(a.params, a.grads, *off, in, out)
		gain := math.Sqrt2
		if i == len(sizes)-1 {
			gain = headGain
		}
		torch := make([]float32, in*out)
		orthogonal(torch, out, in, gain, rng) // PyTorch's out×in
		storeTransposed(host[*off:], torch, in, out)
		// PyTorch numbers a Sequential's modules: Linear layers sit at
		// even indices with the activations between them.
		idx := 2 * (i - 1)
		a.names = append(a.names,
			NamedTensor{Name: fmt.Sprintf("%s.%d.weight", name, idx), T: l.w, Transposed: true},
			NamedTensor{Name: fmt.Sprintf("%s.%d.bias", name, idx), T: l.b})
		*off += in*out + out
		n.layers = append(n.layers, l)
	}
	return n
}

// Params implements Learner.
func (a *ActorCritic) Params() gpu.Tensor { return a.params }

// Grads implements Learner.
func (a *ActorCritic) Grads() gpu.Tensor { return a.grads }

// Tensors implements Learner.
func (a *ActorCritic) Tensors() []NamedTensor { return a.names }

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
	p.Out, p.DOut = a.actor.forward(dev, a.mb.obs), a.actor.outGrad(rows)
	if a.discrete {
		dev.CategoricalPPO(p)
	} else {
		p.LogStd, p.DLogStd = a.logStd, a.dLogStd
		dev.GaussianPPO(p)
	}
	a.actor.backward(dev)
}

// runCritic is the critic's forward pass, value loss and backward pass;
// without value-loss arguments the critic gets zero gradients.
func (a *ActorCritic) runCritic(dev gpu.Device) {
	v, rows := a.mb.value, a.mb.obs.Rows
	if v == nil {
		for _, l := range a.critic.layers {
			dev.Fill(l.dw, 0)
			dev.Fill(l.db, 0)
		}
		return
	}
	v.Value, v.DValue = a.critic.forward(dev, a.mb.obs), a.critic.outGrad(rows)
	dev.ValueLoss(*v)
	a.critic.backward(dev)
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
	dev.Download(out, a.actor.forward(dev, p.obs))
	if !a.discrete {
		dev.Download(a.hostLogStd, a.logStd)
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
	dev.Download(a.acting.values, a.critic.forward(dev, a.acting.obs))
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
