package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agenttrainer/agenttrainer/internal/numtest"
)

func randSlice(r *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32((r.Float64()*2 - 1) * scale)
	}
	return s
}

// operandShapes are the stored shapes of A and B for C (m×n) = op(A)·op(B)
// with inner dimension k.
func operandShapes(m, n, k int, transA, transB bool) (ar, ac, br, bc int) {
	ar, ac, br, bc = m, k, k, n
	if transA {
		ar, ac = k, m
	}
	if transB {
		br, bc = n, k
	}
	return ar, ac, br, bc
}

func tensorFrom(d *CPU, rows, cols int, v []float32) Tensor {
	t := d.Alloc(rows, cols)
	d.Upload(t, v)
	return t
}

func TestMatMulMatchesReference(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(1, 2))
	shapes := []struct{ m, n, k int }{
		{1, 1, 1}, {3, 5, 7}, {4, 64, 4}, {128, 64, 64}, {129, 2, 64}, {67, 65, 63}, {512, 64, 4}, {5, 256, 256},
		// Several k panels and row groups, with remainders; the last is
		// large enough to be split across cores.
		{130, 48, 300}, {71, 17, 2*gemmKC + 1}, {260, 64, 300}, {9, 144, 130},
		// Wider than a block of gemmNC columns: two blocks, the last widened.
		{70, gemmNC + gemmNC/2 + 40, 300}, {13, 2*gemmNC + 8, 40},
		// Tall, so that each core takes several blocks of rows through both
		// blocks of columns.
		{300, gemmNC + 48, 2*gemmKC + 3},
	}
	for _, s := range shapes {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, beta := range []float32{0, 1, 0.5} {
					av := randSlice(r, s.m*s.k, 1)
					bv := randSlice(r, s.k*s.n, 1)
					cv := randSlice(r, s.m*s.n, 1)
					ar, ac, br, bc := operandShapes(s.m, s.n, s.k, ta, tb)
					a, b, c := tensorFrom(d, ar, ac, av), tensorFrom(d, br, bc, bv), tensorFrom(d, s.m, s.n, cv)
					d.MatMul(c, a, ta, b, tb, beta)
					got := d.Data(c)
					for i := 0; i < s.m; i++ {
						for j := 0; j < s.n; j++ {
							want := float64(beta) * float64(cv[i*s.n+j])
							for p := 0; p < s.k; p++ {
								x := av[i*s.k+p]
								if ta {
									x = av[p*s.m+i]
								}
								y := bv[p*s.n+j]
								if tb {
									y = bv[j*s.k+p]
								}
								want += float64(x) * float64(y)
							}
							if diff := math.Abs(float64(got[i*s.n+j]) - want); diff > 1e-4*(1+math.Abs(want)) {
								t.Fatalf("%dx%dx%d ta=%v tb=%v beta=%v: C[%d,%d] = %v, want %v", s.m, s.n, s.k, ta, tb, beta, i, j, got[i*s.n+j], want)
							}
						}
					}
				}
			}
		}
	}
}

