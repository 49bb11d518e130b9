package agents

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

func init() {
	Register(Spec{
		Name:        "cnn",
		Description: "convolutional actor-critic for image observations (MinAtar): conv layers, a shared torso, policy and value heads",
		New:         func(b Build) (Agent, error) { return NewCNN(b) },
	})
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
	discrete  bool
	hasCritic bool
	obsDim    int
	nOut      int
	act       gpu.Activation

	convs  []convLayer
	dense  []linear // hidden layers
	pi, vf linear   // policy and value heads

	params, grads   gpu.Tensor
	logStd, dLogStd gpu.Tensor // Gaussian only
	names           []NamedTensor

	// Activations of the last forward pass and gradient buffers, for up to
	// cap rows: per convolution its patches (of a chunk of images, reused
	// for their gradient), outputs and output gradients; per hidden layer
	// its outputs and their gradients; the heads' outputs and gradients.
	cap               int
	cols, cOut, cGrad []gpu.Tensor
	dOut, dGrad       []gpu.Tensor
	piOut, piGrad     gpu.Tensor
	vfOut, vfGrad     gpu.Tensor
	rows              int
	x                 gpu.Tensor // the last forward pass's input

	// direct is set for the convolutions the device computes without
	// patches (gpu.DirectConv: the CPU with AVX-512 on MinAtar's layer).
	direct []bool
	dconv  gpu.DirectConv

	// blocked: the convolutions' weight and bias gradients are summed by
	// blocks of gpu.ConvBlock images, whose sums are then added in order
	// (dwBlock, dbBlock hold a block's), as the CPU's direct kernels sum;
	// on the CPU every route then gives the same bits.
	blocked          bool
	dwBlock, dbBlock []gpu.Tensor

	// chunk is how many images a convolution's patches are made for at a
	// time (all of them when 0; a multiple of gpu.ConvBlock when blocked). On the CPU, a minibatch's patches (9 MB
	// for MinAtar's 1,024 frames) would leave the caches before the product
	// reads them; a chunk's stay in L2, at the price of making them again
	// for the backward pass. A GPU takes the whole minibatch at once.
	chunk int

	actBuffers
}

// convLayer is one convolution: weights (K·K·C)×out, rows in the patch
// order of gpu.Conv2D ((ky·K + kx)·C + c), exported as out×C×K×K.
type convLayer struct {
	g        gpu.Conv2D
	out      int
	oh, ow   int
	w, b     gpu.Tensor
	dw, db   gpu.Tensor
	outWidth int // oh·ow·out
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
	if len(b.Conv) == 0 {
		return nil, errors.New("cnn needs at least one convolution layer (agent.conv)")
	}
	if len(b.Hidden) == 0 {
		return nil, errors.New("cnn needs at least one hidden layer (agent.hidden)")
	}
	act, err := gpu.ParseActivation(b.Activation)
	if err != nil {
		return nil, err
	}
	a := &CNN{dev: b.Device, obsDim: b.Obs.Dim, hasCritic: !b.NoCritic, act: act}
	_, onCPU := b.Device.(*gpu.CPU)
	a.blocked = onCPU
	if a.discrete, a.nOut, err = policyWidth(b.Act); err != nil {
		return nil, err
	}
	// The shapes, layer by layer, before anything is allocated.
	h, w, c := H, W, C
	total := 0
	for i, l := range b.Conv {
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
		cl := convLayer{g: g, out: l[0]}
		cl.oh, cl.ow = g.Out()
		cl.outWidth = cl.oh * cl.ow * cl.out
		a.convs = append(a.convs, cl)
		total += g.Patch()*cl.out + cl.out
		dc, ok := b.Device.(gpu.DirectConv)
		direct := ok && dc.ConvDirect(g, cl.out)
		a.direct = append(a.direct, direct)
		if direct {
			a.dconv = dc
		}
		if onCPU { // the smallest chunk over the layers: about 1 MB of patches
			perImage := cl.oh * cl.ow * g.Patch() * 4
			if c := max(1, (1<<20)/perImage/gpu.ConvBlock) * gpu.ConvBlock; a.chunk == 0 || c < a.chunk {
				a.chunk = c
			}
		}
		h, w, c = cl.oh, cl.ow, cl.out
	}
	sizes := append([]int{h * w * c}, b.Hidden...)
	total += countParams(sizes)
	featDim := sizes[len(sizes)-1] // width of the torso's output
	total += featDim*a.nOut + a.nOut
	if a.hasCritic {
		total += featDim + 1
	}
	if !a.discrete {
		total += a.nOut
	}
	a.params = b.Device.Alloc(1, total)
	a.grads = b.Device.Alloc(1, total)
	host := make([]float32, total)
	off := 0
	for i := range a.convs {
		a.layoutConv(i, &off, host, b.RNG)
	}
	for i := 1; i < len(sizes); i++ {
		var index []int
		if i == 1 {
			index = flattenIndex(h, w, c, sizes[1])
		}
		a.dense = append(a.dense, a.layoutLinear(fmt.Sprintf("torso.%d", 2*len(a.convs)+1+2*(i-1)), sizes[i-1], sizes[i], math.Sqrt2, index, &off, host, b.RNG))
	}
	a.pi = a.layoutLinear("actor", featDim, a.nOut, 0.01, nil, &off, host, b.RNG)
	if a.hasCritic {
		a.vf = a.layoutLinear("critic", featDim, 1, 1, nil, &off, host, b.RNG)
	}
	if !a.discrete {
		a.logStd, a.dLogStd = layoutLogStd(a.params, a.grads, off, a.nOut, b.LogStdInit, host)
		a.names = append(a.names, NamedTensor{Name: "actor_logstd", T: a.logStd})
	}
	b.Device.Upload(a.params, host)
	return a, nil
}

