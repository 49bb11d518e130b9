package gpu

import (
	"cmp"
	"sync"
)

// minParallelWork is the multiply-add count above which a product is split
// across cores; below it the hand-off costs more than it saves. Measured on
// two cores: splitting CartPole's 128×64×64 minibatch products made a PPO
// iteration 20% slower (158k vs 192k steps/s); 256-wide layers gain.
const minParallelWork = 1 << 22

// minParallelOutput is the size of C from which a product with a
// transposed B is split by columns however shallow it is: writing C is then
// the work. MinAtar's policy head sends its gradient back as a 1,024×128
// product of depth 3, whose 512 KB of fresh C took one core 80 µs, a
// fiftieth of the update. (Products split by rows keep minParallelWork:
// with this rule too, 256 envs × [64,64] measured no faster.)
const minParallelOutput = 1 << 17

// gemmArgs describe C += op(A)·B for row-major C (m×n) and B (k×n). A is
// m×k (lda = k) or, when transA, stored k×m (lda = m) and read transposed.
// C's and B's rows are ldc and ldb apart, n when 0 (a block of columns of
// a wider C has more).
type gemmArgs struct {
	c, a, b  []float32
	n, k     int
	lda      int
	ldc, ldb int
	transA   bool
	// overwrite: C holds garbage and the SIMD kernels cover every column
	// (n a multiple of 16), so the first panel starts from zero.
	overwrite bool
}

// gemmTask is one horizontal band [lo, hi) of C or, when fn is set, part
// lo of a job split by each.
type gemmTask struct {
	gemmArgs
	lo, hi int
	fn     func(part int)
}

// run does the task, with pack for packing A.
func (t *gemmTask) run(pack *[]float32) {
	if t.fn != nil {
		t.fn(t.lo)
		return
	}
	gemmRows(&t.gemmArgs, t.lo, t.hi, pack)
}

// workerPool splits work across sidecars, one per extra core, which poll
// for a while after each job before they park (see sidecarSpin): a parked
// worker's thread took 110–130 µs to wake on a 2-core virtual machine,
// several times in every MinAtar minibatch. The caller waits for its
// workers' parts rather than taking back one not yet started, which
// measured faster (an idle caller is woken by the worker that finishes).
// The first sidecar also runs Both's side pass, so that helpers never
// outnumber the cores. Nothing is allocated per split.
type workerPool struct {
	workers []*sidecar
	tasks   []gemmTask     // task i goes to workers[i]
	jobs    []func(Device) // jobs[i] runs tasks[i] with a packing buffer of its own
	pack    []float32      // the caller's buffer for packing A (see gemmRows)
	once    sync.Once
	closed  bool // set by close: products then run on the calling goroutine
}

func newWorkerPool(workers int) *workerPool {
	p := &workerPool{tasks: make([]gemmTask, workers)}
	for i := 0; i < workers; i++ {
		task, pack := &p.tasks[i], []float32(nil)
		p.workers = append(p.workers, startSidecar())
		p.jobs = append(p.jobs, func(Device) { task.run(&pack) })
	}
	return p
}

func (p *workerPool) close() {
	p.once.Do(func() {
		p.closed = true
		for _, w := range p.workers {
			w.stop()
		}
	})
}

// start posts task i to its worker.
func (p *workerPool) start(i int, t gemmTask) {
	p.tasks[i] = t
	p.workers[i].post(p.jobs[i], nil)
}

// wait returns when the first n posted tasks are done.
func (p *workerPool) wait(n int) {
	for _, w := range p.workers[:n] {
		w.finish(false)
	}
}

// gemm computes C += op(A)·B over m rows, splitting the rows of C across
// the pool when the product is large enough.
func (p *workerPool) gemm(g gemmArgs, m int) {
	parts := p.parts()
	if parts == 1 || m*g.n*g.k < minParallelWork || m < 8*parts {
		gemmRows(&g, 0, m, &p.pack)
		return
	}
	band := (m + parts - 1) / parts
	band = (band + 3) &^ 3 // keep bands aligned to the kernels' 4-row blocks
	used := 0
	for i := range p.workers {
		lo := (i + 1) * band
		if lo >= m {
			break
		}
		p.start(i, gemmTask{gemmArgs: g, lo: lo, hi: min(lo+band, m)})
		used++
	}
	gemmRows(&g, 0, min(band, m), &p.pack)
	p.wait(used)
}

// parts is how many parts each can run at once: the workers and the caller.
func (p *workerPool) parts() int {
	if p.closed {
		return 1
	}
	return len(p.workers) + 1
}

// each runs fn(part) for every part in [0, parts), parts at most p.parts():
// part 0 on the caller, the others on the workers. fn should be a method
// value kept by the caller, so that handing it over allocates nothing.
func (p *workerPool) each(parts int, fn func(part int)) {
	for i := 1; i < parts; i++ {
		p.start(i-1, gemmTask{lo: i, fn: fn})
	}
	fn(0)
	p.wait(parts - 1)
}

