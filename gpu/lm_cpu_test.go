package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func f32s(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

func f64s(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func randF64(r *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = (r.Float64()*2 - 1) * scale
	}
	return out
}

// closeTo fails when got and want differ by more than tol relative to
// want's largest magnitude (or absolutely, when want is all small).
func closeTo(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	var ref, worst float64
	at := 0
	for _, w := range want {
		ref = math.Max(ref, math.Abs(w))
	}
	for i, w := range want {
		d := math.Abs(float64(got[i]) - w)
		if math.IsNaN(float64(got[i])) {
			d = math.Inf(1)
		}
		if d > worst {
			worst, at = d, i
		}
	}
	if worst > tol*math.Max(ref, 1) {
		t.Fatalf("%s: element %d is %v, want %v (max error %.3g, scale %.3g)", what, at, got[at], want[at], worst, ref)
	}
}

// fdGrad is the central finite-difference gradient of Σ r·f(x) at the
// coordinates idx of x.
func fdGrad(x []float64, idx []int, r []float64, f func([]float64) []float64) []float64 {
	loss := func(x []float64) float64 {
		var s float64
		for i, v := range f(x) {
			s += r[i] * v
		}
		return s
	}
	g := make([]float64, len(idx))
	for k, i := range idx {
		const eps = 1e-5
		old := x[i]
		x[i] = old + eps
		up := loss(x)
		x[i] = old - eps
		down := loss(x)
		x[i] = old
		g[k] = (up - down) / (2 * eps)
	}
	return g
}

// checkGrad compares an analytic gradient (float32, from a CPU op) with
// finite differences at up to 300 coordinates.
func checkGrad(t *testing.T, what string, r *rand.Rand, x []float64, analytic []float32, dy []float64, f func([]float64) []float64) {
	t.Helper()
	idx := make([]int, 0, 300)
	if len(x) <= 300 {
		for i := range x {
			idx = append(idx, i)
		}
	} else {
		for len(idx) < 300 {
			idx = append(idx, r.IntN(len(x)))
		}
	}
	fd := fdGrad(x, idx, dy, f)
	got := make([]float32, len(idx))
	for k, i := range idx {
		got[k] = analytic[i]
	}
	closeTo(t, what+" gradient vs finite differences", got, fd, 2e-3)
}

func TestSgemmWithStrides(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, s := range []struct{ m, n, k int }{{1, 16, 5}, {3, 40, 7}, {9, 64, 300}, {70, 33, 64}, {64, 80, 16}, {5, 8, 3}, {3, 144, 70}} {
		for _, transA := range []bool{false, true} {
			for _, add := range []bool{false, true} {
				lda, ldb, ldc := s.k+3, s.n+5, s.n+2
				if transA {
					lda = s.m + 4
				}
				rowsA := s.m
				if transA {
					rowsA = s.k
				}
				a, b, c := randSlice(r, rowsA*lda, 1), randSlice(r, s.k*ldb, 1), randSlice(r, s.m*ldc, 1)
				want := f64s(c)
				for i := 0; i < s.m; i++ {
					for j := 0; j < s.n; j++ {
						v := 0.0
						if add {
							v = want[i*ldc+j]
						}
						for p := 0; p < s.k; p++ {
							var av float32
							if transA {
								av = a[p*lda+i]
							} else {
								av = a[i*lda+p]
							}
							v += float64(av) * float64(b[p*ldb+j])
						}
						want[i*ldc+j] = v
					}
				}
				sgemm(c, ldc, a, lda, transA, b, ldb, s.m, s.n, s.k, add)
				closeTo(t, fmt.Sprintf("%+v trans %v add %v", s, transA, add), c, want, 1e-5)
			}
		}
	}
}

// A row of a product has the same bits whether sgemm takes it in a tile
// of several rows or alone (the one-row kernels of 64 and 16 columns):
// attention over a KV cache multiplies a few rows at a time.
func TestSgemmRowsHaveTheSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const m, n, k = 11, 208, 90
	a, b := randSlice(r, m*k, 1), randSlice(r, k*n, 1)
	for _, add := range []bool{false, true} {
		c0 := randSlice(r, m*n, 1)
		all := append([]float32(nil), c0...)
		sgemm(all, n, a, k, false, b, n, m, n, k, add)
		for i := 0; i < m; i++ {
			row := append([]float32(nil), c0[i*n:(i+1)*n]...)
			sgemm(row, n, a[i*k:], k, false, b, n, 1, n, k, add)
			for j, v := range row {
				if all[i*n+j] != v {
					t.Fatalf("add %v: row %d column %d is %v alone, %v among %d rows", add, i, j, v, all[i*n+j], m)
				}
			}
		}
	}
}

