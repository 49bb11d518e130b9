package gpu

import (
	"fmt"
	"math"
	"runtime"
)

// CPU is the pure-Go device: contiguous float32 buffers, loops written so the
// compiler can drop bounds checks, scratch space reused across calls, and the
// large matrix products split across cores.
type CPU struct {
	threads   int
	pool      *workerPool
	scratch   [2][]float32 // transposed operands
	ones      []float32    // a row of ones for column sums
	halves    [2]*CPU      // Both's handles, half of the cores each, made on first use
	adam      adamJob
	conv      convJob // the direct convolution's parts
	transB    transBJob
	gather    gatherJob
	actGrad   actGradJob
	convGrads convGradsJob
	policy    policyJob
	narrow    narrowJob
}

// NewCPU returns a CPU device using up to threads cores (0: all of them).
func NewCPU(threads int) *CPU {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	d := &CPU{threads: threads, pool: newWorkerPool(threads - 1)}
	// Buffers of the split jobs' parts, one per core, grown on first use.
	d.transB.scratch = make([][]float32, threads)
	d.policy.probs = make([][]float64, threads)
	d.convGrads.grad, d.convGrads.scratch = make([][]float32, threads), make([][]float32, threads)
	// The split jobs' methods, bound once: handing them to the pool then
	// allocates nothing.
	d.conv.fwd, d.conv.wgrad = d.conv.forward, d.conv.weightGrad
	d.transB.fn, d.gather.fn, d.actGrad.fn = d.transB.run, d.gather.run, d.actGrad.run
	d.convGrads.fn, d.convGrads.transposeFn, d.policy.fn = d.convGrads.run, d.convGrads.transposePart, d.policy.run
	d.narrow.fn = d.narrow.run
	return d
}

// Name implements Device.
func (d *CPU) Name() string {
	if d.threads == 1 {
		return "cpu (1 thread)"
	}
	return fmt.Sprintf("cpu (%d threads)", d.threads)
}

// Close stops the device's worker goroutines.
func (d *CPU) Close() {
	d.pool.close()
	if d.halves[0] != nil {
		for _, h := range d.halves {
			h.Close()
		}
	}
}

// Both implements Concurrent: side runs on the first worker of the pool
// and main on the caller's, each with a handle of its own (same memory,
// scratch of its own) that has half of the cores, so on two cores two
// independent passes take one core each instead of splitting every small
// product between them, and on many cores large products are still split.
func (d *CPU) Both(side, main func(Device)) {
	if d.pool.parts() < 2 {
		side(d)
		main(d)
		return
	}
	if d.halves[0] == nil {
		half := d.threads / 2
		d.halves = [2]*CPU{NewCPU(half), NewCPU(d.threads - half)}
	}
	d.pool.workers[0].run(side, d.halves[0], main, d.halves[1])
}

func (d *CPU) data(t Tensor) []float32 {
	buf, ok := t.buf.([]float32)
	if !ok {
		panic("gpu: tensor does not belong to the CPU device")
	}
	return buf[t.off : t.off+t.Len() : t.off+t.Len()]
}

// Data exposes a CPU tensor's elements (shared, not copied); tests and the
// host-side rollout use it to avoid copies on the CPU device.
func (d *CPU) Data(t Tensor) []float32 { return d.data(t) }

// Wrap implements HostMemory.
func (d *CPU) Wrap(data []float32, rows, cols int) Tensor {
	if rows < 0 || cols < 0 || len(data) < rows*cols {
		panic(fmt.Sprintf("gpu: a %d×%d tensor over %d values", rows, cols, len(data)))
	}
	return Tensor{Rows: rows, Cols: cols, buf: data[: rows*cols : rows*cols]}
}

// Alloc implements Device.
func (d *CPU) Alloc(rows, cols int) Tensor {
	return Tensor{Rows: rows, Cols: cols, buf: make([]float32, rows*cols)}
}

// Upload implements Device.
func (d *CPU) Upload(dst Tensor, src []float32) {
	if len(src) != dst.Len() {
		panic(fmt.Sprintf("gpu: upload of %d values into %d×%d tensor", len(src), dst.Rows, dst.Cols))
	}
	copy(d.data(dst), src)
}

// Download implements Device.
func (d *CPU) Download(dst []float32, src Tensor) { copy(dst[:src.Len()], d.data(src)) }