// gemmKC is the depth of the panels the SIMD kernels take a long product
// in (weight gradients sum over every sample of a minibatch): the strips of
// A and B that one block of C reads then stay in L1/L2 while the next block
// reuses them, instead of streaming the whole depth from memory. The
// kernels continue from C's values, so the panels give the same bits as
// one pass. 256 rather than 128: the AVX-512 kernels load and store their
// block of C half as often, 5% faster on 256-wide layers
// (BenchmarkMatMulShapes), and the AVX2 ones do not mind.
const gemmKC = 256

// gemmMC is the number of rows of C computed against one strip of B's
// panel (16 to 64 columns, as tileFor picks) before moving to the next strip:
// the strip stays in L1/L2 and the rows of A it meets (at most 64 KB) in
// L2. Without it, every 4 rows of a tall product would read all of a
// 256-wide B from L2.
const gemmMC = 64

// gemmNC is the widest block of columns gemmRows takes through every
// block of rows before the next: the panel's rows of the block (256 × 512
// values, 512 KB) then stay in L2 while all the blocks of rows meet them.
// Without it, a product wider than that (the 20M model's 2,816-wide
// gate/up and 4,096-wide head) streamed the whole panel from L3 for every
// block of 64 rows. Each element of C gets the same chain of multiply-adds.
const gemmNC = 512

// gemmRows computes rows [lo, hi) of C += op(A)·B: the SIMD kernels take the
// columns in strips of 16 or more where the CPU has them, the portable
// kernel the rest. A transposed A whose rows are longer than a block of C
// is packed first when pack is given: each block of gemmMC of its columns
// over the panel side by side, into *pack (grown to the rows × gemmKC),
// once a panel for every block of columns. Stored, consecutive elements of
// a column lie a whole row apart (4 KB in a 1,024-wide layer's weight
// gradient), so every step of the kernels would touch a new page and the
// same cache set, for every strip of B again. The products are the same.
func gemmRows(g *gemmArgs, lo, hi int, pack *[]float32) {
	c, a, b, n, k := g.c, g.a, g.b, g.n, g.k
	ldc, ldb := cmp.Or(g.ldc, n), cmp.Or(g.ldb, n)
	n16 := 0
	if hasFMA && k > 0 {
		n16 = n &^ 15
	}
	hi4 := lo + (hi-lo)&^3
	packA := g.transA && pack != nil && g.lda > min(gemmMC, hi4-lo)
	for k0 := 0; k0 < k && n16 > 0; k0 += gemmKC {
		kc := min(gemmKC, k-k0)
		bp := b[k0*ldb:] // the panel's rows of B
		zero := g.overwrite && k0 == 0
		if packA {
			*pack = grow(*pack, (hi4-lo)*kc)
			for i0 := lo; i0 < hi4; i0 += gemmMC {
				w, at, blk := min(gemmMC, hi4-i0), a[k0*g.lda+i0:], (*pack)[(i0-lo)*kc:]
				for p := 0; p < kc; p++ {
					copy(blk[p*w:p*w+w], at[p*g.lda:p*g.lda+w])
				}
			}
		}
		// Blocks of gemmNC columns (no thin last one), each through every
		// block of rows.
		for jc, jc1 := 0, 0; jc < n16; jc = jc1 {
			jc1 = min(jc+gemmNC, n16)
			if n16-jc1 < gemmNC/2 {
				jc1 = n16
			}
			for i0 := lo; i0 < hi4; i0 += gemmMC {
				i1 := min(i0+gemmMC, hi4)
				// The block's A: row i of op(A) at at[(i−i0)·k] (as stored) or
				// its column at at[i−i0], lda apart (transposed).
				at, lda := a[i0*k+k0:], k
				switch {
				case packA:
					at, lda = (*pack)[(i0-lo)*kc:], i1-i0
				case g.transA:
					at, lda = a[k0*g.lda+i0:], g.lda
				}
				for j := jc; j < jc1; {
					t := tileFor(n16, j)
					i := i0
					for ; i+t.rows <= i1; i += t.rows {
						if t.cols == 32 {
							prefetchNextTile(c, ldc, i, j, i0, i1, jc, jc1, lo, hi4, n16)
						}
						t.run(g.transA, c[i*ldc+j:], ldc, at, i-i0, lda, bp[j:], ldb, kc, zero)
					}
					for ; i < i1; i += 4 { // rows left under a tile of 8: 4×16 tiles
						for jj := j; jj < j+t.cols; jj += 16 {
							tile4x16.run(g.transA, c[i*ldc+jj:], ldc, at, i-i0, lda, bp[jj:], ldb, kc, zero)
						}
					}
					j += t.cols
				}
			}
			for i := hi4; i < hi; i++ {
				ai, inc := &a[i*k+k0], 1 // row i of A
				if g.transA {
					ai, inc = &a[k0*g.lda+i], g.lda // column i of A as stored
				}
				for j := jc; j < jc1; j += 16 {
					gemm1x16(&c[i*ldc+j], ai, inc, &bp[j], ldb, kc, zero)
				}
			}
		}
	}
	if n16 < n {
		gemmGo(g, lo, hi, n16)
	}
}

