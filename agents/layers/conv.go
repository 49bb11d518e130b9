package layers

import "github.com/agenttrainer/agenttrainer/gpu"

// Conv is a 2-D convolution with a ReLU, over B channel-last images (rows
// of H·W·C values, as an observation comes): y = ReLU(conv(x, W) + b). W is
// (K·K·C)×out, rows in the patch order of gpu.Conv2D ((ky·K + kx)·C + c),
// exported as PyTorch's Conv2d weight (out×C×K×K).
//
// It runs as matrix products over patches (gpu.Device.Im2Col), or, on a
// device with direct kernels for its geometry (gpu.DirectConv: the CPU with
// AVX-512 on MinAtar's layer), reading the pixels in place, with the same
// bits. A device that plans the patch route (gpu.ConvPatches: the CPU)
// gets its patches made a chunk of images at a time, so that they are still
// in cache when the product reads them, and its gradients summed by blocks
// of gpu.ConvBlock images, as its direct kernels sum.
type Conv struct {
	G    gpu.Conv2D
	Out  int
	W, B *Param

	params  []*Param
	oh, ow  int
	direct  bool // dconv runs this layer
	dconv   gpu.DirectConv
	chunk   int  // images whose patches are made at once; 0: all
	blocked bool // gradients summed by blocks of gpu.ConvBlock images

	x                gpu.Tensor // the last Forward's input
	y, dz            gpu.Tensor // output and dz buffers
	cols             gpu.Tensor // a chunk's patches, reused for their gradient
	dwBlock, dbBlock gpu.Tensor // a block's gradient sums (blocked)
}

// NewConv registers a convolution of geometry g with out output channels,
// named name (its tensors are name.weight and name.bias), in p, its weight
// initialised by init and its bias zero; dev decides how it runs.
func NewConv(p *Params, name string, g gpu.Conv2D, out int, dev gpu.Device, init Init) *Conv {
	rows, K, C := g.Patch(), g.K, g.C
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
	l := &Conv{G: g, Out: out}
	l.oh, l.ow = g.Out()
	l.W = p.Add(name+".weight", rows, out, NamedTensor{Shape: []int{out, C, K, K}, Index: index})
	if init != nil {
		init(l.W)
	}
	l.B = p.Add(name+".bias", 1, out, NamedTensor{})
	l.params = []*Param{l.W, l.B}
	if dc, ok := dev.(gpu.DirectConv); ok && dc.ConvDirect(g, out) {
		l.direct, l.dconv = true, dc
	}
	if pp, ok := dev.(gpu.ConvPatches); ok {
		l.chunk, l.blocked = pp.PatchPlan(l.oh * l.ow * rows * 4)
	}
	return l
}

// Width is the output's width: OH·OW·out values an image.
func (l *Conv) Width() int { return l.oh * l.ow * l.Out }

// OutShape is the output's height, width and channels.
func (l *Conv) OutShape() (h, w, c int) { return l.oh, l.ow, l.Out }

// Direct reports whether the device's direct kernels run the layer.
func (l *Conv) Direct() bool { return l.direct }

// Plan is how the patch route runs: images whose patches are made at once
// (0: all) and whether gradients are summed by blocks of gpu.ConvBlock.
func (l *Conv) Plan() (chunk int, blocked bool) { return l.chunk, l.blocked }

// SetPlan sets Plan's two (the cnn makes every layer take the same chunk;
// tests take other routes on the same device). A chunk is a multiple of
// gpu.ConvBlock when blocked.
func (l *Conv) SetPlan(chunk int, blocked bool) { l.chunk, l.blocked = chunk, blocked }

// chunkOf is how many of rows images get their patches made at a time.
func (l *Conv) chunkOf(rows int) int {
	if l.chunk == 0 {
		return rows
	}
	return min(l.chunk, rows)
}

// reserve sizes the buffers for rows images.
func (l *Conv) reserve(dev gpu.Device, rows int) {
	l.y, l.dz = grow(dev, l.y, rows, l.Width()), grow(dev, l.dz, rows, l.Width())
	if l.blocked && l.dwBlock.Rows == 0 {
		l.dwBlock, l.dbBlock = dev.Alloc(l.G.Patch(), l.Out), dev.Alloc(1, l.Out)
	}
}

// patches is the patch buffer for a chunk of rows images' patches.
func (l *Conv) patches(dev gpu.Device, rows int) gpu.Tensor {
	l.cols = grow(dev, l.cols, l.chunkOf(rows)*l.oh*l.ow, l.G.Patch())
	return l.cols
}

// Forward implements Layer.
func (l *Conv) Forward(dev gpu.Device, x gpu.Tensor) gpu.Tensor {
	rows := x.Rows
	l.reserve(dev, rows)
	l.x = x
	y := l.y.RowRange(0, rows)
	if l.direct {
		l.dconv.ConvForward(y, x, l.W.T, l.B.T, l.G)
		return y
	}
	pos, chunk := l.oh*l.ow, l.chunkOf(rows)
	yv := y.Reshape(rows*pos, l.Out)
	buf := l.patches(dev, rows)
	for r0 := 0; r0 < rows; r0 += chunk {
		r1 := min(r0+chunk, rows)
		cols := buf.RowRange(0, (r1-r0)*pos)
		dev.Im2Col(cols, x.RowRange(r0, r1), l.G)
		dev.MatMul(yv.RowRange(r0*pos, r1*pos), cols, false, l.W.T, false, 0)
	}
	dev.BiasAct(yv, l.B.T, gpu.ReLU)
	return y
}

