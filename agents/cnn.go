package agents

import (
	"errors"
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
		Name:        "cnn",
		Observes:    Images,
		Description: "convolutional actor-critic for image observations (MinAtar): conv layers, a shared torso, policy and value heads",
		Keys:        append([]Key{convKey}, actorCriticKeys...),
		New:         func(b Build) (Agent, error) { return NewCNN(b) },
		Estimate:    cnnEstimate,
	})
}

// convKey is agent.conv, the cnn's own key.
var convKey = Key{Name: "conv", Default: [][]int{{16, 3, 1}},
	Check:    "layers of [out_channels, kernel, stride] or [out_channels, kernel, stride, padding]",
	Validate: func(v any) error { return checkConv(v.([][]int)) },
	Doc:      "Convolution layers of the cnn agent, in order: [out_channels, kernel, stride] or [out_channels, kernel, stride, padding] each (square kernels, ReLU after each), followed by the fully connected layers."}

// checkConv checks agent.conv's layers one by one; whether they fit the
// observation is NewCNN's to say.
func checkConv(layers [][]int) error {
	if len(layers) == 0 {
		return errors.New("needs at least one layer, e.g. [[16, 3, 1]] (out_channels, kernel, stride[, padding])")
	}
	for i, l := range layers {
		if len(l) != 3 && len(l) != 4 {
			return fmt.Errorf("layer %d is %v: give [out_channels, kernel, stride] or [out_channels, kernel, stride, padding]", i+1, l)
		}
		pad := 0
		if len(l) == 4 {
			pad = l[3]
		}
		switch {
		case l[0] < 1 || l[0] > 65536:
			return fmt.Errorf("layer %d has %d output channels; give 1 to 65536", i+1, l[0])
		case l[1] < 1 || l[1] > 64:
			return fmt.Errorf("layer %d has kernel size %d; give 1 to 64", i+1, l[1])
		case l[2] < 1 || l[2] > 64:
			return fmt.Errorf("layer %d has stride %d; give 1 to 64", i+1, l[2])
		case pad < 0 || pad >= l[1]:
			return fmt.Errorf("layer %d has padding %d; give 0 to kernel−1 (%d)", i+1, pad, l[1]-1)
		}
	}
	return nil
}

// CNN is a convolutional actor-critic for image observations (a Box with a
// Shape, such as MinAtar's 10×10×C): convolutions with ReLU (agent.conv),
// flattened, then fully connected layers (agent.hidden, agent.activation),
// then a linear policy head (categorical logits or Gaussian means with a
// state-independent log-std) and a linear value head.
//
// Unlike the MLP agent, actor and critic share the torso (convolutions and
// hidden layers), as CleanRL's Atari PPO (ppo_atari.py) and pgx's MinAtar
// PPO do: the torso is most of the work, so sharing it halves the cost of
// every pass, and its gradient is the sum of the policy loss's and
// vf_coef times the value loss's. Initialisation is CleanRL's Atari one:
// orthogonal with gain √2 for convolutions and hidden layers, 0.01 for the
// policy head and 1 for the value head, zero biases.
//
// Convolutions run as matrix products over patches (gpu.Device.Im2Col),
// channel-last throughout, so the observation is read as it comes; a
// device with direct kernels (gpu.DirectConv: the CPU with AVX-512, on
// MinAtar's layer) reads the pixels in place instead, with the same bits. The
// exported tensors have PyTorch's layouts, so a checkpoint's weights load
// with load_state_dict into this model (scripts/check_cnn_checkpoint.py
// checks it), shown for agent.conv = [[16, 3, 1]], agent.hidden = [128],
// agent.activation = "relu" on MinAtar (H = W = 10, C channels):
//
//	class CNN(nn.Module):
//	    def __init__(self, H, W, C, n_actions):
//	        super().__init__()
//	        self.shape = (H, W, C)
//	        self.torso = nn.Sequential(
//	            nn.Conv2d(C, 16, kernel_size=3, stride=1, padding=0),  # torso.0
//	            nn.ReLU(),
//	            nn.Flatten(),                                          # torso.2
//	            nn.Linear(16 * 8 * 8, 128),                            # torso.3
//	            nn.ReLU())   # nn.Tanh() for agent.activation = "tanh"
//	        self.actor = nn.Linear(128, n_actions)
//	        self.critic = nn.Linear(128, 1)
//
//	    def forward(self, obs):  # obs: (B, H·W·C), channel-last as the env gives it
//	        x = obs.view(-1, *self.shape).permute(0, 3, 1, 2)  # to NCHW
//	        h = self.torso(x)
//	        return self.actor(h), self.critic(h)
//
// With more layers the Sequential goes on the same way: convolution i at
// index 2i followed by its ReLU, the Flatten at 2n (n convolutions), hidden
// layer j at 2n+1+2j followed by its activation. A Gaussian policy adds
// "actor_logstd"; without a critic (grpo, rloo) there is no "critic.*".
type CNN struct {
	dev       gpu.Device
	hasCritic bool
	obsDim    int

	convs  []*layers.Conv
	dense  layers.Stack // hidden layers (*layers.Dense)
	pi, vf *layers.Dense
	head   *dist.Head
	params layers.Params
	obsDev gpu.Tensor // observations being acted on, for the most rows yet

	// fused: the last convolution hands its output to the first hidden
	// layer block by block (a direct layer; layers.Conv.ForwardDense).
	fused bool
	// The last forward pass: its rows and the heads' outputs.
	rows         int
	piOut, vfOut gpu.Tensor
}

