package gpu

import (
	"fmt"
	"math"
	"sync"
)

// The CPU device's TransformerOps. Each op splits its rows (or its
// sequences and heads) across the worker pool when there are enough of
// them; every split keeps each value's arithmetic as in one pass, so the
// results do not depend on the number of cores.

var _ TransformerOps = (*CPU)(nil)

// lmMinParallel is the element count from which an elementwise or
// row-wise op is split across the pool.
const lmMinParallel = 1 << 15

// rows runs fn over [0, n) in contiguous chunks, shared with the
// device's helpers (lm_steal.go) when work (elements touched) is at least
// lmMinParallel.
func (d *CPU) rows(n, work int, fn func(lo, hi int)) {
	chunks := 1
	if work >= lmMinParallel {
		chunks = min(n, 4*d.pool.parts())
	}
	if chunks <= 1 {
		fn(0, n)
		return
	}
	d.stealer().run(chunks, func(c int) { fn(n*c/chunks, n*(c+1)/chunks) })
}

// Linear implements TransformerOps. A product of few rows (decoding,
// batched sampling) reads each weight once from memory and does little
// with it, so every route walks B's rows in order: up to gemvRows rows of
// A as streaming matrix-vector products, more as packed strips of B under
// the tiles, those strips (blocks of C's columns) taken in turn by the
// caller and the device's helpers, so each is read by one core where a
// split by rows would have every core read all of B. Many rows go to
// MatMul. Every route gives each element the same chain of multiply-adds:
// the same bits.
func (d *CPU) Linear(c, a, b Tensor, beta float32) {
	m, n, k := matMulShape(c, a, false, b, false)
	if !hasFMA || m > smallRows || k == 0 || n < 16 {
		d.MatMul(c, a, false, b, false, beta)
		return
	}
	d.linear(c, a, b, beta, nil)
}

// linear is Linear's split by blocks of columns, reading B from packed
// (PackWeight's layout) when it is given.
func (d *CPU) linear(c, a, b Tensor, beta float32, packed []float32) {
	m, n, k := c.Rows, c.Cols, a.Cols
	// Blocks of columns: strips of the packed path, which the caller and
	// the helpers share. A large matrix-vector product is split into one
	// block a core: it streams B from memory, and one core draws only about
	// two thirds of the memory's rate (SmolLM-135M decoding on an idle
	// 2-core Zen 4: 28–30 tokens/s on the caller alone, 43 split). The
	// blocks are stolen work, so on a loaded machine the caller takes the
	// block of a helper that is not running.
	width, chunks := packStrip, (n+packStrip-1)/packStrip
	switch parts := d.pool.parts(); {
	case m <= gemvRows && n*k >= gemvSplitMin && parts > 1:
		width = (n/parts + 15) &^ 15
		if packed != nil {
			width = (n/parts + 31) &^ 31 // whole groups of the pack
		}
		chunks = (n + width - 1) / width
	case m <= gemvRows || m*n*k < minParallelWork/8 || parts == 1:
		width, chunks = n, 1
	}
	cd, ad, bd := d.data(c), d.data(a), d.data(b)
	d.stealer().run(chunks, func(chunk int) {
		j0, j1 := chunk*width, min((chunk+1)*width, n)
		if beta != 0 && beta != 1 {
			for i := 0; i < m; i++ {
				row := cd[i*n+j0 : i*n+j1]
				for j := range row {
					row[j] *= beta
				}
			}
		}
		if packed != nil {
			packedStrips(cd, ad, packed, m, n, k, j0, j1, beta != 0)
			return
		}
		if m <= gemvRows {
			gemvBlock(cd, ad, bd, m, n, k, j0, j1, beta != 0)
			return
		}
		s := packPool.Get().(*[]float32)
		packedBlock(cd, ad, bd, m, n, k, j0, j1, beta != 0, s)
		packPool.Put(s)
	})
}

// smallRows is the most rows Linear splits by columns; gemvRows the most
// it takes one at a time.
const smallRows, gemvRows = 128, 6

// gemvSplitMin is the weights (elements) from which a matrix-vector
// product is split by columns between the cores: one core streams about
// two thirds of what two do from memory (18.6 against 28–42 GB/s here).
const gemvSplitMin = 1 << 18