func TestBiasActAndGrad(t *testing.T) {
	d := NewCPU(1)
	tests := []struct {
		act  Activation
		f    func(float64) float64
		grad func(y float64) float64
	}{
		{Tanh, math.Tanh, func(y float64) float64 { return 1 - y*y }},
		{ReLU, func(x float64) float64 { return math.Max(x, 0) }, func(y float64) float64 {
			if y > 0 {
				return 1
			}
			return 0
		}},
		{Identity, func(x float64) float64 { return x }, func(float64) float64 { return 1 }},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range tests {
		for _, cols := range []int{5, 8, 67} { // scalar tail only, SIMD only, both
			rows := 6
			xv, bv, gv := randSlice(r, rows*cols, 10), randSlice(r, cols, 1), randSlice(r, rows*cols, 1)
			x, b, g := tensorFrom(d, rows, cols, xv), tensorFrom(d, 1, cols, bv), tensorFrom(d, rows, cols, gv)
			d.BiasAct(x, b, tc.act)
			d.ActGrad(g, x, tc.act)
			for i := range xv {
				y := tc.f(float64(xv[i]) + float64(bv[i%cols]))
				if math.Abs(float64(d.Data(x)[i])-y) > 2e-6 {
					t.Fatalf("act %d: y[%d] = %v, want %v", tc.act, i, d.Data(x)[i], y)
				}
				if want := float64(gv[i]) * tc.grad(y); math.Abs(float64(d.Data(g)[i])-want) > 1e-5 {
					t.Fatalf("act %d: grad[%d] = %v, want %v", tc.act, i, d.Data(g)[i], want)
				}
			}
		}
	}
}

// refCategorical is an independent float64 statement of CleanRL's discrete
// loss: mean clipped surrogate − entCoef·mean entropy.
func refCategorical(logits []float64, acts []int, old, adv []float64, A int, clip, ent float64, norm bool) float64 {
	B := len(acts)
	advN := append([]float64(nil), adv...)
	if norm {
		var m float64
		for _, a := range adv {
			m += a
		}
		m /= float64(B)
		var ss float64
		for _, a := range adv {
			ss += (a - m) * (a - m)
		}
		std := math.Sqrt(ss / float64(B-1))
		for i := range advN {
			advN[i] = (adv[i] - m) / (std + 1e-8)
		}
	}
	var loss float64
	for i := 0; i < B; i++ {
		row := logits[i*A : (i+1)*A]
		var z float64
		for _, v := range row {
			z += math.Exp(v)
		}
		var h float64
		for _, v := range row {
			p := math.Exp(v) / z
			h -= p * math.Log(p)
		}
		ratio := math.Exp(row[acts[i]] - math.Log(z) - old[i])
		l := math.Max(-advN[i]*ratio, -advN[i]*math.Min(math.Max(ratio, 1-clip), 1+clip))
		loss += (l - ent*h) / float64(B)
	}
	return loss
}

func TestCategoricalPPOGradient(t *testing.T) {
	d := NewCPU(1)
	r := rand.New(rand.NewPCG(5, 6))
	const B, A = 16, 3
	for _, norm := range []bool{false, true} {
		logits := randSlice(r, B*A, 1)
		acts := make([]float32, B)
		iacts := make([]int, B)
		old, adv := make([]float32, B), randSlice(r, B, 2)
		for i := range acts {
			iacts[i] = r.IntN(A)
			acts[i] = float32(iacts[i])
			old[i] = float32(math.Log(1.0/A) + (r.Float64()-0.5)*0.6) // ratios both inside and outside the clip range
		}
		args := PPOPolicyArgs{
			Out: tensorFrom(d, B, A, logits), Actions: tensorFrom(d, B, 1, acts),
			OldLogp: tensorFrom(d, B, 1, old), Adv: tensorFrom(d, B, 1, adv),
			DOut: d.Alloc(B, A), ClipCoef: 0.2, EntCoef: 0.01, NormAdv: norm, Stats: d.Alloc(1, NumStats),
		}
		d.CategoricalPPO(args)
		f := func(l []float64) float64 {
			return refCategorical(l, iacts, f64(old), f64(adv), A, 0.2, 0.01, norm)
		}
		checkGradient(t, "categorical logits", f, f64(logits), d.Data(args.DOut))
		stats := d.Data(args.Stats)
		if got, want := float64(stats[StatPolicyLoss]-0.01*stats[StatEntropy]), f(f64(logits)); math.Abs(got-want) > 1e-5 {
			t.Errorf("loss stats give %v, reference %v", got, want)
		}
	}
}

func f64(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

// checkGradient compares an analytic gradient with central differences of f.
func checkGradient(t *testing.T, what string, f func([]float64) float64, x []float64, grad []float32) {
	t.Helper()
	numtest.Gradient(func() float64 { return f(x) }, x, grad, 1e-5, 1e-4, 1e-3, func(i int, analytic float32, numeric float64) {
		t.Errorf("%s: d/dx[%d] analytic %v, numeric %v", what, i, analytic, numeric)
	})
}

func TestGaussianPPOGradient(t *testing.T) {
	d := NewCPU(1)
	r := rand.New(rand.NewPCG(7, 8))
	const B, A = 12, 2
	mu, logStd := randSlice(r, B*A, 1), randSlice(r, A, 0.5)
	acts, old, adv := randSlice(r, B*A, 1.5), make([]float32, B), randSlice(r, B, 2)
	for i := range old {
		old[i] = float32(-2 + (r.Float64()-0.5)*0.6)
	}
	args := PPOPolicyArgs{
		Out: tensorFrom(d, B, A, mu), LogStd: tensorFrom(d, 1, A, logStd), Actions: tensorFrom(d, B, A, acts),
		OldLogp: tensorFrom(d, B, 1, old), Adv: tensorFrom(d, B, 1, adv),
		DOut: d.Alloc(B, A), DLogStd: d.Alloc(1, A), ClipCoef: 0.2, EntCoef: 0.05, NormAdv: true, Stats: d.Alloc(1, NumStats),
	}
	d.GaussianPPO(args)
	loss := func(m, ls []float64) float64 {
		mean, inv := normalizedAdv(adv, true)
		var total float64
		var h float64
		for _, s := range ls {
			h += 0.5 + 0.5*math.Log(2*math.Pi) + s
		}
		for i := 0; i < B; i++ {
			var lp float64
			for j := 0; j < A; j++ {
				sd := math.Exp(ls[j])
				lp += -(float64(acts[i*A+j])-m[i*A+j])*(float64(acts[i*A+j])-m[i*A+j])/(2*sd*sd) - ls[j] - 0.5*math.Log(2*math.Pi)
			}
			ratio := math.Exp(lp - float64(old[i]))
			a := (float64(adv[i]) - mean) * inv
			total += math.Max(-a*ratio, -a*math.Min(math.Max(ratio, 0.8), 1.2)) / B
		}
		return total - 0.05*h
	}
	ls := f64(logStd)
	checkGradient(t, "gaussian mean", func(m []float64) float64 { return loss(m, ls) }, f64(mu), d.Data(args.DOut))
	mv := f64(mu)
	checkGradient(t, "gaussian log-std", func(l []float64) float64 { return loss(mv, l) }, ls, d.Data(args.DLogStd))
}

func TestValueLossGradient(t *testing.T) {
	d := NewCPU(1)
	r := rand.New(rand.NewPCG(9, 10))
	const B = 20
	for _, clip := range []bool{false, true} {
		v, old, ret := randSlice(r, B, 1), randSlice(r, B, 1), randSlice(r, B, 2)
		args := ValueArgs{Value: tensorFrom(d, B, 1, v), OldValue: tensorFrom(d, B, 1, old), Returns: tensorFrom(d, B, 1, ret),
			DValue: d.Alloc(B, 1), ClipCoef: 0.2, Clip: clip, VFCoef: 0.5, Stats: d.Alloc(1, NumStats)}
		d.ValueLoss(args)
		f := func(x []float64) float64 {
			var s float64
			for i := range x {
				l := (x[i] - float64(ret[i])) * (x[i] - float64(ret[i]))
				if clip {
					vc := float64(old[i]) + math.Min(math.Max(x[i]-float64(old[i]), -0.2), 0.2)
					l = math.Max(l, (vc-float64(ret[i]))*(vc-float64(ret[i])))
				}
				s += l
			}
			return 0.5 * 0.5 * s / B
		}
		checkGradient(t, "value", f, f64(v), d.Data(args.DValue))
		if got, want := 0.5*float64(d.Data(args.Stats)[StatValueLoss]), f(f64(v)); math.Abs(got-want) > 1e-5 {
			t.Errorf("clip=%v: value loss stat %v, want %v", clip, got, want)
		}
	}
}

func TestClipGradNormAndAdam(t *testing.T) {
	d := NewCPU(1)
	g := tensorFrom(d, 1, 2, []float32{3, 4})
	stats := d.Alloc(1, NumStats)
	d.ClipGradNorm(g, 0.5, stats)
	if got := d.Data(g); math.Abs(float64(got[0])-0.3) > 1e-6 || math.Abs(float64(got[1])-0.4) > 1e-6 {
		t.Fatalf("clipped grads %v, want [0.3 0.4]", got)
	}
	if n := d.Data(stats)[StatGradNorm]; n != 5 {
		t.Fatalf("grad norm stat %v, want 5", n)
	}
	// Two Adam steps against PyTorch's formulas written out by hand.
	p, m, v := tensorFrom(d, 1, 1, []float32{1}), d.Alloc(1, 1), d.Alloc(1, 1)
	gr := tensorFrom(d, 1, 1, []float32{0.5})
	want, mm, vv := 1.0, 0.0, 0.0
	for step := 1; step <= 2; step++ {
		d.Adam(p, gr, m, v, AdamArgs{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-5, Step: step})
		mm = 0.9*mm + 0.1*0.5
		vv = 0.999*vv + 0.001*0.25
		bc1, bc2 := 1-math.Pow(0.9, float64(step)), 1-math.Pow(0.999, float64(step))
		want -= 0.1 / bc1 * mm / (math.Sqrt(vv)/math.Sqrt(bc2) + 1e-5)
	}
	if got := float64(d.Data(p)[0]); math.Abs(got-want) > 1e-6 {
		t.Fatalf("adam: p = %v, want %v", got, want)
	}
}

func TestColSumAndGather(t *testing.T) {
	d := NewCPU(1)
	x := tensorFrom(d, 3, 2, []float32{1, 2, 3, 4, 5, 6})
	out := tensorFrom(d, 1, 2, []float32{10, 10})
	d.ColSum(out, x, 0.5)
	if got := d.Data(out); got[0] != 14 || got[1] != 17 {
		t.Fatalf("colsum = %v, want [14 17]", got)
	}
	dst := d.Alloc(2, 2)
	d.GatherRows(dst, x, []int32{2, 0})
	if got := d.Data(dst); got[0] != 5 || got[1] != 6 || got[2] != 1 || got[3] != 2 {
		t.Fatalf("gather = %v", got)
	}

	// Enough values to be split across two cores.
	d2 := NewCPU(2)
	defer d2.Close()
	const rows, cols, picks = 300, 400, 250
	r := rand.New(rand.NewPCG(15, 16))
	sv := randSlice(r, rows*cols, 1)
	idx := make([]int32, picks)
	for i := range idx {
		idx[i] = int32(r.IntN(rows))
	}
	big := d2.Alloc(picks, cols)
	if big.Len() < minParallelGather {
		t.Fatal("the gather is too small to be split")
	}
	d2.GatherRows(big, tensorFrom(d2, rows, cols, sv), idx)
	for i, row := range idx {
		if got, want := d2.Data(big)[i*cols:(i+1)*cols], sv[int(row)*cols:(int(row)+1)*cols]; !slices.Equal(got, want) {
			t.Fatalf("split gather: row %d is not source row %d", i, row)
		}
	}
}

func TestTanh32Accuracy(t *testing.T) {
	worst := 0.0
	for x := -10.0; x <= 10; x += 1e-4 {
		want := math.Tanh(float64(float32(x)))
		ulp := float64(math.Nextafter32(float32(math.Abs(want)), 2) - float32(math.Abs(want)))
		ulps := math.Abs(float64(tanh32(float32(x)))-want) / ulp
		if ulps > 8 {
			t.Fatalf("tanh32(%v) = %v, want %v (%.1f ulp)", x, tanh32(float32(x)), want, ulps)
		}
		worst = math.Max(worst, ulps)
	}
	t.Logf("largest error %.1f float32 ulp", worst)
}

// TestSIMDPathsMatchReference covers the sizes that take the assembly
// kernels and their scalar tails: column sums of ≥16 columns and Adam over
// more than 8 elements.
func TestSIMDPathsMatchReference(t *testing.T) {
	d := NewCPU(2)
	defer d.Close()
	r := rand.New(rand.NewPCG(11, 12))
	for _, s := range []struct{ rows, cols int }{{1, 16}, {130, 37}, {128, 64}} {
		xv, ov := randSlice(r, s.rows*s.cols, 1), randSlice(r, s.cols, 1)
		out := tensorFrom(d, 1, s.cols, ov)
		d.ColSum(out, tensorFrom(d, s.rows, s.cols, xv), 0.5)
		for j := 0; j < s.cols; j++ {
			want := 0.5 * float64(ov[j])
			for i := 0; i < s.rows; i++ {
				want += float64(xv[i*s.cols+j])
			}
			if got := float64(d.Data(out)[j]); math.Abs(got-want) > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("%d×%d colsum[%d] = %v, want %v", s.rows, s.cols, j, got, want)
			}
		}
	}
	const n = 19 // two SIMD blocks and a tail of three
	pv, gv := randSlice(r, n, 1), randSlice(r, n, 1)
	mv, vv := randSlice(r, n, 0.1), make([]float32, n)
	for i := range vv {
		vv[i] = float32(r.Float64() * 0.01)
	}
	p, g, m, v := tensorFrom(d, 1, n, pv), tensorFrom(d, 1, n, gv), tensorFrom(d, 1, n, mv), tensorFrom(d, 1, n, vv)
	args := AdamArgs{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-5, Step: 7}
	d.Adam(p, g, m, v, args)
	bc1, bc2 := 1-math.Pow(0.9, 7), 1-math.Pow(0.999, 7)
	for i := 0; i < n; i++ {
		mi := 0.9*float64(mv[i]) + 0.1*float64(gv[i])
		vi := 0.999*float64(vv[i]) + 0.001*float64(gv[i])*float64(gv[i])
		want := float64(pv[i]) - 1e-3/bc1*mi/(math.Sqrt(vi)/math.Sqrt(bc2)+1e-5)
		if got := float64(d.Data(p)[i]); math.Abs(got-want) > 1e-6 {
			t.Fatalf("adam element %d: %v, want %v", i, got, want)
		}
		if got := float64(d.Data(m)[i]); math.Abs(got-mi) > 1e-6 {
			t.Fatalf("adam first moment %d: %v, want %v", i, got, mi)
		}
	}
}

// TestPanelsGiveTheSameBits: a product long enough to be computed in k
// panels (and row groups) must equal, bit for bit, one pass of the kernel
// over the whole depth, since the kernels continue from C.
func TestPanelsGiveTheSameBits(t *testing.T) {
	if !hasFMA {
		t.Skip("no SIMD kernels here")
	}
	r := rand.New(rand.NewPCG(5, 6))
	const m, n, k = 4 * (gemmMC/4 + 3), 32, 3*gemmKC + 5
	for _, transA := range []bool{false, true} {
		d := NewCPU(1)
		av, bv := randSlice(r, m*k, 1), randSlice(r, k*n, 1)
		ar, ac, lda := m, k, k
		if transA {
			ar, ac, lda = k, m, m
		}
		c := d.Alloc(m, n)
		d.MatMul(c, tensorFrom(d, ar, ac, av), transA, tensorFrom(d, k, n, bv), false, 0)
		want := make([]float32, m*n)
		for i := 0; i < m; i += 4 {
			for j := 0; j < n; j += 16 {
				if transA {
					gemmT4x16(&want[i*n+j], n, &av[i], lda, &bv[j], n, k, true)
				} else {
					gemm4x16(&want[i*n+j], n, &av[i*k], lda, &bv[j], n, k, true)
				}
			}
		}
		for i, v := range d.Data(c) {
			if v != want[i] {
				t.Fatalf("transA=%v: C[%d] = %v in panels, %v in one pass", transA, i, v, want[i])
			}
		}
	}
}

// TestAdamSplitSameBits: an Adam step large enough to be split across two
// cores gives exactly the bits of one pass (odd length: a scalar tail too).
func TestAdamSplitSameBits(t *testing.T) {
	const n = 3*minParallelAdam + 5
	r := rand.New(rand.NewPCG(7, 8))
	p0, g0, m0, v0 := randSlice(r, n, 1), randSlice(r, n, 1), randSlice(r, n, 0.1), randSlice(r, n, 0.1)
	for i := range v0 {
		v0[i] *= v0[i] // second moments are not negative
	}
	var got [2][]float32
	for i, threads := range []int{1, 2} {
		d := NewCPU(threads)
		p, g, m, v := tensorFrom(d, 1, n, p0), tensorFrom(d, 1, n, g0), tensorFrom(d, 1, n, m0), tensorFrom(d, 1, n, v0)
		for step := 1; step <= 3; step++ {
			d.Adam(p, g, m, v, AdamArgs{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-5, Step: step})
		}
		got[i] = slices.Concat(d.Data(p), d.Data(m), d.Data(v))
		d.Close()
	}
	if !slices.Equal(got[0], got[1]) {
		t.Fatal("Adam on two cores differs from one pass")
	}
}

// TestReLUSpecialValues: the SIMD ReLU and its gradient treat NaN, signed
// zeros, infinities and subnormals bit for bit as the scalar loops do
// (max(x+b, 0) keeps NaN and −0; the gradient is cut where y ≤ 0 and kept
// where y is NaN).
func TestReLUSpecialValues(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	special := []float32{nan, float32(math.Copysign(0, -1)), 0, -1, 1, -inf, inf, 1e-40, -1e-40, 3.5, -2.25, nan, 0.5, -0.5, 7, -7}
	d := NewCPU(1)
	for _, n := range []int{8, 16} { // SIMD only
		x := tensorFrom(d, 1, n, special[:n])
		d.BiasAct(x, d.Alloc(1, n), ReLU) // a zero bias
		g := tensorFrom(d, 1, n, slices.Repeat([]float32{1.5}, n))
		d.ActGrad(g, x, ReLU)
		for i, v := range special[:n] {
			want := v + 0
			if want < 0 {
				want = 0
			}
			if got := d.Data(x)[i]; math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("ReLU(%v) = %v (bits %#x), want %v (bits %#x)", v, got, math.Float32bits(got), want, math.Float32bits(want))
			}
			wantG := float32(1.5)
			if want <= 0 {
				wantG = 0
			}
			if got := d.Data(g)[i]; math.Float32bits(got) != math.Float32bits(wantG) {
				t.Errorf("ReLU gradient at y = %v: %v, want %v", want, got, wantG)
			}
		}
	}
}