// NewCNN builds the agent on b.Device.
func NewCNN(b Build) (*CNN, error) {
	if b.Obs.Kind != envs.Box || len(b.Obs.Shape) != 3 {
		return nil, fmt.Errorf("cnn needs image observations (a Box with a height × width × channels shape, such as MinAtar's), but %v has no image shape; use agent.name=\"mlp\"", b.Obs)
	}
	H, W, C := b.Obs.Shape[0], b.Obs.Shape[1], b.Obs.Shape[2]
	if H*W*C != b.Obs.Dim || H < 1 || W < 1 || C < 1 {
		return nil, fmt.Errorf("observation shape %v does not hold its %d values", b.Obs.Shape, b.Obs.Dim)
	}
	conv, hidden := b.Config.Layers("conv"), b.Config.Ints("hidden")
	if len(conv) == 0 {
		return nil, errors.New("cnn needs at least one convolution layer (agent.conv)")
	}
	if len(hidden) == 0 {
		return nil, errors.New("cnn needs at least one hidden layer (agent.hidden)")
	}
	act, err := gpu.ParseActivation(b.Config.String("activation"))
	if err != nil {
		return nil, err
	}
	d, err := b.distribution()
	if err != nil {
		return nil, err
	}
	a := &CNN{dev: b.Device, obsDim: b.Obs.Dim, hasCritic: !b.NoCritic}
	// The shapes, layer by layer, before anything is allocated.
	geoms, err := convGeometry(conv, H, W, C)
	if err != nil {
		return nil, err
	}
	relu := layers.Orthogonal(math.Sqrt2, b.RNG)
	chunk := 0 // the smallest over the layers: patches of a chunk of images go through them all
	for i, g := range geoms {
		c := layers.NewConv(&a.params, fmt.Sprintf("torso.%d", 2*i), g, conv[i][0], b.Device, relu)
		if ch, _ := c.Plan(); ch > 0 && (chunk == 0 || ch < chunk) {
			chunk = ch
		}
		a.convs = append(a.convs, c)
	}
	for _, c := range a.convs {
		_, blocked := c.Plan()
		c.SetPlan(chunk, blocked)
	}
	last := a.convs[len(a.convs)-1]
	h, w, c := last.OutShape()
	in := last.Width()
	for i, out := range hidden {
		name := fmt.Sprintf("torso.%d", 2*len(a.convs)+1+2*i)
		if i == 0 { // exported as PyTorch's Linear after nn.Flatten
			a.dense = append(a.dense, layers.NewDenseOnImage(&a.params, name, h, w, c, out, act, relu))
		} else {
			a.dense = append(a.dense, layers.NewDense(&a.params, name, in, out, act, relu))
		}
		in = out
	}
	a.pi = layers.NewDense(&a.params, "actor", in, d.Width(), gpu.Identity, layers.Orthogonal(0.01, b.RNG))
	if a.hasCritic {
		a.vf = layers.NewDense(&a.params, "critic", in, 1, gpu.Identity, layers.Orthogonal(1, b.RNG))
	}
	a.head = dist.NewHead(d, &a.params, "actor_logstd", layers.Fill(b.Config.Float("log_std_init")))
	a.params.Build(b.Device)
	a.fused = last.Direct()
	return a, nil
}