// gemvStrip is the columns of C a matrix-vector pass keeps in cache (64 KB
// of a row of C, in L2) while B's rows stream through: each row of B is
// then read in runs of 64 KB, where runs of 4 KB (1,024 columns) left a
// third of the memory's rate unused (SmolLM-135M's head: 8.2 → 10.9 GB/s
// on one core).
const gemvStrip = 16384

// gemvBlock computes columns [j0, j1) of C (m×n) = A·B (+ C when add) one
// row of A at a time, in strips of gemvStrip columns and panels of gemmKC
// rows of B, so that the rows of A after the first meet a strip of a panel
// in cache.
func gemvBlock(c, a, b []float32, m, n, k, j0, j1 int, add bool) {
	for s0 := j0; s0 < j1; s0 += gemvStrip {
		s1 := min(s0+gemvStrip, j1)
		w := (s1 - s0) &^ 15
		if !add {
			for i := 0; i < m; i++ {
				clear(c[i*n+s0 : i*n+s1])
			}
		}
		if w > 0 {
			_ = b[(k-1)*n+s0+w-1] // the kernel's last read, in bounds
			for k0 := 0; k0 < k; k0 += gemmKC {
				kc := min(gemmKC, k-k0)
				for i := 0; i < m; i++ {
					_ = a[i*k+k0+kc-1]
					gemv(&c[i*n+s0], &a[i*k+k0], &b[k0*n+s0], n, kc, w)
				}
			}
		}
		if s0+w < s1 { // the last columns, as the portable kernel does them
			for i := 0; i < m; i++ {
				ci := c[i*n+s0+w : i*n+s1]
				for p := 0; p < k; p++ {
					av, br := a[i*k+p], b[p*n+s0+w:p*n+s1]
					ci := ci[:len(br)]
					for j, bv := range br {
						ci[j] += av * bv
					}
				}
			}
		}
	}
}

// packStrip is the columns of B a packed pass copies at once: a panel of
// gemmKC rows of it is 256 KB, kept in L2 while every row of A meets it.
const packStrip = 256

// packPool keeps the parts' packing buffers between calls.
var packPool = sync.Pool{New: func() any { s := make([]float32, gemmKC*packStrip); return &s }}

// packedBlock computes columns [j0, j1) of C = A·B (+ C when add) for a
// few dozen rows: each panel of B's block is copied row by row (a read in
// order from memory) into a contiguous strip, which the tiles then read
// from L2.
func packedBlock(c, a, b []float32, m, n, k, j0, j1 int, add bool, buf *[]float32) {
	for s0 := j0; s0 < j1; s0 += packStrip {
		s1 := min(s0+packStrip, j1)
		w := s1 - s0
		for k0 := 0; k0 < k; k0 += gemmKC {
			kc := min(gemmKC, k-k0)
			pk := (*buf)[:kc*w]
			for p := 0; p < kc; p++ {
				copy(pk[p*w:(p+1)*w], b[(k0+p)*n+s0:(k0+p)*n+s1])
			}
			sgemm(c[s0:], n, a[k0:], k, false, pk, w, m, w, kc, add || k0 > 0)
		}
	}
}

// Add implements TransformerOps.
func (d *CPU) Add(dst, src Tensor) {
	x, y := d.data(dst), d.data(src)
	if len(x) != len(y) {
		panic("gpu: add of tensors of different length")
	}
	d.rows(len(x), len(x), func(lo, hi int) {
		xs, ys := x[lo:hi], y[lo:hi]
		ys = ys[:len(xs)]
		for i := range xs {
			xs[i] += ys[i]
		}
	})
}

// Embed implements TransformerOps.
func (d *CPU) Embed(out, table Tensor, ids []int32, transposed bool) {
	o, t := d.data(out), d.data(table)
	h, v := table.Cols, table.Rows
	if transposed {
		h, v = v, h
	}
	if out.Rows != len(ids) || out.Cols != h {
		panic(fmt.Sprintf("gpu: embedding of %d ids into %d×%d from a table of %d×%d", len(ids), out.Rows, out.Cols, table.Rows, table.Cols))
	}
	checkIDs(ids, v)
	d.rows(len(ids), len(o), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row, id := o[i*h:(i+1)*h], int(ids[i])
			if !transposed {
				copy(row, t[id*h:(id+1)*h])
				continue
			}
			for j := range row {
				row[j] = t[j*v+id]
			}
		}
	})
}