// TestNarrowSplitGivesTheSameBits: a product narrower than 16 columns (a
// head's), split by rows across two cores, gives the bits of one core, with
// B as stored and transposed, fresh and accumulated C, rows that do not
// split evenly.
func TestNarrowSplitGivesTheSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, s := range []struct{ m, n, k int }{{1024, 3, 128}, {1001, 1, 131}, {4099, 7, 33}} {
		if s.m*s.n*s.k < minParallelNarrow {
			t.Fatalf("%v is too small to be split", s)
		}
		av, bv, cv := randSlice(r, s.m*s.k, 1), randSlice(r, s.n*s.k, 1), randSlice(r, s.m*s.n, 1)
		for _, transB := range []bool{false, true} {
			for _, beta := range []float32{0, 1} {
				one, two := productOnCores(1, s.m, s.n, s.k, av, bv, cv, transB, beta), productOnCores(2, s.m, s.n, s.k, av, bv, cv, transB, beta)
				sameBits(t, fmt.Sprintf("%v transB %v beta %v: split", s, transB, beta), two, one)
			}
		}
	}
}

// productOnCores returns C = A·op(B) + beta·C on a device of threads cores,
// A m×k, B k×n (n×k when transB) and C m×n as given by av, bv and cv.
func productOnCores(threads, m, n, k int, av, bv, cv []float32, transB bool, beta float32) []float32 {
	d := NewCPU(threads)
	defer d.Close()
	c, b := tensorFrom(d, m, n, cv), tensorFrom(d, k, n, bv)
	if transB {
		b = tensorFrom(d, n, k, bv)
	}
	d.MatMul(c, tensorFrom(d, m, k, av), false, b, transB, beta)
	return d.Data(c)
}

