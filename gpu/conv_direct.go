package gpu

import "fmt"

// ConvBlock is the number of images whose contributions to a
// convolution's weight and bias gradients the CPU sums in one chain; the
// blocks' partial sums are then added in order. A block's output gradient
// fits in a core's L2 cache (MinAtar: 32 images, 128 KB), so the gradients
// can be taken from it while it is there, on several cores at once. Every
// CPU route (direct kernels, patches) sums in this order: the same bits.
const ConvBlock = 32

// DirectConv is a device that convolves without making patches: its
// kernels read each patch's pixels where they lie in the image. The CPU
// with AVX-512 is one: on MinAtar, making the patches (twice a minibatch:
// again for the weight gradient) cost more than the products themselves.
// Results are the bits of the patch route (Im2Col, MatMul, BiasAct; the
// gradients summed by ConvBlock), so a model trains the same either way.
type DirectConv interface {
	// ConvDirect says whether ConvForward and ConvWeightGrad take a layer
	// of geometry g with out output channels.
	ConvDirect(g Conv2D, out int) bool
	// ConvForward sets y (B×(OH·OW·out), channel-last) to
	// ReLU(conv(x, w) + bias) for the B images x (B×(H·W·C)), w being
	// (K·K·C)×out in patch order (see Conv2D).
	ConvForward(y, x, w, bias Tensor, g Conv2D)
	// ConvWeightGrad sets dw ((K·K·C)×out) to the weight gradient of
	// the convolution of x whose output gradient is dy ((B·OH·OW)×out):
	// the patches' transpose times dy, summed by ConvBlock.
	ConvWeightGrad(dw, x, dy Tensor, g Conv2D)
	// ConvGradsThroughDense sets dw and db (1×out) to the gradients of a
	// convolution of x whose ReLU output y (B×(OH·OW·out)) feeds a dense
	// layer of weights wd ((OH·OW·out)×n) with output gradient gd (B×n).
	// The convolution's output gradient, (gd·wdᵀ)⊙ReLU′(y), is made
	// ConvBlock images at a time and used at once, never stored whole:
	// for MinAtar's minibatch it would be 4 MB, written and read back three
	// times. The bits of MatMulActGrad, ConvWeightGrad and ColSums by block.
	ConvGradsThroughDense(dw, db, x, y, wd, gd Tensor, g Conv2D)
	// ConvForwardDense sets y as ConvForward does and z (B×n) to y·wd,
	// the product of a dense layer (weights wd, (OH·OW·out)×n) that takes
	// y, without its bias: the bits of ConvForward, then MatMul(z, y,
	// false, wd, false, 0). A block of ConvBlock images is convolved and
	// its rows multiplied at once, while they are in cache: MinAtar's
	// minibatch output (4 MB) read back from memory cost the dense product
	// a fifth of its time.
	ConvForwardDense(y, x, w, bias, z, wd Tensor, g Conv2D)
}

var _ DirectConv = (*CPU)(nil)

// ConvPatches is a device with a plan for convolutions by patches (Im2Col,
// then a product): the CPU, whose products read a minibatch's patches from
// memory unless they are made a chunk at a time (MinAtar's 1,024 frames
// make 9 MB of them), and whose direct kernels sum a layer's weight and
// bias gradients by blocks of ConvBlock images — which the patch route must
// do too for both routes to give the same bits. A device without a plan (a
// GPU) takes a minibatch's patches at once and sums them in one product.
type ConvPatches interface {
	// PatchPlan says, for a layer whose patches take perImage bytes an
	// image, how many images' patches to make at a time (0: all; a
	// multiple of ConvBlock) and whether to sum gradients by ConvBlock.
	PatchPlan(perImage int) (chunk int, blocked bool)
}

var _ ConvPatches = (*CPU)(nil)

// PatchPlan implements ConvPatches: chunks of about 1 MB of patches (they
// stay in L2 until the product reads them, at the price of making them
// again for the backward pass), gradients by blocks.
func (d *CPU) PatchPlan(perImage int) (chunk int, blocked bool) {
	return max(1, (1<<20)/max(perImage, 1)/ConvBlock) * ConvBlock, true
}

// ConvDirect implements DirectConv: with AVX-512, no padding, output
// channels in sixteens, output rows of at least eight positions and
// kernel rows of at least eight values (the kernels' 8×16 tiles fit in
// the image); otherwise the patch route.
func (d *CPU) ConvDirect(g Conv2D, out int) bool {
	if !hasAVX512 || g.Valid() != nil {
		return false
	}
	_, ow := g.Out()
	return g.Pad == 0 && out > 0 && out%16 == 0 && ow >= 8 && g.K*g.C >= 8
}