// layoutConv carves convolution i out of the flat tensors and initialises
// it: an orthogonal out×(C·K·K) matrix, as torch.nn.init.orthogonal_ makes
// for a Conv2d weight, stored in patch order.
func (a *CNN) layoutConv(i int, off *int, host []float32, rng *rand.Rand) {
	l := &a.convs[i]
	rows, out := l.g.Patch(), l.out
	l.w, l.dw = a.params.Slice(*off, rows, out), a.grads.Slice(*off, rows, out)
	l.b, l.db = a.params.Slice(*off+rows*out, 1, out), a.grads.Slice(*off+rows*out, 1, out)
	K, C := l.g.K, l.g.C
	// Exported element ((o·C + c)·K + ky)·K + kx is stored at row
	// (ky·K + kx)·C + c, column o.
	index := make([]int, rows*out)
	for o := 0; o < out; o++ {
		for c := 0; c < C; c++ {
			for ky := 0; ky < K; ky++ {
				for kx := 0; kx < K; kx++ {
					index[((o*C+c)*K+ky)*K+kx] = ((ky*K+kx)*C+c)*out + o
				}
			}
		}
	}
	torch := make([]float32, rows*out)
	orthogonal(torch, out, rows, math.Sqrt2, rng)
	for e, s := range index {
		host[*off+s] = torch[e]
	}
	name := fmt.Sprintf("torso.%d", 2*i)
	a.names = append(a.names,
		NamedTensor{Name: name + ".weight", T: l.w, Shape: []int{out, C, K, K}, Index: index},
		NamedTensor{Name: name + ".bias", T: l.b})
	*off += rows*out + out
}

// flattenIndex maps the weight of the first hidden layer, stored in×out
// with inputs channel-last ((y·w + x)·c + ch), onto PyTorch's out×in after
// nn.Flatten of an NCHW map (input ch·h·w + y·w + x).
func flattenIndex(h, w, c, out int) []int {
	in := h * w * c
	index := make([]int, in*out)
	for o := 0; o < out; o++ {
		for ch := 0; ch < c; ch++ {
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					index[o*in+(ch*h+y)*w+x] = ((y*w+x)*c+ch)*out + o
				}
			}
		}
	}
	return index
}

// layoutLinear carves one fully connected layer out of the flat tensors and
// initialises it orthogonally with gain; index, when set, is the layer's
// export mapping (flattenIndex), else the weight exports transposed.
func (a *CNN) layoutLinear(name string, in, out int, gain float64, index []int, off *int, host []float32, rng *rand.Rand) linear {
	l := newLinear(a.params, a.grads, *off, in, out)
	torch := make([]float32, in*out)
	orthogonal(torch, out, in, gain, rng) // PyTorch's out×in
	wt := NamedTensor{Name: name + ".weight", T: l.w, Transposed: true}
	if index != nil {
		wt = NamedTensor{Name: name + ".weight", T: l.w, Shape: []int{out, in}, Index: index}
		for e, s := range index {
			host[*off+s] = torch[e]
		}
	} else {
		storeTransposed(host[*off:], torch, in, out)
	}
	a.names = append(a.names, wt, NamedTensor{Name: name + ".bias", T: l.b})
	*off += in*out + out
	return l
}