// TestTransBSplitGivesTheSameBits: a product with a transposed B large
// enough to be split by blocks of columns across two cores (each part
// transposing its own block) gives the bits of one pass on one core, for
// fresh and accumulated C, blocks that do and do not end on the widest
// tile, rows left over by the tiles, and a shallow product split for the
// size of C (a policy head's input gradient).
func TestTransBSplitGivesTheSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, s := range []struct{ m, n, k int }{{102, 224, 200}, {1024, 1024, 128}, {66, 512, 130}, {1024, 128, 3}} {
		if s.m*s.n*s.k < minParallelWork && s.m*s.n < minParallelOutput {
			t.Fatalf("%v is too small to be split", s)
		}
		av, bv, cv := randSlice(r, s.m*s.k, 1), randSlice(r, s.n*s.k, 1), randSlice(r, s.m*s.n, 1)
		for _, beta := range []float32{0, 1} {
			got := [2][]float32{productOnCores(1, s.m, s.n, s.k, av, bv, cv, true, beta), productOnCores(2, s.m, s.n, s.k, av, bv, cv, true, beta)}
			for i := range got[0] {
				if math.Float32bits(got[0][i]) != math.Float32bits(got[1][i]) {
					t.Fatalf("%d×%d·(%d×%d)ᵀ, beta %v: C[%d] = %v on one core, %v split", s.m, s.k, s.n, s.k, beta, i, got[0][i], got[1][i])
				}
			}
		}
	}
}