// Linear gives every row the bits MatMul gives it, however many rows.
func TestLinearMatchesMatMulBits(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(1, 1))
	for _, m := range []int{1, 2, 3, 5, 6, 7, 17, 64, 128} {
		for _, nk := range [][2]int{{576, 576}, {1536, 576}, {200, 300}, {4096, 512}, {80, 267}, {48, 13}} {
			for _, beta := range []float32{0, 1, 0.5} {
				n, k := nk[0], nk[1]
				a, b, c0 := randSlice(r, m*k, 1), randSlice(r, k*n, 1), randSlice(r, m*n, 1)
				c1, c2 := tensorFrom(d, m, n, c0), tensorFrom(d, m, n, c0)
				at, bt := tensorFrom(d, m, k, a), tensorFrom(d, k, n, b)
				d.Linear(c1, at, bt, beta)
				d.MatMul(c2, at, false, bt, false, beta)
				for i, v := range d.Data(c2) {
					if d.Data(c1)[i] != v {
						t.Fatalf("m %d n %d k %d beta %v: element %d is %v, MatMul gives %v", m, n, k, beta, i, d.Data(c1)[i], v)
					}
				}
			}
		}
	}
}

func TestEmbedAndItsAdjoint(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(2, 2))
	const v, h = 50, 24
	ids := []int32{3, 0, 49, 3, 7, 3}
	for _, transposed := range []bool{false, true} {
		rows, cols := v, h
		if transposed {
			rows, cols = h, v
		}
		tab := randSlice(r, v*h, 1)
		table := tensorFrom(d, rows, cols, tab)
		out := d.Alloc(len(ids), h)
		d.Embed(out, table, ids, transposed)
		for i, id := range ids {
			for j := 0; j < h; j++ {
				want := tab[int(id)*h+j]
				if transposed {
					want = tab[j*v+int(id)]
				}
				if got := d.Data(out)[i*h+j]; got != want {
					t.Fatalf("transposed %v: out[%d,%d] = %v, want %v", transposed, i, j, got, want)
				}
			}
		}
		// <Embed(T), G> = <T, EmbedGrad(G)>.
		gv := randSlice(r, len(ids)*h, 1)
		dt := d.Alloc(rows, cols)
		d.EmbedGrad(dt, tensorFrom(d, len(ids), h, gv), ids, transposed)
		var lhs, rhs float64
		for i, g := range gv {
			lhs += float64(g) * float64(d.Data(out)[i])
		}
		for i, g := range d.Data(dt) {
			rhs += float64(g) * float64(tab[i])
		}
		if math.Abs(lhs-rhs) > 1e-4*math.Abs(lhs) {
			t.Errorf("transposed %v: <Embed(T),G> = %v but <T,EmbedGrad(G)> = %v", transposed, lhs, rhs)
		}
	}
}