func checkIDs(ids []int32, v int) {
	for _, id := range ids {
		if id < 0 || int(id) >= v {
			panic(fmt.Sprintf("gpu: token id %d outside a vocabulary of %d", id, v))
		}
	}
}

// EmbedGrad implements TransformerOps. The parts take blocks of the
// hidden columns, so two rows with the same id never race, and each
// element's sum runs over the rows in order.
func (d *CPU) EmbedGrad(dtable, dout Tensor, ids []int32, transposed bool) {
	g, t := d.data(dout), d.data(dtable)
	h, v := dtable.Cols, dtable.Rows
	if transposed {
		h, v = v, h
	}
	if dout.Rows != len(ids) || dout.Cols != h {
		panic("gpu: embedding gradient shapes differ")
	}
	checkIDs(ids, v)
	d.rows(h, len(g), func(lo, hi int) {
		for i, id := range ids {
			src := g[i*h+lo : i*h+hi]
			if !transposed {
				dst := t[int(id)*h+lo : int(id)*h+hi]
				dst = dst[:len(src)]
				for j := range src {
					dst[j] += src[j]
				}
				continue
			}
			for j, x := range src {
				t[(lo+j)*v+int(id)] += x
			}
		}
	})
}

// RMSNorm implements TransformerOps.
func (d *CPU) RMSNorm(a NormArgs) {
	a.check(false)
	x, y, w, rs := d.data(a.X), d.data(a.Y), d.data(a.W), d.data(a.RStd)
	c, width, groups := a.X.Cols, a.Width, a.Groups
	inv := 1 / float32(width)
	d.rows(a.X.Rows, len(x), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			for g := 0; g < groups; g++ {
				off := i*c + a.Col + g*width
				xs, ys := x[off:off+width], y[off:off+width]
				r := rsqrt32(dot(xs, xs)*inv + a.Eps)
				rs[i*groups+g] = r
				ys, w := ys[:len(xs)], w[:len(xs)]
				for j, v := range xs {
					ys[j] = v * r * w[j]
				}
			}
		}
	})
}

func rsqrt32(v float32) float32 { return float32(1 / math.Sqrt(float64(v))) }

// normChunk is the number of rows whose weight gradient RMSNormGrad sums
// in one chain; the chunks' sums are added in order, so the sum does not
// depend on how many cores took the chunks.
const normChunk = 64

// RMSNormGrad implements TransformerOps.
func (d *CPU) RMSNormGrad(a NormArgs) {
	a.check(true)
	x, w, rs, dy, dx, dw := d.data(a.X), d.data(a.W), d.data(a.RStd), d.data(a.DY), d.data(a.DX), d.data(a.DW)
	c, width, groups, n := a.X.Cols, a.Width, a.Groups, a.X.Rows
	chunks := (n + normChunk - 1) / normChunk
	partial := make([]float32, chunks*width)
	inv := 1 / float32(width)
	d.rows(chunks, len(x), func(lo, hi int) {
		g := make([]float32, width)
		for ch := lo; ch < hi; ch++ {
			pw := partial[ch*width : (ch+1)*width]
			for i := ch * normChunk; i < min((ch+1)*normChunk, n); i++ {
				for gr := 0; gr < groups; gr++ {
					off := i*c + a.Col + gr*width
					xs, dys, dxs := x[off:off+width], dy[off:off+width], dx[off:off+width]
					r := rs[i*groups+gr]
					var s float32
					for j, v := range dys {
						g[j] = v * w[j]
						pw[j] += v * xs[j] * r
					}
					s = dot(g, xs)
					k := s * r * r * inv
					for j := range g {
						v := r * (g[j] - xs[j]*k)
						if a.AddDX {
							dxs[j] += v
						} else {
							dxs[j] = v
						}
					}
				}
			}
		}
	})
	for ch := 0; ch < chunks; ch++ {
		pw := partial[ch*width : (ch+1)*width]
		for j, v := range pw {
			dw[j] += v
		}
	}
}