// TestActGradSplitGivesTheSameBits: an activation gradient large enough to
// be split across two cores gives the bits of one pass (odd length: a
// scalar tail too).
func TestActGradSplitGivesTheSameBits(t *testing.T) {
	const n = minParallelActGrad + 5
	r := rand.New(rand.NewPCG(17, 18))
	yv, gv := randSlice(r, n, 1), randSlice(r, n, 1)
	for _, act := range []Activation{Tanh, ReLU} {
		var got [2][]float32
		for i, threads := range []int{1, 2} {
			d := NewCPU(threads)
			g := tensorFrom(d, 1, n, gv)
			d.ActGrad(g, tensorFrom(d, 1, n, yv), act)
			got[i] = d.Data(g)
			d.Close()
		}
		if !slices.Equal(got[0], got[1]) {
			t.Fatalf("activation %d: the gradient split across two cores differs from one pass", act)
		}
	}
}

// TestMatMulActGradGivesTheSameBits: the fused input gradient equals
// MatMul then ActGrad, bit for bit, whether it is split across cores or
// not (too small, or columns not in sixteens).
func TestMatMulActGradGivesTheSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, s := range []struct{ m, n, k int }{{1024, 1024, 128}, {130, 256, 150}, {40, 48, 20}, {70, 100, 90}} {
		av, bv, yv := randSlice(r, s.m*s.k, 1), randSlice(r, s.n*s.k, 1), randSlice(r, s.m*s.n, 1)
		for _, act := range []Activation{ReLU, Tanh} {
			for _, threads := range []int{1, 2} {
				d := NewCPU(threads)
				a, b, y := tensorFrom(d, s.m, s.k, av), tensorFrom(d, s.n, s.k, bv), tensorFrom(d, s.m, s.n, yv)
				want, got := d.Alloc(s.m, s.n), d.Alloc(s.m, s.n)
				d.MatMul(want, a, false, b, true, 0)
				d.ActGrad(want, y, act)
				d.Fill(got, float32(math.NaN())) // garbage to overwrite
				d.MatMulActGrad(got, a, b, y, act)
				for i, w := range d.Data(want) {
					if g := d.Data(got)[i]; math.Float32bits(g) != math.Float32bits(w) {
						t.Fatalf("%v, activation %d, %d threads: element %d = %v fused, %v in two steps", s, act, threads, i, g, w)
					}
				}
				d.Close()
			}
		}
	}
}