func TestRMSNormAndGrad(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(3, 3))
	for _, s := range []struct{ n, c, col, groups, width int }{
		{5, 24, 0, 1, 24}, {130, 64, 0, 1, 64}, {7, 48, 8, 3, 8}, {3, 96, 0, 4, 16}, {2, 20, 4, 1, 13},
	} {
		name := fmt.Sprintf("%+v", s)
		x, w := randF64(r, s.n*s.c, 2), randF64(r, s.width, 1)
		for i := range w {
			w[i] += 1.5
		}
		const eps = 1e-6
		xt, yt, wt := tensorFrom(d, s.n, s.c, f32s(x)), tensorFrom(d, s.n, s.c, f32s(x)), tensorFrom(d, 1, s.width, f32s(w))
		rs := d.Alloc(s.n, s.groups)
		a := NormArgs{X: xt, Y: yt, W: wt, RStd: rs, Col: s.col, Groups: s.groups, Width: s.width, Eps: eps}
		d.RMSNorm(a)
		closeTo(t, name+" forward", d.Data(yt), refRMSNorm(x, s.c, s.col, s.groups, s.width, w, eps), 1e-5)
		dy := randF64(r, s.n*s.c, 1)
		for _, add := range []bool{false, true} {
			base := randF64(r, s.n*s.c, 1)
			a.DY, a.DX, a.DW, a.AddDX = tensorFrom(d, s.n, s.c, f32s(dy)), tensorFrom(d, s.n, s.c, f32s(base)), d.Alloc(1, s.width), add
			d.RMSNormGrad(a)
			dx := d.Data(a.DX)
			if add {
				for i := range dx {
					dx[i] -= float32(base[i])
				}
			}
			// Columns outside the groups pass straight through.
			f := func(x []float64) []float64 { return refRMSNorm(x, s.c, s.col, s.groups, s.width, w, eps) }
			inGroups := func(i int) bool { j := i % s.c; return j >= s.col && j < s.col+s.groups*s.width }
			for i := range dx {
				if !inGroups(i) {
					dx[i] = float32(dy[i]) // the identity's gradient, which RMSNormGrad leaves to the caller
					if add {
						dx[i] = 0
					}
				}
			}
			if !add {
				checkGrad(t, name+" dx", r, x, dx, dy, f)
			}
			checkGrad(t, name+" dw", r, w, d.Data(a.DW), dy, func(w []float64) []float64 { return refRMSNorm(x, s.c, s.col, s.groups, s.width, w, eps) })
		}
	}
}

func TestRopeAndItsInverse(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(4, 4))
	const n, c, col, heads, hd = 9, 80, 16, 3, 16
	cs, sn := refRopeTables(40, hd, 10000)
	cos, sin := tensorFrom(d, 40, hd/2, cs), tensorFrom(d, 40, hd/2, sn)
	pos := []int32{0, 1, 2, 39, 5, 0, 17, 3, 3}
	x := randF64(r, n*c, 1)
	xt := tensorFrom(d, n, c, f32s(x))
	d.Rope(RopeArgs{X: xt, Col: col, Heads: heads, HeadDim: hd, Pos: pos, Cos: cos, Sin: sin})
	closeTo(t, "rope", d.Data(xt), refRope(x, c, col, heads, hd, pos, cs, sn, false), 1e-6)
	// The inverse is the adjoint (a rotation's transpose): the backward.
	dy := randF64(r, n*c, 1)
	g := tensorFrom(d, n, c, f32s(dy))
	d.Rope(RopeArgs{X: g, Col: col, Heads: heads, HeadDim: hd, Pos: pos, Cos: cos, Sin: sin, Inverse: true})
	checkGrad(t, "rope", r, x, d.Data(g), dy, func(x []float64) []float64 { return refRope(x, c, col, heads, hd, pos, cs, sn, false) })
}

func TestSwiGLUAndGrad(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(5, 5))
	for _, s := range []struct{ n, w int }{{3, 7}, {300, 96}} {
		gu := randF64(r, s.n*2*s.w, 4)
		gut, h := tensorFrom(d, s.n, 2*s.w, f32s(gu)), d.Alloc(s.n, s.w)
		d.SwiGLU(h, gut)
		closeTo(t, "swiglu", d.Data(h), refSwiGLU(gu, s.w), 1e-6)
		dh := randF64(r, s.n*s.w, 1)
		dgu := d.Alloc(s.n, 2*s.w)
		d.SwiGLUGrad(dgu, tensorFrom(d, s.n, s.w, f32s(dh)), gut)
		checkGrad(t, "swiglu", r, gu, d.Data(dgu), dh, func(gu []float64) []float64 { return refSwiGLU(gu, s.w) })
	}
}

// attnCase is a batch for the attention tests: a mask with left and right
// padding when padded.
type attnCase struct {
	batch, seq, heads, kvHeads, hd int
	padded                         bool
}

func (c attnCase) mask() []int32 {
	if !c.padded {
		return nil
	}
	m := make([]int32, c.batch*c.seq)
	for b := 0; b < c.batch; b++ {
		for i := 0; i < c.seq; i++ {
			left, right := b%3, (b+1)%2*2 // left padding, right padding
			if i >= left && i < c.seq-right {
				m[b*c.seq+i] = 1
			}
		}
	}
	return m
}