// Rope implements TransformerOps.
func (d *CPU) Rope(a RopeArgs) {
	a.check()
	x, cs, sn := d.data(a.X), d.data(a.Cos), d.data(a.Sin)
	half, c := a.HeadDim/2, a.X.Cols
	d.rows(a.X.Rows, a.X.Rows*a.Heads*a.HeadDim, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			p := int(a.Pos[i])
			cr, sr := cs[p*half:(p+1)*half], sn[p*half:(p+1)*half]
			for h := 0; h < a.Heads; h++ {
				off := i*c + a.Col + h*a.HeadDim
				x1, x2 := x[off:off+half], x[off+half:off+2*half]
				x2, cr, sr := x2[:len(x1)], cr[:len(x1)], sr[:len(x1)]
				if a.Inverse {
					for j, u := range x1 {
						v := x2[j]
						x1[j] = u*cr[j] + v*sr[j]
						x2[j] = v*cr[j] - u*sr[j]
					}
					continue
				}
				for j, u := range x1 {
					v := x2[j]
					x1[j] = u*cr[j] - v*sr[j]
					x2[j] = v*cr[j] + u*sr[j]
				}
			}
		}
	})
}

// SwiGLU implements TransformerOps.
func (d *CPU) SwiGLU(h, gu Tensor) {
	hd, g := d.data(h), d.data(gu)
	w := h.Cols
	if gu.Rows != h.Rows || gu.Cols != 2*w {
		panic("gpu: swiglu shapes differ")
	}
	d.rows(h.Rows, len(g), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gs, us, hs := g[i*2*w:i*2*w+w], g[i*2*w+w:(i+1)*2*w], hd[i*w:(i+1)*w]
			us, hs = us[:len(gs)], hs[:len(gs)]
			j0 := 0
			if n8 := w &^ 7; hasFMA && n8 > 0 {
				swiglu8(&hs[0], &gs[0], &us[0], n8)
				j0 = n8
			}
			for j := j0; j < w; j++ {
				x := gs[j]
				hs[j] = x / (1 + exp32(-x)) * us[j]
			}
		}
	})
}

// SwiGLUGrad implements TransformerOps.
func (d *CPU) SwiGLUGrad(dgu, dh, gu Tensor) {
	dg, dhd, g := d.data(dgu), d.data(dh), d.data(gu)
	w := dh.Cols
	if gu.Rows != dh.Rows || gu.Cols != 2*w || dgu.Rows != dh.Rows || dgu.Cols != 2*w {
		panic("gpu: swiglu gradient shapes differ")
	}
	d.rows(dh.Rows, len(g), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gs, us, dhs := g[i*2*w:i*2*w+w], g[i*2*w+w:(i+1)*2*w], dhd[i*w:(i+1)*w]
			dgs, dus := dg[i*2*w:i*2*w+w], dg[i*2*w+w:(i+1)*2*w]
			us, dhs, dgs, dus = us[:len(gs)], dhs[:len(gs)], dgs[:len(gs)], dus[:len(gs)]
			j0 := 0
			if n8 := w &^ 7; hasFMA && n8 > 0 {
				swigluGrad8(&dgs[0], &dus[0], &dhs[0], &gs[0], &us[0], n8)
				j0 = n8
			}
			for j := j0; j < w; j++ {
				x := gs[j]
				s := 1 / (1 + exp32(-x))
				dgs[j] = dhs[j] * us[j] * s * (1 + x*(1-s))
				dus[j] = dhs[j] * x * s
			}
		}
	})
}

// LogProbs implements TransformerOps.
func (d *CPU) LogProbs(a LogProbArgs) {
	a.check(false)
	z, lp := d.data(a.Logits), d.data(a.LogP)
	var ent []float32
	if a.Entropy.Len() > 0 {
		ent = d.data(a.Entropy)
	}
	v := a.Logits.Cols
	d.rows(a.Logits.Rows, len(z), func(lo, hi int) {
		buf := rowPool.Get().(*[]float32)
		defer rowPool.Put(buf)
		*buf = grow(*buf, v)
		for i := lo; i < hi; i++ {
			row := z[i*v : (i+1)*v]
			lse, h, _ := logSumExp(row, a.InvTemp, *buf, ent != nil)
			lp[i] = row[a.Targets[i]]*a.InvTemp - lse
			if ent != nil {
				ent[i] = h
			}
		}
	})
}

