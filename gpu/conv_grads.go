package gpu

import "fmt"

// convGradsJob is ConvGradsThroughDense split across the pool by blocks of
// ConvBlock images, taken in turn by the parts: each part makes a block's
// output gradient (the dense layer's input gradient through the ReLU) in
// a buffer of its own and takes the block's weight and bias sums from it
// while it is in cache. The blocks' sums are then added in order.
type convGradsJob struct {
	g               Conv2D
	out, n, width   int // channels; the dense layer's outputs and inputs (OH·OW·out)
	images, blocks  int
	parts, ldb      int
	x, y, wd, gd    []float32
	tiles           []convTile
	wt              []float32   // wdᵀ, made by all the parts first
	grad, scratch   [][]float32 // per part: a block's output gradient, tile sums
	ones            []float32   // ConvBlock·OH·OW ones, for the bias sums (the device's)
	sums            []float32   // per block: its weight sums, then its bias sums
	fn, transposeFn func(part int)
}

// ConvGradsThroughDense implements DirectConv.
func (d *CPU) ConvGradsThroughDense(dw, db, x, y, wd, gd Tensor, g Conv2D) {
	out := dw.Cols
	B := checkDirect(d, g, out, x, dw, "gradients")
	oh, ow := g.Out()
	width, n := oh*ow*out, wd.Cols
	if y.Rows != B || y.Cols != width || wd.Rows != width || gd.Rows != B || gd.Cols != n || db.Len() != out {
		panic(fmt.Sprintf("gpu: conv gradients through a dense layer: output %d×%d, dense weights %d×%d, their gradient %d×%d, bias gradient %d, for %d images of %d×%d×%d",
			y.Rows, y.Cols, wd.Rows, wd.Cols, gd.Rows, gd.Cols, db.Len(), B, oh, ow, out))
	}
	j := &d.convGrads
	j.g, j.out, j.n, j.width, j.images = g, out, n, width, B
	j.x, j.y, j.wd, j.gd = d.data(x), d.data(y), d.data(wd), d.data(gd)
	j.blocks = (B + ConvBlock - 1) / ConvBlock
	j.parts = min(d.pool.parts(), j.blocks)
	j.ldb = paddedStride(width)
	j.tiles = convTiles(j.tiles[:0], g, out)
	perBlock := g.Patch()*out + out
	j.sums = grow(j.sums, j.blocks*perBlock)
	j.ones = d.onesOf(ConvBlock * oh * ow)
	// One copy of wdᵀ, each part transposing a share of its columns: a copy
	// per part would grow with the cores (a 25,600×512 layer: 52 MB each).
	j.wt = grow(j.wt, n*j.ldb)
	d.pool.each(j.parts, j.transposeFn)
	d.pool.each(j.parts, j.fn)

	// The blocks' sums, added in order.
	dwd, dbd := d.data(dw), d.data(db)
	for blk := 0; blk < j.blocks; blk++ {
		s := j.sums[blk*perBlock:]
		if blk == 0 {
			copy(dwd, s[:len(dwd)])
			copy(dbd, s[len(dwd):perBlock])
			continue
		}
		for i := range dwd {
			dwd[i] += s[i]
		}
		for i := range dbd {
			dbd[i] += s[len(dwd)+i]
		}
	}
}

// run computes the sums of the blocks part, part+parts, ….
func (j *convGradsJob) run(part int) {
	g, out, n, width := j.g, j.out, j.n, j.width
	oh, ow := g.Out()
	img, pos := g.H*g.W*g.C, oh*ow
	buf := grow(j.grad[part], ConvBlock*width)
	j.grad[part] = buf
	scratch := grow(j.scratch[part], len(j.tiles)*128)
	j.scratch[part] = scratch
	perBlock := g.Patch()*out + out
	for blk := part; blk < j.blocks; blk += j.parts {
		b0, b1 := blk*ConvBlock, min((blk+1)*ConvBlock, j.images)
		rows := b1 - b0
		dy := buf[:rows*width]
		dense := gemmArgs{c: dy, a: j.gd[b0*n : b1*n], b: j.wt, n: width, k: n, lda: n, ldb: j.ldb, overwrite: true}
		gemmRows(&dense, 0, rows, nil)
		actGrad(dy, j.y[b0*width:b1*width], ReLU)
		for b := b0; b < b1; b++ {
			weightGradTiles(g, out, j.tiles, scratch, j.x[b*img:], dy[(b-b0)*width:], b == b0)
		}
		sums := j.sums[blk*perBlock : (blk+1)*perBlock]
		addTiles(g, out, j.tiles, scratch, sums, true)
		bias := gemmArgs{c: sums[g.Patch()*out:], a: j.ones[:rows*pos], b: dy, n: out, k: rows * pos, overwrite: true}
		gemmRows(&bias, 0, 1, nil)
	}
}

// transposePart writes part's share of wdᵀ: the columns for wd's rows
// [r0, r1).
func (j *convGradsJob) transposePart(part int) {
	r0, r1 := j.width*part/j.parts, j.width*(part+1)/j.parts
	transpose(j.wt[r0:], j.ldb, j.wd[r0*j.n:r1*j.n], r1-r0, j.n)
}