// convGeometry checks agent.conv's layers on an H×W×C image and returns
// each one's geometry.
func convGeometry(conv [][]int, H, W, C int) ([]gpu.Conv2D, error) {
	var out []gpu.Conv2D
	h, w, c := H, W, C
	for i, l := range conv {
		if len(l) < 3 {
			return nil, fmt.Errorf("agent.conv layer %d is %v: give [out_channels, kernel, stride] or [out_channels, kernel, stride, padding]", i+1, l)
		}
		g := gpu.Conv2D{H: h, W: w, C: c, K: l[1], Stride: l[2]}
		if len(l) > 3 {
			g.Pad = l[3]
		}
		if err := g.Valid(); err != nil {
			return nil, fmt.Errorf("agent.conv layer %d on its %d×%d×%d input: %v", i+1, h, w, c, err)
		}
		out = append(out, g)
		h, w = g.Out()
		c = l[0]
	}
	return out, nil
}

// Params implements Learner.
func (a *CNN) Params() gpu.Tensor { return a.params.Flat() }

// Grads implements Learner.
func (a *CNN) Grads() gpu.Tensor { return a.params.Grads() }

// Tensors implements Learner.
func (a *CNN) Tensors() []NamedTensor { return a.params.Named() }

// forward runs the torso on x (rows×obsDim) and the heads asked for,
// keeping every activation for backward.
func (a *CNN) forward(x gpu.Tensor, policy, value bool) {
	d := a.dev
	a.rows = x.Rows
	h := x
	last := len(a.convs) - 1
	for _, c := range a.convs[:last] {
		h = c.Forward(d, h)
	}
	if a.fused { // the first hidden layer's product a block of images at a time
		h = a.dense[1:].Forward(d, a.convs[last].ForwardDense(d, h, a.first()))
	} else {
		h = a.dense.Forward(d, a.convs[last].Forward(d, h))
	}
	if policy {
		a.piOut = a.pi.Forward(d, h)
	}
	if value && a.hasCritic {
		a.vfOut = a.vf.Forward(d, h)
	}
}

func (a *CNN) first() *layers.Dense { return a.dense[0].(*layers.Dense) }

// backward turns the heads' output gradients (the policy's, and the
// value's when value) into every parameter gradient.
func (a *CNN) backward(value bool) {
	d, rows := a.dev, a.rows
	top := a.dense[len(a.dense)-1]
	dFeat := top.Grad(rows)
	// The torso's output gets both heads' gradients, then goes through its
	// activation.
	through := top.Activation()
	if a.hasCritic && value {
		a.pi.Backward(d, a.pi.Grad(rows), layers.InputGrad{DX: dFeat})
		a.vf.Backward(d, a.vf.Grad(rows), layers.InputGrad{DX: dFeat, Add: true, Through: through})
	} else {
		a.pi.Backward(d, a.pi.Grad(rows), layers.InputGrad{DX: dFeat, Through: through})
		if a.hasCritic {
			layers.Stack{a.vf}.ZeroGrads(d)
		}
	}
	first := a.first()
	a.dense[1:].Backward(d, dFeat, layers.InputGrad{DX: first.Grad(rows), Through: first.Activation()})
	// The first hidden layer's gradients, then the convolutions', the
	// last one's taken through the first hidden layer (in one pass where
	// the device can).
	n := len(a.convs)
	below := func(i int) layers.InputGrad { // convolution i's input gradient
		if i == 0 {
			return layers.InputGrad{}
		}
		return layers.InputGrad{DX: a.convs[i-1].Grad(rows), Through: gpu.ReLU}
	}
	first.Backward(d, first.Grad(rows), layers.InputGrad{})
	a.convs[n-1].BackwardThroughDense(d, first, first.Grad(rows), below(n-1))
	for i := n - 2; i >= 0; i-- {
		a.convs[i].Backward(d, a.convs[i].Grad(rows), below(i))
	}
}

// Gradients implements Learner: one forward pass of the shared torso, the
// fused losses on both heads, one backward pass.
func (a *CNN) Gradients(obs gpu.Tensor, p gpu.PPOPolicyArgs, v *gpu.ValueArgs) {
	rows := obs.Rows
	value := v != nil && a.hasCritic
	a.forward(obs, true, value)
	p.Out, p.DOut = a.piOut, a.pi.Grad(rows)
	a.head.Loss(a.dev, p)
	if value {
		v.Value, v.DValue = a.vfOut, a.vf.Grad(rows)
		a.dev.ValueLoss(*v)
	}
	a.backward(value)
}