// Fill implements Device.
func (d *CPU) Fill(t Tensor, v float32) {
	x := d.data(t)
	d.rows(len(x), len(x), func(lo, hi int) { // a model's gradients: 80 MB for 20M parameters
		part := x[lo:hi]
		for i := range part {
			part[i] = v
		}
	})
}

// Copy implements Device.
func (d *CPU) Copy(dst, src Tensor) {
	if dst.Len() != src.Len() {
		panic("gpu: copy between tensors of different length")
	}
	copy(d.data(dst), d.data(src))
}

// MatMul implements Device. A transposed A is read in place by its own
// kernels; a transposed B (a weight matrix) is copied to scratch first.
// Narrow products (fewer than 16 columns, such as policy and value heads)
// use dot products, or compute the transposed product when A is transposed.
func (d *CPU) MatMul(c, a Tensor, transA bool, b Tensor, transB bool, beta float32) {
	m, n, k := matMulShape(c, a, transA, b, transB)
	ad, bd, cd := d.data(a), d.data(b), d.data(c)
	// When the SIMD kernels write every column of a fresh product, they
	// start from zero instead of reading back a cleared C.
	overwrite := beta == 0 && hasFMA && n%16 == 0 && k > 0
	switch beta {
	case 0:
		if !overwrite {
			clear(cd)
		}
	case 1:
	default:
		for i := range cd {
			cd[i] *= beta
		}
	}
	if hasFMA && n < 16 && m >= 16 {
		if transA {
			// Cᵀ (n×m) = op(B)ᵀ · A, A being stored k×m: wide, so the
			// kernels apply; then add it into C transposed. op(B)ᵀ gets
			// zero rows up to a multiple of 4, so that 4-row tiles take it
			// in one pass over A instead of one pass per row (a policy
			// head's weight gradient: 3 rows over MinAtar's 1,024×128
			// features); the chains are those of one row at a time.
			n4 := (n + 3) &^ 3
			bt := d.grow(1, n4*k)
			if transB {
				copy(bt, bd[:n*k])
			} else {
				transpose(bt, k, bd, k, n)
			}
			clear(bt[n*k:])
			ct := d.grow(0, n4*m)
			clear(ct)
			d.pool.gemm(gemmArgs{c: ct, a: bt, b: ad, n: m, k: k}, n4)
			for j := 0; j < n; j++ {
				for i, v := range ct[j*m : (j+1)*m] {
					cd[i*n+j] += v
				}
			}
			return
		}
		// op(B)ᵀ is n×k: B itself when transB, else a small copy.
		bt := bd
		if !transB {
			bt = transpose(d.grow(1, n*k), k, bd, k, n)
		}
		j := &d.narrow
		j.c, j.a, j.bt, j.m, j.n, j.k = cd, ad, bt, m, n, k
		j.parts = 1
		if m*n*k >= minParallelNarrow {
			j.parts = min(d.pool.parts(), m/16)
		}
		d.pool.each(j.parts, j.fn)
		return
	}
	if transB && !transA && d.splitTransB(cd, ad, bd, m, n, k, overwrite, nil, Identity) {
		return
	}
	ldb := n
	if transB {
		ldb = paddedStride(n)
		bd = transpose(d.grow(1, k*ldb), ldb, bd, n, k)
	}
	lda := k
	if transA {
		lda = m
	}
	d.pool.gemm(gemmArgs{c: cd, a: ad, b: bd, n: n, k: k, lda: lda, ldb: ldb, transA: transA, overwrite: overwrite}, m)
}

// narrowJob is a product narrower than the SIMD kernels' 16 columns (a
// policy or value head's outputs), a dot product per element of C, split
// across the pool by rows: the same bits.
type narrowJob struct {
	c, a, bt       []float32 // bt: op(B)ᵀ, n×k
	m, n, k, parts int
	fn             func(part int)
}

// minParallelNarrow is the multiply-add count from which a narrow product
// is split: MinAtar's heads (1,024 rows of 128 into 3 and 1) took one core
// 50 µs a minibatch.
const minParallelNarrow = 1 << 17