// TestCategoricalPPOSplitGivesTheSameBits: a minibatch of several chunks
// (policyChunk rows) gives the same gradients and statistics on one core
// and on two, and its statistics are the sum of the whole minibatch's.
func TestCategoricalPPOSplitGivesTheSameBits(t *testing.T) {
	const B, A = 3*policyChunk + 40, 4
	r := rand.New(rand.NewPCG(23, 24))
	logits, adv := randSlice(r, B*A, 1), randSlice(r, B, 2)
	acts, old := make([]float32, B), make([]float32, B)
	for i := range acts {
		acts[i] = float32(r.IntN(A))
		old[i] = float32(math.Log(1.0/A) + (r.Float64()-0.5)*0.6)
	}
	var grads, stats [2][]float32
	for i, threads := range []int{1, 2} {
		d := NewCPU(threads)
		args := PPOPolicyArgs{
			Out: tensorFrom(d, B, A, logits), Actions: tensorFrom(d, B, 1, acts),
			OldLogp: tensorFrom(d, B, 1, old), Adv: tensorFrom(d, B, 1, adv),
			DOut: d.Alloc(B, A), ClipCoef: 0.2, EntCoef: 0.01, NormAdv: true, Stats: d.Alloc(1, NumStats),
		}
		d.CategoricalPPO(args)
		grads[i], stats[i] = d.Data(args.DOut), d.Data(args.Stats)
		d.Close()
	}
	if !slices.Equal(grads[0], grads[1]) || !slices.Equal(stats[0], stats[1]) {
		t.Fatal("the loss split across two cores differs from one core")
	}
	iacts := make([]int, B)
	for i, a := range acts {
		iacts[i] = int(a)
	}
	want := refCategorical(f64(logits), iacts, f64(old), f64(adv), A, 0.2, 0.01, true)
	if got := float64(stats[0][StatPolicyLoss] - 0.01*stats[0][StatEntropy]); math.Abs(got-want) > 1e-5 {
		t.Errorf("loss stats give %v, reference %v", got, want)
	}
}