// Values implements Agent.
func (a *CNN) Values(obs []float32, n int, values []float32) {
	if !a.hasCritic {
		clear(values[:n])
		return
	}
	a.forward(upload(a.dev, &a.obsDev, obs, n, a.obsDim), false, true)
	a.dev.Download(values[:n], a.vfOut)
}

// PolicyOutputs writes the policy head's raw outputs for n observations
// into out (n × width, row by row): logits for a discrete policy, means
// for a Gaussian one. Act samples from these; a caller inspecting the
// policy, or checking an exported model, reads them here.
func (a *CNN) PolicyOutputs(obs []float32, n int, out []float32) {
	a.forward(upload(a.dev, &a.obsDev, obs, n, a.obsDim), true, false)
	a.dev.Download(out[:a.piOut.Len()], a.piOut)
}

// Act implements Agent: one pass of the torso gives both heads; sampling
// happens on the host with the caller's random stream, as the MLP's.
func (a *CNN) Act(obs []float32, n int, rng *rand.Rand, deterministic bool, actions, logp, values []float32) {
	a.forward(upload(a.dev, &a.obsDev, obs, n, a.obsDim), true, true)
	if a.hasCritic {
		a.dev.Download(values[:n], a.vfOut)
	} else {
		clear(values[:n])
	}
	a.head.Act(a.dev, a.piOut, rng, deterministic, actions, logp)
}

// cnnEstimate counts the convolutions — per layer its weights, and for a
// minibatch and for acting its patches (batch × OH × OW × K·K·C), outputs
// and their gradients (batch × OH × OW × channels each) — then the dense
// layers as the mlp's (the hidden layers twice, where the heads share them:
// an overestimate by at most one torso). Observations without an image
// shape cost nothing: NewCNN refuses them.
func cnnEstimate(w Workload) Estimate {
	var e Estimate
	if len(w.Obs.Shape) != 3 {
		return e
	}
	mb, envs := float64(w.Minibatch), float64(w.Acting)
	h, wd, c := w.Obs.Shape[0], w.Obs.Shape[1], w.Obs.Shape[2]
	var convActs, macs float64
	for i, l := range w.Config.Layers("conv") {
		if len(l) < 3 || l[1] < 1 || l[2] < 1 {
			break // refused by NewCNN with its own message
		}
		pad := 0
		if len(l) > 3 {
			pad = l[3]
		}
		oh, ow := (h+2*pad-l[1])/l[2]+1, (wd+2*pad-l[1])/l[2]+1
		if oh < 1 || ow < 1 {
			break
		}
		patch := float64(l[1] * l[1] * c)
		e.Params += patch*float64(l[0]) + float64(l[0])
		e.Widest = max(e.Widest, patch*float64(l[0]))
		convActs += (mb + envs) * float64(oh*ow) * (patch + 2*float64(l[0]))
		macs += layerMACs(oh*ow*l[1]*l[1]*c*l[0], i == 0)
		h, wd, c = oh, ow, l[0]
	}
	in0 := h * wd * c
	convActs += float64(w.Threads) * gpu.ConvBlock * float64(in0) // per core, a block of frames' output gradient
	params, widest, acts := denseCost(w, float64(in0))
	e.Params += params
	e.Widest = max(e.Widest, widest)
	sizes := append([]int{in0}, w.Config.Ints("hidden")...)
	for i := 1; i < len(sizes); i++ {
		macs += layerMACs(sizes[i-1]*sizes[i], false)
	}
	feat := sizes[len(sizes)-1]
	macs += layerMACs(feat*headWidth(w.Act), false) + layerMACs(feat, false) // the heads
	e.FLOPs = 2 * macs
	e.Weights = MemoryPart{Name: "the networks' weights (agent.hidden)", Fix: "a narrower agent.hidden"}
	e.Activations = []MemoryPart{
		{Name: "the convolutions' activations (minibatch × height × width × channels per agent.conv layer)",
			Fix: "more ppo.num_minibatches, a smaller batch, fewer channels or a larger stride in agent.conv", Bytes: f32 * convActs},
		denseActivations(acts)}
	return e
}
