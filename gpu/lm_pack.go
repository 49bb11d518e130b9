package gpu

// Packed weights: a product of a few dozen rows (batched decoding) copies
// each panel of its weight matrix into a contiguous strip before the tiles
// read it (packedBlock), which on the 20M model's 64-sequence decoding was
// a fifth of the time: every step re-read ~80 MB from memory to copy it.
// The weights do not change while a batch is generated, so the generator
// lays each matrix out once per Generate call and the products of every
// step read that copy. Decoding one sequence reads it too: there the
// layout's long contiguous runs are what counts (packedGroup).

// PackedWeight is a weight matrix (Linear's B, k×n) laid out for
// LinearPacked. It is only as current as the last PackWeight: writing B
// afterwards leaves it stale, and the caller must pack again before the
// next product.
//
// The layout follows the products' loops, so that they read it in order:
// strip after strip of packStrip columns (a block of C that one core
// computes), in each strip panel after panel of gemmKC rows, in each
// panel group after group of the tiles' columns (32, then 16, then the
// last n mod 16), each group's rows side by side: one tile's share of B
// is one contiguous run, read from memory in order the first time and
// from L1 by the other rows' tiles. (Packed strips with B's rows 1 KB
// apart, as packedBlock copies them, were slower than copying: the first
// tile's strided reads from memory stalled.)
type PackedWeight struct {
	B    Tensor // the weight it was packed from
	data []float32
}

// packGroup is the width of the column group from column j of a strip w
// columns wide: 32 or 16 where the SIMD kernels go, then the rest.
func packGroup(w, j int) int {
	w16 := w &^ 15
	switch {
	case j+32 <= w16:
		return 32
	case j+16 <= w16:
		return 16
	}
	return w - j
}

// WeightPacker is TransformerOps that can lay weights out once for the
// products of many steps (the CPU device).
type WeightPacker interface {
	// PacksRows says whether LinearPacked of m rows reads the pack (else
	// it is Linear, which would copy panels of B or stream it): whether
	// packing in advance saves work.
	PacksRows(m int) bool
	// PackWeight lays b out into p, reusing p's memory.
	PackWeight(p *PackedWeight, b Tensor)
	// LinearPacked is Linear(c, a, p.B, beta), with the same bits, reading
	// p's layout instead of copying B. p must have been packed since B was
	// last written.
	LinearPacked(c, a Tensor, p *PackedWeight, beta float32)
}

var _ WeightPacker = (*CPU)(nil)

// packRows is the most rows LinearPacked multiplies from the pack (more
// go to MatMul, as Linear's do): a prompt chunk's products too, where the
// pack split by columns beat MatMul's split by rows, which has each core
// read all of B (320×2816×512: 99–106 against 80–87 GFLOP per CPU-second
// on one core, 85–93 against 67–74 GFLOP/s on two, a loaded 2-core EPYC).
const packRows = 512

// PacksRows implements WeightPacker.
func (d *CPU) PacksRows(m int) bool { return hasFMA && m >= 1 && m <= packRows }

// PackWeight implements WeightPacker. The strips are copied by the caller
// and the device's helpers in turn.
func (d *CPU) PackWeight(p *PackedWeight, b Tensor) {
	k, n := b.Rows, b.Cols
	p.B, p.data = b, grow(p.data, k*n)
	src, dst := d.data(b), p.data
	strips := (n + packStrip - 1) / packStrip
	chunks := 1
	if k*n >= lmMinParallel {
		chunks = strips
	}
	d.stealer().run(chunks, func(chunk int) {
		s0, s1 := 0, strips
		if chunks > 1 {
			s0, s1 = chunk, chunk+1
		}
		for s := s0; s < s1; s++ {
			j0 := s * packStrip
			w := min(packStrip, n-j0)
			out := dst[j0*k : j0*k+k*w]
			for k0 := 0; k0 < k; k0 += gemmKC {
				kc := min(gemmKC, k-k0)
				panel := out[k0*w : k0*w+kc*w]
				for j := 0; j < w; {
					gw := packGroup(w, j)
					group := panel[j*kc : (j+gw)*kc]
					for p := 0; p < kc; p++ {
						row := src[(k0+p)*n+j0+j:]
						copy(group[p*gw:(p+1)*gw], row[:gw])
					}
					j += gw
				}
			}
		}
	})
}