// TestTranspose: the blocked transpose (whole 8×8 blocks by the SIMD
// kernel where there is one, edges in Go) against the definition, with
// padded destination rows and sizes that do and do not fill the blocks.
func TestTranspose(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, s := range []struct{ rows, cols, ldd int }{{8, 8, 8}, {1024, 128, 1040}, {13, 21, 16}, {64, 3, 64}, {3, 64, 5}, {100, 100, 101}} {
		src := randSlice(r, s.rows*s.cols, 1)
		dst := make([]float32, s.cols*s.ldd)
		transpose(dst, s.ldd, src, s.rows, s.cols)
		for i := 0; i < s.rows; i++ {
			for j := 0; j < s.cols; j++ {
				if dst[j*s.ldd+i] != src[i*s.cols+j] {
					t.Fatalf("%v: element (%d, %d) is %v, want %v", s, j, i, dst[j*s.ldd+i], src[i*s.cols+j])
				}
			}
		}
		// The same block read out of rows 3 longer (a head's columns of
		// fused q/k/v rows).
		lds := s.cols + 3
		wide := randSlice(r, s.rows*lds, 1)
		transposeRows(dst, s.ldd, wide, lds, s.rows, s.cols)
		for i := 0; i < s.rows; i++ {
			for j := 0; j < s.cols; j++ {
				if dst[j*s.ldd+i] != wide[i*lds+j] {
					t.Fatalf("%v, source rows %d apart: element (%d, %d) is %v, want %v", s, lds, j, i, dst[j*s.ldd+i], wide[i*lds+j])
				}
			}
		}
	}
}