// convJob is one direct convolution split across the pool: forward by
// images, the weight gradient by tiles of the gradient (every part reads
// every image, each element's sums stay in one part, by ConvBlock). It
// lives in the device, its methods bound once (NewCPU), so a pass
// allocates nothing.
type convJob struct {
	g                  Conv2D
	out, images, parts int
	y, x, w, bias      []float32
	dw, dy             []float32
	tiles              []convTile
	scratch            []float32 // 8×16 per tile: the weight gradient's partial sums
	dense              gemmArgs  // ConvForwardDense's product, n = 0 for none
	fwd, wgrad         func(part int)
}

// convTile is an 8×16 block of the weight gradient: rows from+own… of
// kernel row ky's run (the rows before own are the previous tile's, when the
// last tile of a run steps back to fit), columns col….
type convTile struct {
	ky, from, own, col int
}

func (d *CPU) convJob(g Conv2D, out, images int) *convJob {
	j := &d.conv
	j.g, j.out, j.images = g, out, images
	return j
}

// ConvForward implements DirectConv.
func (d *CPU) ConvForward(y, x, w, bias Tensor, g Conv2D) {
	d.convForward(y, x, w, bias, g, gemmArgs{})
}

// ConvForwardDense implements DirectConv.
func (d *CPU) ConvForwardDense(y, x, w, bias, z, wd Tensor, g Conv2D) {
	n := wd.Cols
	if z.Rows != y.Rows || z.Cols != n || wd.Rows != y.Cols {
		panic(fmt.Sprintf("gpu: conv forward through a dense layer: output %d×%d, dense weights %d×%d, their output %d×%d", y.Rows, y.Cols, wd.Rows, wd.Cols, z.Rows, z.Cols))
	}
	if n%16 != 0 { // MatMul's other routes: narrow products by dot products, a clear first
		d.ConvForward(y, x, w, bias, g)
		d.MatMul(z, y, false, wd, false, 0)
		return
	}
	d.convForward(y, x, w, bias, g, gemmArgs{c: d.data(z), a: d.data(y), b: d.data(wd), n: n, k: wd.Rows, overwrite: true})
}

// convForward runs a direct convolution's forward pass and, when dense.n
// is set, the dense product of its output, block by block.
func (d *CPU) convForward(y, x, w, bias Tensor, g Conv2D, dense gemmArgs) {
	out := w.Cols
	B := checkDirect(d, g, out, x, w, "forward")
	oh, ow := g.Out()
	if y.Rows != B || y.Cols != oh*ow*out || bias.Len() != out {
		panic(fmt.Sprintf("gpu: conv forward shapes: output %d×%d, bias %d for %d images of %d×%d×%d", y.Rows, y.Cols, bias.Len(), B, oh, ow, out))
	}
	j := d.convJob(g, out, B)
	j.y, j.x, j.w, j.bias, j.dense = d.data(y), d.data(x), d.data(w), d.data(bias), dense
	j.parts = min(d.pool.parts(), B)
	d.pool.each(j.parts, j.fwd)
}

// ConvWeightGrad implements DirectConv.
func (d *CPU) ConvWeightGrad(dw, x, dy Tensor, g Conv2D) {
	out := dw.Cols
	B := checkDirect(d, g, out, x, dw, "weight gradient")
	oh, ow := g.Out()
	if dy.Rows != B*oh*ow || dy.Cols != out {
		panic(fmt.Sprintf("gpu: conv weight gradient shapes: output gradient %d×%d for %d images of %d×%d×%d", dy.Rows, dy.Cols, B, oh, ow, out))
	}
	j := d.convJob(g, out, B)
	j.dw, j.x, j.dy = d.data(dw), d.data(x), d.data(dy)
	j.tiles = convTiles(j.tiles[:0], g, out)
	j.scratch = grow(j.scratch, len(j.tiles)*128)
	j.parts = min(d.pool.parts(), len(j.tiles))
	d.pool.each(j.parts, j.wgrad)
}

// convTiles appends the 8×16 tiles that cover a weight gradient: per
// strip of sixteen channels, per kernel row, runs of eight of its K·C
// values (the last stepping back to fit). Tiles of one strip follow each
// other, so that weightGradTiles can take them in pairs.
func convTiles(tiles []convTile, g Conv2D, out int) []convTile {
	run := g.K * g.C
	for col := 0; col < out; col += 16 {
		for ky := 0; ky < g.K; ky++ {
			for from, done := 0, 0; done < run; from += 8 {
				from = min(from, run-8)
				tiles = append(tiles, convTile{ky: ky, from: from, own: done - from, col: col})
				done = from + 8
			}
		}
	}
	return tiles
}