// ForwardDense is Forward followed by next's Forward on its output, on a
// direct layer taking next's product block by block while the output is
// in cache (gpu.DirectConv.ConvForwardDense); it returns next's output.
func (l *Conv) ForwardDense(dev gpu.Device, x gpu.Tensor, next *Dense) gpu.Tensor {
	if !l.direct {
		return next.Forward(dev, l.Forward(dev, x))
	}
	rows := x.Rows
	l.reserve(dev, rows)
	l.x = x
	y := l.y.RowRange(0, rows)
	z := next.out(dev, y)
	l.dconv.ConvForwardDense(y, x, l.W.T, l.B.T, z, next.W.T, l.G)
	dev.BiasAct(z, next.B.T, next.Act)
	return z
}

// Backward implements Layer. The input gradient takes the patch buffer,
// chunk by chunk; adding to DX is not supported (in.Add).
func (l *Conv) Backward(dev gpu.Device, dz gpu.Tensor, in InputGrad) {
	if in.Add {
		panic("layers: a convolution cannot add to an input gradient")
	}
	rows := l.x.Rows
	pos, chunk := l.oh*l.ow, l.chunkOf(rows)
	gv := dz.Reshape(rows*pos, l.Out)
	patches := !l.direct // the weight gradient from patches
	if !patches {
		l.dconv.ConvWeightGrad(l.W.G, l.x, gv, l.G)
	}
	if patches || in.Wanted() {
		buf := l.patches(dev, rows)
		for r0 := 0; r0 < rows; r0 += chunk {
			r1 := min(r0+chunk, rows)
			cols, gc := buf.RowRange(0, (r1-r0)*pos), gv.RowRange(r0*pos, r1*pos)
			if patches {
				if chunk < rows { // else the forward pass's patches are still there
					dev.Im2Col(cols, l.x.RowRange(r0, r1), l.G)
				}
				l.patchWeightGrad(dev, cols, gc, r0, r1)
			}
			if in.Wanted() {
				// The patches are spent: their buffer takes their gradient.
				dev.MatMul(cols, gc, false, l.W.T, true, 0)
				dev.Col2Im(in.DX.RowRange(r0, r1), cols, l.G)
			}
		}
	}
	l.biasGrad(dev, gv, rows)
	if in.Wanted() && in.Through != gpu.Identity {
		dev.ActGrad(in.DX, l.x, in.Through)
	}
}

// BackwardThroughDense sets the layer's gradients when its output feeds
// next, from next's dz, without making the layer's own dz: a direct layer
// whose input gradient nobody needs (a first layer) does it in one pass
// (gpu.DirectConv.ConvGradsThroughDense); otherwise it is next's input
// gradient through the ReLU, then Backward. next's own gradients are
// next.Backward's.
func (l *Conv) BackwardThroughDense(dev gpu.Device, next *Dense, dz gpu.Tensor, in InputGrad) {
	rows := dz.Rows
	if l.direct && !in.Wanted() {
		l.dconv.ConvGradsThroughDense(l.W.G, l.B.G, l.x, l.y.RowRange(0, rows), next.W.T, dz, l.G)
		return
	}
	own := l.Grad(rows)
	gpu.MatMulActGrad(dev, own, dz, next.W.T, l.y.RowRange(0, rows), gpu.ReLU)
	l.Backward(dev, own, in)
}

// patchWeightGrad adds images [r0, r1)'s share of the weight gradient from
// their patches cols and output gradient gc. Blocked, each block's product
// is added to the gradient; else the chunks continue one product (with 16
// or more output channels its bits; a narrower product goes through
// scratch and is added chunk by chunk: other bits, as reproducible).
func (l *Conv) patchWeightGrad(dev gpu.Device, cols, gc gpu.Tensor, r0, r1 int) {
	pos := l.oh * l.ow
	if !l.blocked {
		dev.MatMul(l.W.G, cols, true, gc, false, float32(min(r0, 1)))
		return
	}
	for b0 := r0; b0 < r1; b0 += gpu.ConvBlock {
		b1 := min(b0+gpu.ConvBlock, r1)
		dev.MatMul(l.dwBlock, cols.RowRange((b0-r0)*pos, (b1-r0)*pos), true, gc.RowRange((b0-r0)*pos, (b1-r0)*pos), false, 0)
		addBlock(dev, l.W.G, l.dwBlock, b0 == 0)
	}
}

// biasGrad sets the bias gradient from the output gradient gv
// ((rows·OH·OW)×out), by blocks when blocked.
func (l *Conv) biasGrad(dev gpu.Device, gv gpu.Tensor, rows int) {
	pos := l.oh * l.ow
	if !l.blocked {
		dev.ColSum(l.B.G, gv, 0)
		return
	}
	for b0 := 0; b0 < rows; b0 += gpu.ConvBlock {
		b1 := min(b0+gpu.ConvBlock, rows)
		dev.ColSum(l.dbBlock, gv.RowRange(b0*pos, b1*pos), 0)
		addBlock(dev, l.B.G, l.dbBlock, b0 == 0)
	}
}

// addBlock sets sum to a block's sums (first) or adds them: as a column
// sum of one row, sum·1 + block, which rounds as an addition.
func addBlock(dev gpu.Device, sum, block gpu.Tensor, first bool) {
	if first {
		dev.Copy(sum, block)
		return
	}
	n := sum.Len()
	dev.ColSum(sum.Reshape(1, n), block.Reshape(1, n), 1)
}

// Grad implements Layer.
func (l *Conv) Grad(rows int) gpu.Tensor { return l.dz.RowRange(0, rows) }

// Activation implements Layer: a convolution's is ReLU.
func (l *Conv) Activation() gpu.Activation { return gpu.ReLU }

// Params implements Layer.
func (l *Conv) Params() []*Param { return l.params }