// Params implements Learner.
func (a *CNN) Params() gpu.Tensor { return a.params }

// Grads implements Learner.
func (a *CNN) Grads() gpu.Tensor { return a.grads }

// Tensors implements Learner.
func (a *CNN) Tensors() []NamedTensor { return a.names }

// reserve sizes the activation buffers for rows rows; it allocates only
// when rows exceeds every earlier call's (the minibatch, then never again).
func (a *CNN) reserve(rows int) {
	if rows <= a.cap {
		return
	}
	d := a.dev
	a.cols, a.cOut, a.cGrad = a.cols[:0], a.cOut[:0], a.cGrad[:0]
	for i, l := range a.convs {
		var cols gpu.Tensor // patches, or an input gradient's: none for a direct first layer
		if !a.direct[i] || i > 0 {
			cols = d.Alloc(a.chunkOf(rows)*l.oh*l.ow, l.g.Patch())
		}
		a.cols = append(a.cols, cols)
		a.cOut = append(a.cOut, d.Alloc(rows, l.outWidth))
		a.cGrad = append(a.cGrad, d.Alloc(rows, l.outWidth))
	}
	a.dOut, a.dGrad = a.dOut[:0], a.dGrad[:0]
	for _, l := range a.dense {
		a.dOut = append(a.dOut, d.Alloc(rows, l.out))
		a.dGrad = append(a.dGrad, d.Alloc(rows, l.out))
	}
	if a.blocked && a.dwBlock == nil {
		for _, l := range a.convs {
			a.dwBlock = append(a.dwBlock, d.Alloc(l.g.Patch(), l.out))
			a.dbBlock = append(a.dbBlock, d.Alloc(1, l.out))
		}
	}
	a.piOut, a.piGrad = d.Alloc(rows, a.nOut), d.Alloc(rows, a.nOut)
	if a.hasCritic {
		a.vfOut, a.vfGrad = d.Alloc(rows, 1), d.Alloc(rows, 1)
	}
	a.cap = rows
}

// forward runs the torso on x (rows×obsDim) and the heads asked for,
// keeping every activation for backward.
func (a *CNN) forward(x gpu.Tensor, policy, value bool) {
	d, rows := a.dev, x.Rows
	a.reserve(rows)
	a.rows, a.x = rows, x
	h, chunk := x, a.chunkOf(rows)
	// The first dense layer's product is taken with a direct last
	// convolution, a block of images at a time while its output is in cache.
	last := len(a.convs) - 1
	fused := a.direct[last] && len(a.dense) > 0
	for i, l := range a.convs {
		pos := l.oh * l.ow
		y := a.cOut[i].RowRange(0, rows)
		if a.direct[i] {
			if fused && i == last {
				a.dconv.ConvForwardDense(y, h, l.w, l.b, a.dOut[0].RowRange(0, rows), a.dense[0].w, l.g)
			} else {
				a.dconv.ConvForward(y, h, l.w, l.b, l.g)
			}
			h = y
			continue
		}
		yv := y.Reshape(rows*pos, l.out)
		for r0 := 0; r0 < rows; r0 += chunk {
			r1 := min(r0+chunk, rows)
			cols := a.cols[i].RowRange(0, (r1-r0)*pos)
			d.Im2Col(cols, h.RowRange(r0, r1), l.g)
			d.MatMul(yv.RowRange(r0*pos, r1*pos), cols, false, l.w, false, 0)
		}
		d.BiasAct(yv, l.b, gpu.ReLU)
		h = y
	}
	for i, l := range a.dense {
		y := a.dOut[i].RowRange(0, rows)
		if i > 0 || !fused {
			d.MatMul(y, h, false, l.w, false, 0)
		}
		d.BiasAct(y, l.b, a.act)
		h = y
	}
	if policy {
		y := a.piOut.RowRange(0, rows)
		d.MatMul(y, h, false, a.pi.w, false, 0)
		d.BiasAct(y, a.pi.b, gpu.Identity)
	}
	if value && a.hasCritic {
		y := a.vfOut.RowRange(0, rows)
		d.MatMul(y, h, false, a.vf.w, false, 0)
		d.BiasAct(y, a.vf.b, gpu.Identity)
	}
}