func (j *narrowJob) run(part int) {
	n, k := j.n, j.k
	for i := j.m * part / j.parts; i < j.m*(part+1)/j.parts; i++ {
		row := j.a[i*k : (i+1)*k]
		for c := 0; c < n; c++ {
			j.c[i*n+c] += dot(row, j.bt[c*k:(c+1)*k])
		}
	}
}

// transBJob is a product with a transposed B (an input gradient through a
// weight, dY·Wᵀ) split across the pool by blocks of C's columns: each part
// transposes only its block of B, into scratch of its own, and multiplies
// by it. Transposing all of B on the caller first kept the other core
// waiting meanwhile, and then had it read the copy from the caller's
// cache: MinAtar's 1,024×128·(1,024×128)ᵀ took 1.6 ms on two cores, barely
// less than on one. Every element of C gets the same chain of multiply-adds
// as in one product: the same bits.
type transBJob struct {
	c, a, b []float32 // B stored n×k
	m, n, k int
	parts   int
	zero    bool      // C holds garbage: the kernels start from zero
	y       []float32 // MatMulActGrad's activations (C's shape), or nil
	act     Activation
	scratch [][]float32
	fn      func(part int)
}

// splitTransB computes C (m×n) += A·Bᵀ (B stored n×k), then takes it
// through act at y when y is not nil, across the pool when that pays and
// the SIMD kernels cover every column; it reports whether it did.
func (d *CPU) splitTransB(c, a, b []float32, m, n, k int, zero bool, y []float32, act Activation) bool {
	parts := min(d.pool.parts(), n/64)
	if !hasFMA || n%16 != 0 || parts < 2 || m*n*k < minParallelWork && m*n < minParallelOutput {
		return false
	}
	j := &d.transB
	j.c, j.a, j.b, j.m, j.n, j.k, j.parts, j.zero, j.y, j.act = c, a, b, m, n, k, parts, zero, y, act
	d.pool.each(parts, j.fn)
	return true
}

// run computes part's block of columns, cut on multiples of 32 (the widest
// tile).
func (j *transBJob) run(part int) {
	n, k := j.n, j.k
	j0, j1 := (n*part/j.parts)&^31, (n*(part+1)/j.parts)&^31
	if part == j.parts-1 {
		j1 = n
	}
	w := j1 - j0
	ldb := paddedStride(w)
	j.scratch[part] = grow(j.scratch[part], k*ldb)
	bt := transpose(j.scratch[part], ldb, j.b[j0*k:j1*k], w, k)
	g := gemmArgs{c: j.c[j0:], a: j.a, b: bt, n: w, k: k, lda: k, ldc: n, ldb: ldb, overwrite: j.zero}
	if j.y == nil {
		gemmRows(&g, 0, j.m, nil)
		return
	}
	for i0 := 0; i0 < j.m; i0 += gemmMC {
		i1 := min(i0+gemmMC, j.m)
		gemmRows(&g, i0, i1, nil)
		for i := i0; i < i1; i++ {
			actGrad(j.c[i*n+j0:i*n+j1], j.y[i*n+j0:i*n+j1], j.act)
		}
	}
}

// MatMulActGrad implements FusedActGrad.
func (d *CPU) MatMulActGrad(c, a, b, y Tensor, act Activation) {
	m, n, k := matMulShape(c, a, false, b, true)
	if y.Rows != c.Rows || y.Cols != c.Cols {
		panic(fmt.Sprintf("gpu: activations %d×%d for a %d×%d gradient", y.Rows, y.Cols, c.Rows, c.Cols))
	}
	if k > 0 && d.splitTransB(d.data(c), d.data(a), d.data(b), m, n, k, true, d.data(y), act) {
		return
	}
	d.MatMul(c, a, false, b, true, 0)
	d.ActGrad(c, y, act)
}

func (d *CPU) grow(i, n int) []float32 {
	d.scratch[i] = grow(d.scratch[i], n)
	return d.scratch[i]
}

// grow returns buf with length n, reallocated when its capacity is short.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// onesOf returns n ones, for column sums as products.
func (d *CPU) onesOf(n int) []float32 {
	if len(d.ones) < n {
		d.ones = make([]float32, n)
		for i := range d.ones {
			d.ones[i] = 1
		}
	}
	return d.ones[:n]
}