func TestAttentionAndGrad(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(6, 6))
	for _, c := range []attnCase{
		{1, 5, 2, 1, 8, false}, {3, 7, 4, 2, 16, true}, {2, 70, 4, 2, 16, true}, {2, 9, 3, 3, 24, true}, {1, 140, 2, 1, 32, false},
	} {
		name := fmt.Sprintf("%+v", c)
		w, n := (c.heads+2*c.kvHeads)*c.hd, c.batch*c.seq
		scale := 1 / math.Sqrt(float64(c.hd))
		qkv := randF64(r, n*w, 1.5)
		mask := c.mask()
		a := AttentionArgs{QKV: tensorFrom(d, n, w, f32s(qkv)), Out: d.Alloc(n, c.heads*c.hd), LSE: d.Alloc(n, c.heads), Mask: mask,
			Batch: c.batch, Seq: c.seq, Heads: c.heads, KVHeads: c.kvHeads, HeadDim: c.hd, Scale: float32(scale)}
		d.Attention(a)
		f := func(qkv []float64) []float64 {
			return refAttention(qkv, mask, c.batch, c.seq, c.heads, c.kvHeads, c.hd, scale)
		}
		closeTo(t, name+" forward", d.Data(a.Out), f(qkv), 1e-5)
		dout := randF64(r, n*c.heads*c.hd, 1)
		for i := range dout { // padding rows get no gradient from anything downstream
			if mask != nil && mask[i/(c.heads*c.hd)] == 0 {
				dout[i] = 0
			}
		}
		a.DOut, a.DQKV = tensorFrom(d, n, c.heads*c.hd, f32s(dout)), tensorFrom(d, n, w, randSlice(r, n*w, 1))
		d.AttentionGrad(a)
		checkGrad(t, name, r, qkv, d.Data(a.DQKV), dout, f)
	}
}

// CacheAttention over a cache filled by a prompt and then token by token
// gives what Attention gives over the whole sequences.
func TestCacheAttentionMatchesAttention(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(8, 8))
	const seqs, seq, heads, kvHeads, hd, maxLen = 3, 11, 4, 2, 16, 16
	w := (heads + 2*kvHeads) * hd
	scale := float32(1 / math.Sqrt(hd))
	qkv := randSlice(r, seqs*seq*w, 1.5)
	full := AttentionArgs{QKV: tensorFrom(d, seqs*seq, w, qkv), Out: d.Alloc(seqs*seq, heads*hd), LSE: d.Alloc(seqs*seq, heads),
		Batch: seqs, Seq: seq, Heads: heads, KVHeads: kvHeads, HeadDim: hd, Scale: scale}
	d.Attention(full)
	kc, vc := d.Alloc(4*kvHeads*hd, maxLen), d.Alloc(4*maxLen, kvHeads*hd)
	slots := []int32{2, 0, 3} // sequence s lives in slot slots[s]
	got := make([]float32, seqs*seq*heads*hd)
	// A prompt of 6 tokens per sequence in one call, then one token each.
	step := func(from, to int) {
		var rows []float32
		var slot, pos []int32
		for s := 0; s < seqs; s++ {
			for i := from; i < to; i++ {
				rows = append(rows, qkv[(s*seq+i)*w:(s*seq+i+1)*w]...)
				slot, pos = append(slot, slots[s]), append(pos, int32(i))
			}
		}
		out := d.Alloc(len(pos), heads*hd)
		d.CacheAttention(CacheArgs{QKV: tensorFrom(d, len(pos), w, rows), Out: out, KCache: kc, VCache: vc, Slot: slot, Pos: pos,
			MaxLen: maxLen, Heads: heads, KVHeads: kvHeads, HeadDim: hd, Scale: scale})
		k := 0
		for s := 0; s < seqs; s++ {
			for i := from; i < to; i++ {
				copy(got[(s*seq+i)*heads*hd:], d.Data(out)[k*heads*hd:(k+1)*heads*hd])
				k++
			}
		}
	}
	step(0, 6)
	for i := 6; i < seq; i++ {
		step(i, i+1)
	}
	closeTo(t, "cache vs full attention", got, f64s(d.Data(full.Out)), 1e-5)
}