// backward turns the heads' output gradients (piGrad, and vfGrad when
// value) into every parameter gradient.
func (a *CNN) backward(value bool) {
	d, rows := a.dev, a.rows
	chunk := a.chunkOf(rows)
	feat := a.dOut[len(a.dense)-1].RowRange(0, rows)
	dFeat := a.dGrad[len(a.dense)-1].RowRange(0, rows)
	dy := a.piGrad.RowRange(0, rows)
	d.MatMul(a.pi.dw, feat, true, dy, false, 0)
	d.ColSum(a.pi.db, dy, 0)
	d.MatMul(dFeat, dy, false, a.pi.w, true, 0)
	if a.hasCritic {
		if value {
			dv := a.vfGrad.RowRange(0, rows)
			d.MatMul(a.vf.dw, feat, true, dv, false, 0)
			d.ColSum(a.vf.db, dv, 0)
			d.MatMul(dFeat, dv, false, a.vf.w, true, 1) // the torso gets both heads' gradients
		} else {
			d.Fill(a.vf.dw, 0)
			d.Fill(a.vf.db, 0)
		}
	}
	for i := len(a.dense) - 1; i >= 0; i-- {
		l := a.dense[i]
		g := a.dGrad[i].RowRange(0, rows)
		d.ActGrad(g, a.dOut[i].RowRange(0, rows), a.act)
		prev, dprev := a.cOut[len(a.convs)-1].RowRange(0, rows), a.cGrad[len(a.convs)-1].RowRange(0, rows)
		if i > 0 {
			prev, dprev = a.dOut[i-1].RowRange(0, rows), a.dGrad[i-1].RowRange(0, rows)
		}
		d.MatMul(l.dw, prev, true, g, false, 0)
		d.ColSum(l.db, g, 0)
		if i > 0 {
			d.MatMul(dprev, g, false, l.w, true, 0)
			continue
		}
		if len(a.convs) == 1 && a.direct[0] {
			// The convolution's gradients straight from the dense layer's,
			// its output gradient made a block of images at a time.
			c := a.convs[0]
			a.dconv.ConvGradsThroughDense(c.dw, c.db, a.x, prev, l.w, g, c.g)
			return
		}
		gpu.MatMulActGrad(d, dprev, g, l.w, prev, gpu.ReLU) // through the last convolution's ReLU at once
	}
	for i := len(a.convs) - 1; i >= 0; i-- {
		l := a.convs[i]
		pos := l.oh * l.ow
		g := a.cGrad[i].RowRange(0, rows)
		if i < len(a.convs)-1 { // the last one's went through its ReLU above
			d.ActGrad(g, a.cOut[i].RowRange(0, rows), gpu.ReLU)
		}
		gv := g.Reshape(rows*pos, l.out)
		in := a.x // the layer's input
		if i > 0 {
			in = a.cOut[i-1].RowRange(0, rows)
		}
		patches := !a.direct[i] // the weight gradient from patches
		if !patches {
			a.dconv.ConvWeightGrad(l.dw, in, gv, l.g)
		}
		// Chunks of patches, or of the input gradient, which takes the
		// patches' buffer.
		for r0 := 0; r0 < rows && (patches || i > 0); r0 += chunk {
			r1 := min(r0+chunk, rows)
			cols, gc := a.cols[i].RowRange(0, (r1-r0)*pos), gv.RowRange(r0*pos, r1*pos)
			if patches {
				if chunk < rows { // else the forward pass's patches are still there
					d.Im2Col(cols, in.RowRange(r0, r1), l.g)
				}
				a.patchWeightGrad(i, cols, gc, r0, r1)
			}
			if i > 0 {
				// The patches are spent: their buffer takes their gradient.
				d.MatMul(cols, gc, false, l.w, true, 0)
				d.Col2Im(a.cGrad[i-1].RowRange(r0, r1), cols, l.g)
			}
		}
		a.biasGrad(i, gv, rows)
	}
}

// patchWeightGrad adds images [r0, r1)'s share of convolution i's weight
// gradient from their patches cols and output gradient gc. Blocked, each
// block's product is added to the gradient; else the chunks continue one
// product (with 16 or more output channels its bits; a narrower product
// goes through scratch and is added chunk by chunk: other bits, as
// reproducible).
func (a *CNN) patchWeightGrad(i int, cols, gc gpu.Tensor, r0, r1 int) {
	l, pos := a.convs[i], a.convs[i].oh*a.convs[i].ow
	if !a.blocked {
		a.dev.MatMul(l.dw, cols, true, gc, false, float32(min(r0, 1)))
		return
	}
	for b0 := r0; b0 < r1; b0 += gpu.ConvBlock {
		b1 := min(b0+gpu.ConvBlock, r1)
		a.dev.MatMul(a.dwBlock[i], cols.RowRange((b0-r0)*pos, (b1-r0)*pos), true, gc.RowRange((b0-r0)*pos, (b1-r0)*pos), false, 0)
		a.addBlock(l.dw, a.dwBlock[i], b0 == 0)
	}
}