// paddedStride is the row length to give a copy of B n columns wide: n
// plus a cache line when its rows would lie a multiple of 2 KB apart. A
// strip of B is read row after row by the kernels; rows 4 KB apart all
// fall into one set of the 12-way L1 cache, so a strip of MinAtar's
// 1,024-wide transposed weight could never stay there (1,024×128·128×1,024:
// 160 GFLOP/s on one core with rows 4 KB apart, 191 with 4,160 bytes).
func paddedStride(n int) int {
	if n%512 == 0 {
		return n + 16
	}
	return n
}

// transpose writes the cols×rows transpose of the rows×cols matrix src,
// in blocks of 8×8: row by row, a 1,024-row weight would write each value
// 4 KB from the last, a new cache line every time. Eight destination
// lines 4 KB apart share a cache set and fit its ways; sixteen did not
// (BenchmarkTranspose: 1,024×128 in 130 µs, 380 with 16×16 blocks, 4× that
// row by row). Whole blocks go through the AVX2 kernel where there is one
// (1,024×128 in 25–35 µs: MinAtar transposes its dense weights every
// minibatch).
// Row j of the transpose starts at dst[j·ldd] (ldd ≥ rows).
func transpose(dst []float32, ldd int, src []float32, rows, cols int) []float32 {
	transposeRows(dst, ldd, src, cols, rows, cols)
	return dst
}

// transposeRows writes dst[j·ldd + i] = src[i·lds + j] for i < rows, j <
// cols, in blocks of 8×8 (one kernel each where the CPU has it): row by
// row, a column of dst would touch a new cache line at every element.
func transposeRows(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	const blk = 8
	for i0 := 0; i0 < rows; i0 += blk {
		i1 := min(i0+blk, rows)
		for j0 := 0; j0 < cols; j0 += blk {
			j1 := min(j0+blk, cols)
			if hasFMA && i1-i0 == blk && j1-j0 == blk {
				_ = dst[(j1-1)*ldd+i1-1] // the kernel's last store, in bounds
				_ = src[(i1-1)*lds+j1-1]
				transpose8x8(&dst[j0*ldd+i0], ldd, &src[i0*lds+j0], lds)
				continue
			}
			for i := i0; i < i1; i++ {
				row := src[i*lds+j0 : i*lds+j1]
				for j, v := range row {
					dst[(j0+j)*ldd+i] = v
				}
			}
		}
	}
}

// BiasAct implements Device.
func (d *CPU) BiasAct(x, bias Tensor, act Activation) {
	xd, bd := d.data(x), d.data(bias)
	n := x.Cols
	if len(bd) != n {
		panic("gpu: bias length differs from column count")
	}
	for i := 0; i < x.Rows; i++ {
		row := xd[i*n : i*n+n]
		row = row[:len(bd)]
		switch act {
		case Tanh:
			j := 0
			if n8 := n &^ 7; hasFMA && n8 > 0 {
				biasTanh8(&row[0], &bd[0], n8)
				j = n8
			}
			for ; j < n; j++ {
				row[j] = tanh32(row[j] + bd[j])
			}
		case ReLU:
			j := 0
			if n8 := n &^ 7; hasFMA && n8 > 0 {
				biasReLU8(&row[0], &bd[0], n8)
				j = n8
			}
			for ; j < n; j++ {
				v := row[j] + bd[j]
				if v < 0 {
					v = 0
				}
				row[j] = v
			}
		default:
			for j, b := range bd {
				row[j] += b
			}
		}
	}
}