// prefetchNextTile asks for the block of C that gemmRows's 8×32 tiles take
// after the one at row i, column j (of the block of rows [i0, i1) and
// columns [jc, jc1) of the band [lo, hi4)), so that its kernel finds C in
// L1 instead of waiting for eight rows from L3 or memory before its first
// multiply-add: C (megabytes in the 20M model's products) is read and
// written once a panel, long after it was last touched. 7 % faster on two
// cores (BenchmarkMatMulShapes' lm products with BENCH_THREADS=2: median
// 182 → 196 GFLOP/s over two alternated rounds).
func prefetchNextTile(c []float32, ldc, i, j, i0, i1, jc, jc1, lo, hi4, n16 int) {
	switch {
	case i+16 <= i1:
		prefetchTile(&c[(i+8)*ldc+j], ldc)
	case j+32 < jc1:
		prefetchTile(&c[i0*ldc+j+32], ldc)
	case i1+8 <= hi4:
		prefetchTile(&c[i1*ldc+jc], ldc)
	case jc1 < n16:
		prefetchTile(&c[lo*ldc+jc1], ldc)
	}
}

// kernel computes a block of C += op(A)·B over a panel of depth k; the
// assembly kernels of gemm_amd64.s.
type kernel func(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)

// tile is a kernel pair for a rows×cols block of C: with A as stored, and
// with A transposed.
type tile struct {
	rows, cols   int
	plain, trans kernel
}

// run computes the tile whose corner is c[0] (rows ldc apart) over a panel
// of depth kc: A's rows i… of the block at (row r of op(A) at a[r·lda], or
// when trans its column at a[r], rows lda apart), B's panel at b (rows ldb
// apart).
func (t tile) run(trans bool, c []float32, ldc int, a []float32, i, lda int, b []float32, ldb, kc int, zero bool) {
	if trans {
		t.trans(&c[0], ldc, &a[i], lda, &b[0], ldb, kc, zero)
	} else {
		t.plain(&c[0], ldc, &a[i*lda], lda, &b[0], ldb, kc, zero)
	}
}

// tileFor picks the tile for columns j… of a C n16 columns wide. With
// AVX-512, C wider than 64 columns takes 8×32 tiles: a strip of B's panel
// (32 KB) stays in L1 and each B load feeds 16 multiply-adds, 15–25 %
// faster than 4×64 tiles on 256-wide layers. Up to 64 columns, 4×64 tiles
// read A once instead of once per strip, 5–15 % faster. 16-column strips
// take 8×16 tiles: eight chains of multiply-adds hide their latency, 1.6×
// the AVX2 tile on a 16-channel convolution. Without AVX-512, 4×16 tiles.
// Every tile runs each element's chain in the same order: the same bits.
func tileFor(n16, j int) tile {
	switch {
	case !hasAVX512:
		return tile4x16
	case n16 > 64 && j+32 <= n16:
		return tile8x32
	case j+64 <= n16:
		return tile4x64
	}
	return tile8x16
}

// gemmGo computes rows [lo, hi), columns [j0, n) of C += op(A)·B in plain
// Go: each loaded B element feeds the multiply-adds of four rows of C.
func gemmGo(g *gemmArgs, lo, hi, j0 int) {
	c, a, b, n, k := g.c, g.a, g.b, g.n, g.k
	ldc, ldb := cmp.Or(g.ldc, n), cmp.Or(g.ldb, n)
	at := func(i, p int) float32 { // op(A)[i, p]
		if g.transA {
			return a[p*g.lda+i]
		}
		return a[i*k+p]
	}
	i := lo
	for ; i+4 <= hi; i += 4 {
		c0 := c[i*ldc+j0 : i*ldc+n]
		c1 := c[(i+1)*ldc+j0 : (i+1)*ldc+n]
		c2 := c[(i+2)*ldc+j0 : (i+2)*ldc+n]
		c3 := c[(i+3)*ldc+j0 : (i+3)*ldc+n]
		for p := 0; p < k; p++ {
			a0, a1, a2, a3 := at(i, p), at(i+1, p), at(i+2, p), at(i+3, p)
			br := b[p*ldb+j0 : p*ldb+n]
			c0, c1, c2, c3 := c0[:len(br)], c1[:len(br)], c2[:len(br)], c3[:len(br)]
			for j, bv := range br {
				c0[j] += a0 * bv
				c1[j] += a1 * bv
				c2[j] += a2 * bv
				c3[j] += a3 * bv
			}
		}
	}
	for ; i < hi; i++ {
		ci := c[i*ldc+j0 : i*ldc+n]
		for p := 0; p < k; p++ {
			av := at(i, p)
			br := b[p*ldb+j0 : p*ldb+n]
			ci := ci[:len(br)]
			for j, bv := range br {
				ci[j] += av * bv
			}
		}
	}
}

// dot is Σ a[i]·b[i], with the SIMD kernel for all but the last k mod 16.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	k16 := 0
	if hasFMA {
		k16 = len(a) &^ 15
		if k16 > 0 {
			s = dot16(&a[0], &b[0], k16)
		}
	}
	for i := k16; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}