// rowPool keeps a vocabulary-wide buffer per part between calls.
var rowPool = sync.Pool{New: func() any { return new([]float32) }}

// logSumExp returns log Σ exp(t·z) over row, the entropy of softmax(t·z)
// when asked, and s = Σ e, where e (as long as row) receives
// exp(t·z − max).
func logSumExp(row []float32, t float32, e []float32, entropy bool) (lse, h, s float32) {
	mx := maxScaled(row, t)
	s = ExpSum(e, row, t, mx)
	ls := float32(math.Log(float64(s)))
	if entropy {
		// H = −Σ p·(t·z − lse) = log s − Σ e·(t·z − max)/s.
		h = ls - (t*dot(e, row)-mx*s)/s
	}
	return mx + ls, h, s
}

// LogProbsGrad implements TransformerOps.
func (d *CPU) LogProbsGrad(a LogProbArgs) {
	a.check(true)
	z, dlp := d.data(a.Logits), d.data(a.DLogP)
	var dent []float32
	if a.DEntropy.Len() > 0 {
		dent = d.data(a.DEntropy)
	}
	v, t := a.Logits.Cols, a.InvTemp
	d.rows(a.Logits.Rows, len(z), func(lo, hi int) {
		buf := rowPool.Get().(*[]float32)
		defer rowPool.Put(buf)
		*buf = grow(*buf, v)
		e := *buf
		for i := lo; i < hi; i++ {
			row := z[i*v : (i+1)*v]
			lse, h, sum := logSumExp(row, t, e, dent != nil)
			gl, ge := dlp[i], float32(0)
			if dent != nil {
				ge = dent[i]
			}
			// dlogp_t/dz_j = t·(δ_jt − p_j); dH/dz_j = −t·p_j·(log p_j + H).
			inv := 1 / sum // p_j = e_j/s
			e = e[:len(row)]
			for j, x := range row {
				p := e[j] * inv
				g := -gl * p
				if ge != 0 {
					g -= ge * p * (x*t - lse + h)
				}
				row[j] = g * t
			}
			row[a.Targets[i]] += gl * t
		}
	})
}

// ExpSum sets dst[i] = e^(src[i]·scale − shift) and returns their sum:
// the exponentials of a softmax, eight lanes at a time where the CPU has
// AVX2 (the host's sampling uses it too).
func ExpSum(dst, src []float32, scale, shift float32) float32 {
	dst = dst[:len(src)]
	n8 := 0
	var s float32
	if hasFMA {
		if n8 = len(src) &^ 7; n8 > 0 {
			s = expSum8(&dst[0], &src[0], n8, scale, shift)
		}
	}
	for i := n8; i < len(src); i++ {
		e := exp32(src[i]*scale - shift)
		dst[i] = e
		s += e
	}
	return s
}

// maxScaled is the largest x[i]·scale for a positive scale (the logits'
// inverse temperature, attention's 1/√d), taken as scale times the largest
// x[i]: rounding is monotonic, so that is the same number, and the SIMD
// kernel finds it eight elements at a time. x must not be empty. Where x
// holds a NaN the result may not be NaN, unlike max's; the callers then
// compute a sum of exponentials of every element, which is.
func maxScaled(x []float32, scale float32) float32 {
	n8, mx := 0, x[0]
	if hasFMA {
		if n8 = len(x) &^ 7; n8 > 0 {
			mx = max8(&x[0], n8)
		}
	}
	for _, v := range x[n8:] {
		mx = max(mx, v)
	}
	return mx * scale
}

// exp32 is e^x in float32 to within a few ulps: e^x = 2^n·e^r with
// |r| ≤ ln2/2, e^r by a degree-7 polynomial. It saturates to 0 below
// −87 and to +Inf above 88. The SIMD kernels (EXP8) compute the same
// steps with fused multiply-adds.
func exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	if x < -87 { // e^-87 is near float32's smallest normal
		return 0
	}
	if x > 88 { // beyond, 2ⁿ·p could overflow the exponent field
		return float32(math.Inf(1))
	}
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*ln2hi
	r -= n * ln2lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return math.Float32frombits(math.Float32bits(p) + uint32(int32(n))<<23)
}