// LinearPacked implements WeightPacker.
func (d *CPU) LinearPacked(c, a Tensor, p *PackedWeight, beta float32) {
	m, n, k := matMulShape(c, a, false, p.B, false)
	if !d.PacksRows(m) || k == 0 || n < 16 || len(p.data) != k*n {
		d.Linear(c, a, p.B, beta)
		return
	}
	d.linear(c, a, p.B, beta, p.data)
}

// packedStrips computes columns [j0, j1) of C = A·B (+ C when add) from
// B packed (PackWeight's layout) with the kernels packedBlock's sgemm
// runs, over the same panels: the same chains of multiply-adds, so the
// same bits. Each group of columns meets every row of A before the next
// (A's panel, m×gemmKC, stays in L2). j0 and j1 lie on groups' bounds
// (multiples of 32 do), not only on strips': decoding splits a matrix
// between the cores by halves, each then reading its groups of a panel as
// one contiguous run.
func packedStrips(c, a, packed []float32, m, n, k, j0, j1 int, add bool) {
	for s0 := j0 - j0%packStrip; s0 < j1; s0 += packStrip {
		w := min(packStrip, n-s0)
		strip := packed[s0*k : s0*k+k*w]
		for k0 := 0; k0 < k; k0 += gemmKC {
			kc := min(gemmKC, k-k0)
			panel := strip[k0*w : k0*w+kc*w]
			zero := !add && k0 == 0
			for j := max(j0-s0, 0); j < min(w, j1-s0); {
				gw := packGroup(w, j)
				packedGroup(c[s0+j:], n, a[k0:], k, panel[j*kc:(j+gw)*kc], gw, m, kc, zero)
				j += gw
			}
		}
	}
}

// packedGroup computes C (m×gw, rows ldc apart) = A·B (+ C unless zero)
// for one group of gw columns of a panel (B kc×gw, contiguous; A's rows
// lda apart): tiles of eight rows where AVX-512 has them, then of four,
// then single rows, as sgemm takes them, each over the whole group in one
// pass (batch-1 decoding is all single rows, and streams the pack); a
// group narrower than 16 in Go, as sgemm's last columns.
func packedGroup(c []float32, ldc int, a []float32, lda int, b []float32, gw, m, kc int, zero bool) {
	_ = c[(m-1)*ldc+gw-1] // the kernels' last reads and writes, in bounds
	_ = a[(m-1)*lda+kc-1]
	if gw < 16 {
		for i := 0; i < m; i++ {
			ci := c[i*ldc : i*ldc+gw]
			if zero {
				clear(ci)
			}
			for p := 0; p < kc; p++ {
				av, br := a[i*lda+p], b[p*gw:(p+1)*gw]
				for j, bv := range br {
					ci[j] += av * bv
				}
			}
		}
		return
	}
	i := 0
	if hasAVX512 {
		t := tile8x16
		if gw == 32 {
			t = tile8x32
		}
		for ; i+8 <= m; i += 8 {
			t.plain(&c[i*ldc], ldc, &a[i*lda], lda, &b[0], gw, kc, zero)
		}
	}
	for ; i+4 <= m; i += 4 {
		for j := 0; j < gw; j += 16 {
			gemm4x16(&c[i*ldc+j], ldc, &a[i*lda], lda, &b[j], gw, kc, zero)
		}
	}
	for ; i < m; i++ { // a row of the group at a time, in the order it lies
		if gw == 32 {
			gemm1x32(&c[i*ldc], &a[i*lda], 1, &b[0], gw, kc, zero)
		} else {
			gemm1x16(&c[i*ldc], &a[i*lda], 1, &b[0], gw, kc, zero)
		}
	}
}