// biasGrad sets convolution i's bias gradient from its output gradient gv
// ((rows·OH·OW)×out), by blocks when blocked.
func (a *CNN) biasGrad(i int, gv gpu.Tensor, rows int) {
	l, pos := a.convs[i], a.convs[i].oh*a.convs[i].ow
	if !a.blocked {
		a.dev.ColSum(l.db, gv, 0)
		return
	}
	for b0 := 0; b0 < rows; b0 += gpu.ConvBlock {
		b1 := min(b0+gpu.ConvBlock, rows)
		a.dev.ColSum(a.dbBlock[i], gv.RowRange(b0*pos, b1*pos), 0)
		a.addBlock(l.db, a.dbBlock[i], b0 == 0)
	}
}

// addBlock sets sum to a block's sums (first) or adds them: as a column
// sum of one row, sum·1 + block, which rounds as an addition.
func (a *CNN) addBlock(sum, block gpu.Tensor, first bool) {
	if first {
		a.dev.Copy(sum, block)
		return
	}
	n := sum.Len()
	a.dev.ColSum(sum.Reshape(1, n), block.Reshape(1, n), 1)
}

// chunkOf is how many of rows images get their patches made at a time.
func (a *CNN) chunkOf(rows int) int {
	if a.chunk == 0 {
		return rows
	}
	return min(a.chunk, rows)
}

// Gradients implements Learner: one forward pass of the shared torso, the
// fused losses on both heads, one backward pass.
func (a *CNN) Gradients(obs gpu.Tensor, p gpu.PPOPolicyArgs, v *gpu.ValueArgs) {
	rows := obs.Rows
	value := v != nil && a.hasCritic
	a.forward(obs, true, value)
	p.Out, p.DOut = a.piOut.RowRange(0, rows), a.piGrad.RowRange(0, rows)
	if a.discrete {
		a.dev.CategoricalPPO(p)
	} else {
		p.LogStd, p.DLogStd = a.logStd, a.dLogStd
		a.dev.GaussianPPO(p)
	}
	if value {
		v.Value, v.DValue = a.vfOut.RowRange(0, rows), a.vfGrad.RowRange(0, rows)
		a.dev.ValueLoss(*v)
	}
	a.backward(value)
}

func (a *CNN) reserveAct(n int) { a.actBuffers.grow(a.dev, n, a.obsDim, a.nOut) }

// Values implements Agent.
func (a *CNN) Values(obs []float32, n int, values []float32) {
	if !a.hasCritic {
		clear(values[:n])
		return
	}
	a.reserveAct(n)
	x := a.obsDev.RowRange(0, n)
	a.dev.Upload(x, obs[:n*a.obsDim])
	a.forward(x, false, true)
	a.dev.Download(values[:n], a.vfOut.RowRange(0, n))
}

// PolicyOutputs writes the policy head's raw outputs for n observations
// into out (n × width, row by row): logits for a discrete policy, means
// for a Gaussian one. Act samples from these; a caller inspecting the
// policy, or checking an exported model, reads them here.
func (a *CNN) PolicyOutputs(obs []float32, n int, out []float32) {
	a.reserveAct(n)
	x := a.obsDev.RowRange(0, n)
	a.dev.Upload(x, obs[:n*a.obsDim])
	a.forward(x, true, false)
	a.dev.Download(out[:n*a.nOut], a.piOut.RowRange(0, n))
}

// Act implements Agent: one pass of the torso gives both heads; sampling
// happens on the host with the caller's random stream, as the MLP's.
func (a *CNN) Act(obs []float32, n int, rng *rand.Rand, deterministic bool, actions, logp, values []float32) {
	a.reserveAct(n)
	x := a.obsDev.RowRange(0, n)
	a.dev.Upload(x, obs[:n*a.obsDim])
	a.forward(x, true, true)
	if a.hasCritic {
		a.dev.Download(values[:n], a.vfOut.RowRange(0, n))
	} else {
		clear(values[:n])
	}
	out := a.hostOut[:n*a.nOut]
	a.dev.Download(out, a.piOut.RowRange(0, n))
	if !a.discrete {
		a.dev.Download(a.hostLogStd, a.logStd)
	}
	sampleActions(out, a.hostLogStd, a.probs, a.discrete, rng, deterministic, actions, logp)
}