// weightGradTiles adds image b's share (x its pixels, dy its output
// gradient) to tiles' sums in scratch (128 values each), starting them
// from zero when first is set.
// Two tiles of one strip go through convT16x16 together, or convT12x16
// when one of them owns only its last four rows or fewer (its first rows,
// never read, are left as they are).
func weightGradTiles(g Conv2D, out int, tiles []convTile, scratch, x, dy []float32, first bool) {
	oh, ow := g.Out()
	line, ldx, ldy := g.W*g.C, g.Stride*g.C, g.Stride*g.W*g.C
	for i := 0; i < len(tiles); i++ {
		t := tiles[i]
		if i+1 < len(tiles) && tiles[i+1].col == t.col {
			u, whole, half := tiles[i+1], i, i+1
			if t.own >= 4 && u.own < 4 {
				whole, half = i+1, i
			}
			if w, h := tiles[whole], tiles[half]; h.own >= 4 && w.own < 4 {
				convT12x16(&scratch[whole*128], 16, &x[w.ky*line+w.from], ldx, &dy[t.col], out, ow, oh, ldy, first,
					&x[h.ky*line+h.from+4], &scratch[half*128+64])
			} else {
				convT16x16(&scratch[i*128], 16, &x[t.ky*line+t.from], ldx, &dy[t.col], out, ow, oh, ldy, first, &x[u.ky*line+u.from])
			}
			i++
			continue
		}
		convT8x16(&scratch[i*128], 16, &x[t.ky*line+t.from], ldx, &dy[t.col], out, ow, oh, ldy, first)
	}
}

// addTiles writes (set) or adds the rows that tiles own from their sums
// in scratch into the weight gradient dw.
func addTiles(g Conv2D, out int, tiles []convTile, scratch, dw []float32, set bool) {
	run := g.K * g.C
	for i, t := range tiles {
		for r := t.own; r < 8; r++ {
			dst, src := dw[(t.ky*run+t.from+r)*out+t.col:][:16], scratch[i*128+r*16:][:16]
			if set {
				copy(dst, src)
				continue
			}
			for c, v := range src {
				dst[c] += v
			}
		}
	}
}

// checkDirect panics when the layer is not one ConvDirect takes or x and
// the weights w (or their gradient) do not fit it; it returns the batch size.
func checkDirect(d *CPU, g Conv2D, out int, x, w Tensor, what string) int {
	if !d.ConvDirect(g, out) {
		panic(fmt.Sprintf("gpu: conv %s: no direct kernels for %+v with %d outputs (ask ConvDirect)", what, g, out))
	}
	if x.Cols != g.H*g.W*g.C || w.Rows != g.Patch() {
		panic(fmt.Sprintf("gpu: conv %s shapes: images %d×%d, weights %d×%d for %d×%d×%d, kernel %d", what, x.Rows, x.Cols, w.Rows, w.Cols, g.H, g.W, g.C, g.K))
	}
	return x.Rows
}

// forward computes part's share of the images, ConvBlock at a time, each
// block's dense product (when j.dense is set) right after it.
func (j *convJob) forward(part int) {
	lo, hi := j.images*part/j.parts, j.images*(part+1)/j.parts
	for b0 := lo; b0 < hi; b0 += ConvBlock {
		b1 := min(b0+ConvBlock, hi)
		j.forwardImages(b0, b1)
		if j.dense.n > 0 {
			gemmRows(&j.dense, b0, b1, nil)
		}
	}
}

// forwardImages convolves images [lo, hi): for each pair of output rows
// (the last row of an odd number alone), tiles of eight positions in each
// (the last one stepping back to fit, recomputing a few positions with the
// same bits) and sixteen channels.
func (j *convJob) forwardImages(lo, hi int) {
	g, out := j.g, j.out
	oh, ow := g.Out()
	img, pos, run, line := g.H*g.W*g.C, oh*ow, g.K*g.C, g.W*g.C
	for b := lo; b < hi; b++ {
		for oy := 0; oy < oh; oy += 2 {
			for ox := 0; ox < ow; ox += 8 {
				ox = min(ox, ow-8)
				a := j.x[b*img+(oy*g.Stride*g.W+ox*g.Stride)*g.C:]
				c := j.y[((b*pos)+oy*ow+ox)*out:]
				c2, a2 := c, a // the last row of an odd number: this row twice
				if oy+1 < oh {
					c2, a2 = c[ow*out:], a[g.Stride*line:] // the same positions a row further down
				}
				for col := 0; col < out; col += 16 {
					conv16x16(&c[col], out, &a[0], g.Stride*g.C, &j.w[col], out, run, g.K, line, &j.bias[col], &c2[col], &a2[0])
				}
			}
		}
	}
}

// weightGrad computes part's share of the tiles over every image, block
// by block: each block's sums are added into the gradient in order.
func (j *convJob) weightGrad(part int) {
	g, out := j.g, j.out
	oh, ow := g.Out()
	img, pos := g.H*g.W*g.C, oh*ow
	lo, hi := len(j.tiles)*part/j.parts, len(j.tiles)*(part+1)/j.parts
	tiles, scratch := j.tiles[lo:hi], j.scratch[lo*128:hi*128]
	for b0 := 0; b0 < j.images; b0 += ConvBlock {
		for b := b0; b < min(b0+ConvBlock, j.images); b++ {
			weightGradTiles(g, out, tiles, scratch, j.x[b*img:], j.dy[b*pos*out:], b == b0)
		}
		addTiles(g, out, tiles, scratch, j.dw, b0 == 0)
	}
}