func TestLogProbsAndGrad(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(9, 9))
	for _, s := range []struct {
		m, v int
		temp float64
	}{{4, 10, 1}, {6, 300, 0.7}, {40, 1000, 1.3}} {
		z := randF64(r, s.m*s.v, 5)
		tg := make([]int32, s.m)
		for i := range tg {
			tg[i] = int32(r.IntN(s.v))
		}
		a := LogProbArgs{Logits: tensorFrom(d, s.m, s.v, f32s(z)), Targets: tg, LogP: d.Alloc(s.m, 1), Entropy: d.Alloc(s.m, 1), InvTemp: float32(1 / s.temp)}
		d.LogProbs(a)
		lp, ent := refLogProbs(z, s.v, tg, 1/s.temp)
		closeTo(t, "logp", d.Data(a.LogP), lp, 1e-6)
		closeTo(t, "entropy", d.Data(a.Entropy), ent, 1e-6)
		dl, de := randF64(r, s.m, 1), randF64(r, s.m, 1)
		a.DLogP, a.DEntropy = tensorFrom(d, s.m, 1, f32s(dl)), tensorFrom(d, s.m, 1, f32s(de))
		d.LogProbsGrad(a)
		checkGrad(t, fmt.Sprintf("log-probs %+v", s), r, z, d.Data(a.Logits), append(dl, de...), func(z []float64) []float64 {
			lp, ent := refLogProbs(z, s.v, tg, 1/s.temp)
			return append(lp, ent...)
		})
	}
}

// TestMaxScaled: the largest x·scale, by the SIMD kernel in whole eights
// and Go for the rest, against a plain loop, with the largest element in
// every place (the kernel's four running maxima, the tail) and infinities.
func TestMaxScaled(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 40, 64, 71, 257} {
		for at := 0; at < n; at += max(1, n/9) {
			x := randSlice(r, n, 100)
			for i := range x {
				x[i] -= 200 // all negative: a kernel that started from 0 would be wrong
			}
			x[at] = -1
			if n > 2 {
				x[(at+1)%n] = float32(math.Inf(-1))
			}
			for _, scale := range []float32{1, 0.125, 0.7} {
				want := float32(math.Inf(-1))
				for _, v := range x {
					want = max(want, v*scale)
				}
				if got := maxScaled(x, scale); got != want {
					t.Fatalf("n %d, largest at %d, scale %v: %v, want %v", n, at, scale, got, want)
				}
			}
		}
	}
	if got := maxScaled([]float32{1, 2, 3, 4, 5, 6, float32(math.Inf(1)), 8, 9}, 0.5); !math.IsInf(float64(got), 1) {
		t.Errorf("with +Inf among them: %v", got)
	}
}

// exp32 and the SIMD kernel behind ExpSum are within a few float32 ulps
// of e^x from −87 to 88, 0 below and +Inf above.
func TestExp32AndExpSum(t *testing.T) {
	var xs []float32
	for x := -87.0; x < 88; x += 0.000731 {
		xs = append(xs, float32(x))
	}
	xs = append(xs, -90, -87.5, 88.5, 1000, float32(math.Inf(-1)), 0)
	simd := make([]float32, len(xs))
	sum := ExpSum(simd, xs, 1, 0)
	var worst float64
	for i, x := range xs {
		w := math.Exp(float64(x))
		if x < -87 || x > 88 {
			if w = 0; x > 88 {
				w = math.Inf(1)
			}
			if float64(exp32(x)) != w || float64(simd[i]) != w {
				t.Fatalf("e^%v: exp32 %v, ExpSum %v, want %v", x, exp32(x), simd[i], w)
			}
			continue
		}
		for _, got := range []float32{exp32(x), simd[i]} {
			worst = math.Max(worst, math.Abs(float64(got)-w)/w)
		}
	}
	if worst > 4e-7 {
		t.Errorf("largest relative error %.3g", worst)
	}
	if !math.IsInf(float64(sum), 1) {
		t.Errorf("sum %v with an infinite term", sum)
	}
	sum = ExpSum(simd[:len(xs)-6], xs[:len(xs)-6], 0.5, 3)
	var w float64
	for _, x := range xs[:len(xs)-6] {
		w += math.Exp(float64(x)*0.5 - 3)
	}
	if math.Abs(float64(sum)-w)/w > 1e-5 {
		t.Errorf("ExpSum's sum %v, want %v", sum, w)
	}
}