// tanh32 is tanh in float32 through a 13/6 rational approximation on
// [−7.9, 7.9] (Eigen's generic ptanh; beyond that tanh rounds to ±1). It is
// within a few float32 ulps of math.Tanh and several times faster, which
// matters because every hidden unit of every forward pass goes through it.
func tanh32(x float32) float32 {
	const clampTo = 7.90531110763549805
	x = max(-clampTo, min(clampTo, x))
	if abs32(x) < 0.0004 {
		return x // the rational form loses relative accuracy near 0
	}
	x2 := x * x
	p := float32(-2.76076847742355e-16)
	p = p*x2 + 2.00018790482477e-13
	p = p*x2 + -8.60467152213735e-11
	p = p*x2 + 5.12229709037114e-08
	p = p*x2 + 1.48572235717979e-05
	p = p*x2 + 6.37261928875436e-04
	p = p*x2 + 4.89352455891786e-03
	p *= x
	q := float32(1.19825839466702e-06)
	q = q*x2 + 1.18534705686654e-04
	q = q*x2 + 2.26843463243900e-03
	q = q*x2 + 4.89352518554385e-03
	return p / q
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// ActGrad implements Device.
func (d *CPU) ActGrad(dy, y Tensor, act Activation) {
	g, yd := d.data(dy), d.data(y)
	j := &d.actGrad
	j.g, j.y, j.act = g[:len(yd)], yd, act
	d.split(len(yd), minParallelActGrad, &j.parts, j.fn)
}

// split runs fn's parts across the pool when the work (size) is at least
// min, else in one part on the caller, recording their number in parts.
func (d *CPU) split(size, min int, parts *int, fn func(part int)) {
	*parts = 1
	if size >= min {
		*parts = d.pool.parts()
	}
	d.pool.each(*parts, fn)
}

// minParallelActGrad is the size from which ActGrad is split across the
// pool (a MinAtar minibatch's convolution output has a million values).
const minParallelActGrad = 1 << 17

// actGradJob is ActGrad split in blocks of whole SIMD steps: elementwise,
// so the same bits as one pass.
type actGradJob struct {
	g, y  []float32
	act   Activation
	parts int
	fn    func(part int)
}

func (j *actGradJob) run(part int) {
	lo, hi := (len(j.y)*part/j.parts)&^7, (len(j.y)*(part+1)/j.parts)&^7
	if part == j.parts-1 {
		hi = len(j.y)
	}
	actGrad(j.g[lo:hi], j.y[lo:hi], j.act)
}

// actGrad multiplies g by the derivative of act at its outputs y.
func actGrad(g, y []float32, act Activation) {
	g = g[:len(y)]
	start := 0
	switch act {
	case Tanh:
		if n8 := len(y) &^ 7; hasFMA && n8 > 0 {
			tanhGrad8(&g[0], &y[0], n8)
			start = n8
		}
		for i := start; i < len(y); i++ {
			g[i] *= 1 - y[i]*y[i]
		}
	case ReLU:
		if n8 := len(y) &^ 7; hasFMA && n8 > 0 {
			reluGrad8(&g[0], &y[0], n8)
			start = n8
		}
		for i := start; i < len(y); i++ {
			if y[i] <= 0 {
				g[i] = 0
			}
		}
	}
}

// ColSum implements Device: on SIMD machines as the product onesᵀ·X.
func (d *CPU) ColSum(out, x Tensor, beta float32) {
	o, xd := d.data(out), d.data(x)
	n := x.Cols
	if len(o) != n {
		panic("gpu: colsum output length differs from column count")
	}
	for j := range o {
		o[j] *= beta
	}
	if hasFMA && n >= 16 {
		gemmRows(&gemmArgs{c: o, a: d.onesOf(x.Rows), b: xd, n: n, k: x.Rows}, 0, 1, nil)
		return
	}
	for i := 0; i < x.Rows; i++ {
		row := xd[i*n : i*n+n]
		row = row[:len(o)]
		for j, v := range row {
			o[j] += v
		}
	}
}

// GatherRows implements Device.
func (d *CPU) GatherRows(dst, src Tensor, idx []int32) {
	dd, sd := d.data(dst), d.data(src)
	n := src.Cols
	if dst.Cols != n || dst.Rows != len(idx) {
		panic("gpu: gather shape mismatch")
	}
	if n == 1 { // log-probabilities, advantages, returns, values
		dd = dd[:len(idx)]
		for i, r := range idx {
			dd[i] = sd[r]
		}
		return
	}
	j := &d.gather
	j.dst, j.src, j.idx, j.n = dd, sd, idx, n
	d.split(len(dd), minParallelGather, &j.parts, j.fn)
}

// minParallelGather is the number of values from which a gather is split
// across the pool: a MinAtar minibatch's frames (1,024 rows of 400 from a
// 13 MB rollout) wait on memory, and two cores wait on twice the rows.
const minParallelGather = 1 << 16

// gatherJob is GatherRows's copy of whole rows, split by rows.
type gatherJob struct {
	dst, src []float32
	idx      []int32
	n, parts int
	fn       func(part int)
}

func (j *gatherJob) run(part int) {
	lo, hi := len(j.idx)*part/j.parts, len(j.idx)*(part+1)/j.parts
	n := j.n
	for i := lo; i < hi; i++ {
		r := int(j.idx[i])
		copy(j.dst[i*n:i*n+n], j.src[r*n:r*n+n])
	}
}

// normalizedAdv returns the mean and 1/(std+1e-8) used to normalise a
// minibatch of advantages (std with Bessel's correction, as torch.std).
func normalizedAdv(adv []float32, norm bool) (mean, inv float64) {
	if !norm {
		return 0, 1
	}
	for _, a := range adv {
		mean += float64(a)
	}
	mean /= float64(len(adv))
	var ss float64
	for _, a := range adv {
		ss += (float64(a) - mean) * (float64(a) - mean)
	}
	std := 0.0
	if len(adv) > 1 {
		std = math.Sqrt(ss / float64(len(adv)-1))
	}
	return mean, 1 / (std + 1e-8)
}

// surrogate returns the clipped surrogate loss of one sample and the
// derivative of that loss with respect to the new log-probability.
func surrogate(adv, ratio, clip float64) (loss, dLogp float64) {
	pg1 := -adv * ratio
	pg2 := -adv * math.Min(math.Max(ratio, 1-clip), 1+clip)
	if pg1 >= pg2 {
		return pg1, pg1 // d(−A·r)/dlogp = −A·r
	}
	return pg2, 0 // the clipped branch is flat in r
}

// ppoStats accumulates one minibatch's policy statistics into stats.
func ppoStats(stats []float32, pg, ent, kl, clipped float64, b int) {
	inv := 1 / float64(b)
	stats[StatPolicyLoss] += float32(pg * inv)
	stats[StatEntropy] += float32(ent * inv)
	stats[StatApproxKL] += float32(kl * inv)
	stats[StatClipFrac] += float32(clipped * inv)
}

// CategoricalPPO implements Device.
func (d *CPU) CategoricalPPO(p PPOPolicyArgs) {
	j := &d.policy
	j.logits, j.dOut = d.data(p.Out), d.data(p.DOut)
	j.acts, j.old, j.adv = d.data(p.Actions), d.data(p.OldLogp), d.data(p.Adv)
	j.B, j.A = p.Out.Rows, p.Out.Cols
	j.mean, j.inv = normalizedAdv(j.adv, p.NormAdv)
	j.clip, j.ent, j.invB = float64(p.ClipCoef), float64(p.EntCoef), 1/float64(j.B)
	chunks := (j.B + policyChunk - 1) / policyChunk
	j.sums = grow(j.sums, chunks)
	j.parts = min(d.pool.parts(), chunks)
	d.pool.each(j.parts, j.fn)
	var pg, ent, kl, clipped float64
	for _, c := range j.sums { // in order: the same sums on any number of cores
		pg, ent, kl, clipped = pg+c[0], ent+c[1], kl+c[2], clipped+c[3]
	}
	ppoStats(d.data(p.Stats), pg, ent, kl, clipped, j.B)
}

// policyChunk is the number of rows whose loss statistics CategoricalPPO
// sums in one chain; chunks' sums are added in order. Rows are
// independent, so chunks can run on several cores (MinAtar's minibatch of
// 1,024 is four chunks); a minibatch of at most 256 rows (CartPole's 128)
// is one chunk, its sums those of one pass.
const policyChunk = 256

// policyJob is CategoricalPPO split by chunks of rows, taken in turn by
// the parts.
type policyJob struct {
	logits, dOut, acts, old, adv []float32
	B, A, parts                  int
	mean, inv, clip, ent, invB   float64
	probs                        [][]float64  // per part: one row's probabilities
	sums                         [][4]float64 // per chunk: policy loss, entropy, KL, clipped rows
	fn                           func(part int)
}

func (j *policyJob) run(part int) {
	j.probs[part] = grow(j.probs[part], j.A)
	for c := part; c*policyChunk < j.B; c += j.parts {
		var sums [4]float64
		for i := c * policyChunk; i < min((c+1)*policyChunk, j.B); i++ {
			pg, h, kl, clipped := j.row(i, j.probs[part])
			sums[0], sums[1], sums[2] = sums[0]+pg, sums[1]+h, sums[2]+kl
			if clipped {
				sums[3]++
			}
		}
		j.sums[c] = sums
	}
}

// row writes row i's gradient and returns its surrogate loss, entropy,
// approximate KL and whether its ratio was clipped; probs (A long) holds
// the row's probabilities meanwhile.
func (j *policyJob) row(i int, probs []float64) (pg, h, kl float64, clipped bool) {
	A := j.A
	row := j.logits[i*A : i*A+A]
	g := j.dOut[i*A : i*A+A]
	g = g[:len(row)]
	mx := float64(row[0])
	for _, v := range row {
		mx = math.Max(mx, float64(v))
	}
	var se float64
	for _, v := range row {
		if d := float64(v) - mx; d == 0 {
			se++ // exp(0) is exactly 1
		} else {
			se += math.Exp(d)
		}
	}
	lse := mx + math.Log(se)
	for k, v := range row {
		lp := float64(v) - lse
		probs[k] = math.Exp(lp) // kept for the gradient below
		h -= probs[k] * lp
	}
	a := int(j.acts[i])
	logRatio := float64(row[a]) - lse - float64(j.old[i])
	ratio := math.Exp(logRatio)
	pg, dLogp := surrogate((float64(j.adv[i])-j.mean)*j.inv, ratio, j.clip)
	for k, v := range row {
		lp := float64(v) - lse
		pk := probs[k]
		gk := -dLogp*pk + j.ent*pk*(lp+h)
		if k == a {
			gk += dLogp
		}
		g[k] = float32(gk * j.invB)
	}
	return pg, h, (ratio - 1) - logRatio, math.Abs(ratio-1) > j.clip
}

const halfLog2Pi = 0.9189385332046727 // ½·log(2π)

// GaussianPPO implements Device.
func (d *CPU) GaussianPPO(p PPOPolicyArgs) {
	mu, dMu := d.data(p.Out), d.data(p.DOut)
	logStd, dLogStd := d.data(p.LogStd), d.data(p.DLogStd)
	acts, old, adv := d.data(p.Actions), d.data(p.OldLogp), d.data(p.Adv)
	stats := d.data(p.Stats)
	B, A := p.Out.Rows, p.Out.Cols
	mean, inv := normalizedAdv(adv, p.NormAdv)
	clip := float64(p.ClipCoef)
	invB := 1 / float64(B)
	var h float64 // entropy is the same for every sample
	for _, ls := range logStd {
		h += 0.5 + halfLog2Pi + float64(ls)
	}
	clear(dLogStd)
	var sumPG, sumKL, sumClip float64
	for i := 0; i < B; i++ {
		m := mu[i*A : i*A+A]
		act := acts[i*A : i*A+A]
		var logp float64
		for j := range m {
			z := (float64(act[j]) - float64(m[j])) / math.Exp(float64(logStd[j]))
			logp += -0.5*z*z - float64(logStd[j]) - halfLog2Pi
		}
		logRatio := logp - float64(old[i])
		ratio := math.Exp(logRatio)
		pg, dLogp := surrogate((float64(adv[i])-mean)*inv, ratio, clip)
		for j := range m {
			sd := math.Exp(float64(logStd[j]))
			diff := float64(act[j]) - float64(m[j])
			dMu[i*A+j] = float32(dLogp * diff / (sd * sd) * invB)
			z := diff / sd
			dLogStd[j] += float32(dLogp * (z*z - 1) * invB)
		}
		sumPG += pg
		sumKL += (ratio - 1) - logRatio
		if math.Abs(ratio-1) > clip {
			sumClip++
		}
	}
	for j := range dLogStd {
		dLogStd[j] -= p.EntCoef // d(−c·H)/dlogσ_j = −c for every sample
	}
	ppoStats(stats, sumPG, h*float64(B), sumKL, sumClip, B)
}

// ValueLoss implements Device.
func (d *CPU) ValueLoss(p ValueArgs) {
	v, old, ret, dv := d.data(p.Value), d.data(p.OldValue), d.data(p.Returns), d.data(p.DValue)
	stats := d.data(p.Stats)
	B := len(v)
	c := float64(p.ClipCoef)
	scale := float64(p.VFCoef) / float64(B)
	var sum float64
	for i := range v {
		diff := float64(v[i]) - float64(ret[i])
		loss := diff * diff
		grad := diff
		if p.Clip {
			vc := float64(old[i]) + math.Min(math.Max(float64(v[i])-float64(old[i]), -c), c)
			if lc := (vc - float64(ret[i])) * (vc - float64(ret[i])); lc > loss {
				loss, grad = lc, 0 // the clipped branch is flat in v
			}
		}
		sum += loss
		dv[i] = float32(grad * scale) // d(½·vf·mean(loss))/dv
	}
	stats[StatValueLoss] += float32(0.5 * sum / float64(B))
}

// ClipGradNorm implements Device.
func (d *CPU) ClipGradNorm(grads Tensor, maxNorm float32, stats Tensor) {
	g := d.data(grads)
	norm := math.Sqrt(float64(dot(g, g)))
	d.data(stats)[StatGradNorm] += float32(norm)
	if coef := float64(maxNorm) / (norm + 1e-6); coef < 1 {
		c := float32(coef)
		for i := range g {
			g[i] *= c
		}
	}
}

// Adam implements Device.
func (d *CPU) Adam(params, grads, m, v Tensor, a AdamArgs) {
	p, g, md, vd := d.data(params), d.data(grads), d.data(m), d.data(v)
	g, md, vd = g[:len(p)], md[:len(p)], vd[:len(p)]
	bc1 := 1 - math.Pow(float64(a.Beta1), float64(a.Step))
	bc2 := 1 - math.Pow(float64(a.Beta2), float64(a.Step))
	stepSize := float32(float64(a.LR) / bc1)
	invSqrtBC2 := float32(1 / math.Sqrt(bc2))
	b1, b2, eps := a.Beta1, a.Beta2, a.Eps
	start := 0
	if n8 := len(p) &^ 7; hasFMA && n8 > 0 {
		j := &d.adam
		j.p, j.g, j.m, j.v = p[:n8], g[:n8], md[:n8], vd[:n8]
		j.k = [8]float32{b1, 1 - b1, b2, 1 - b2, stepSize, invSqrtBC2, eps, 0}
		j.split = 0
		if d.threads >= 2 && n8 >= minParallelAdam {
			// Elementwise, so halves on two cores give the same bits; the
			// split is on a multiple of 8, so every element takes the
			// path it takes in one pass.
			j.split = n8 / 2 &^ 7
			if j.hi == nil {
				j.lo, j.hi = j.runLo, j.runHi
			}
			d.Both(j.hi, j.lo)
		} else {
			j.runLo(d)
		}
		start = n8
	}
	for i := start; i < len(p); i++ {
		gi := g[i]
		mi := b1*md[i] + (1-b1)*gi
		vi := b2*vd[i] + (1-b2)*gi*gi
		md[i], vd[i] = mi, vi
		p[i] -= stepSize * mi / (sqrt32(vi)*invSqrtBC2 + eps)
	}
}

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// minParallelAdam is the parameter count from which an Adam step is split
// across two cores (CartPole's 64-64 actor-critic has about 9,000).
const minParallelAdam = 4096

// adamJob is an Adam step's SIMD part, kept in the device so that handing
// half of it to the sidecar allocates nothing.
type adamJob struct {
	p, g, m, v []float32
	k          [8]float32
	split      int // the second half starts here; 0: one pass
	lo, hi     func(Device)
}

func (j *adamJob) runLo(Device) {
	n := len(j.p)
	if j.split > 0 {
		n = j.split
	}
	adam8(&j.p[0], &j.g[0], &j.m[0], &j.v[0], n, &j.k)
}

func (j *adamJob) runHi(Device) {
	i := j.split
	adam8(&j.p[i], &j.g[i], &j.m[i], &j.v[i], len(j.p)-i, &j.k)
}

// Kernels names the rounding of the CPU kernels this binary runs on this
// machine: "avx2+fma" (the assembly kernels) or "portable" (plain Go).
// Results are reproducible within one kind; the two round differently. The
// AVX-512 product kernels belong to "avx2+fma": they give its bits.
func Kernels() string {
	if hasFMA {
		return "avx2+fma"
	}
	return "portable"
}

// KernelSet names the kernels in use, for people: Kernels, with
// "+avx-512" where the AVX-512 product kernels run.
func KernelSet() string {
	if hasAVX512 {
		return Kernels() + "+avx-512"
	}
	return Kernels()
}
