//go:build cuda

package gpu

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agenttrainer/agenttrainer/internal/numtest"

	"gorgonia.org/cu/nvrtc"
)

// Parity tests: every op of the CUDA device against the CPU device on
// random inputs, awkward shapes and views at odd offsets. Relative error is
// measured per tensor: max|gpu−cpu| / max|cpu|, and must stay under 1e-4.
// Without a usable GPU every test skips (saying why).

const parityTol = 1e-4

var testGPU struct {
	once sync.Once
	d    *CUDA
	err  error
}

func gpuForTest(t testing.TB) *CUDA {
	t.Helper()
	testGPU.once.Do(func() { testGPU.d, testGPU.err = OpenCUDA(0) })
	if testGPU.err != nil {
		t.Skipf("no usable GPU: %v", testGPU.err)
	}
	return testGPU.d
}

// both holds the same tensor on the CPU and on the GPU.
type both struct{ c, g Tensor }

type parity struct {
	t      *testing.T
	cpu    *CPU
	gpu    *CUDA
	r      *rand.Rand
	maxErr map[string]float64 // the largest relative error of each op
}

func newParity(t *testing.T, seed uint64) *parity {
	g := gpuForTest(t)
	c := NewCPU(2)
	t.Cleanup(c.Close)
	p := &parity{t: t, cpu: c, gpu: g, r: rand.New(rand.NewPCG(seed, 99)), maxErr: map[string]float64{}}
	t.Cleanup(func() {
		ops := slices.Sorted(maps.Keys(p.maxErr))
		for _, op := range ops {
			t.Logf("max relative error %-24s %.3g", op, p.maxErr[op])
		}
	})
	return p
}

// record notes the relative error e of one check of what.
func (p *parity) record(what string, e float64) {
	f := strings.Fields(what)
	op, last := f[0], f[len(f)-1]
	switch {
	case strings.Contains(what, "clipped grads"), strings.HasPrefix(op, "n=") && last == "stats":
		op = "clip_grad_norm"
	case strings.Contains(what, " step "):
		op = "adam"
	case op == "value":
		op = "value_loss"
	}
	if last == "stats" || strings.HasPrefix(last, "d") && len(last) > 1 && last[1] >= 'A' && last[1] <= 'Z' {
		op += " " + last
	}
	if old, ok := p.maxErr[op]; !ok || e > old || math.IsNaN(e) {
		p.maxErr[op] = e
	}
}

// from puts v on both devices, as a view at an odd element offset of a
// larger allocation so that every op is checked on views.
func (p *parity) from(rows, cols int, v []float32) both {
	const pad = 3
	n := rows * cols
	c := p.cpu.Alloc(1, n+2*pad).Slice(pad, rows, cols)
	g := p.gpu.Alloc(1, n+2*pad).Slice(pad, rows, cols)
	p.cpu.Upload(c, v)
	p.gpu.Upload(g, v)
	return both{c, g}
}

func (p *parity) rand(rows, cols int, scale float64) both {
	return p.from(rows, cols, randSlice(p.r, rows*cols, scale))
}

func (p *parity) zeros(rows, cols int) both { return p.from(rows, cols, make([]float32, rows*cols)) }

func (p *parity) download(b both) (c, g []float32) {
	c = make([]float32, b.c.Len())
	g = make([]float32, b.g.Len())
	p.cpu.Download(c, b.c)
	p.gpu.Download(g, b.g)
	return c, g
}

func (p *parity) check(what string, b both) {
	p.t.Helper()
	c, g := p.download(b)
	e, i := numtest.RelErr(g, c)
	p.record(what, e)
	if e > parityTol || math.IsNaN(e) {
		p.t.Fatalf("%s: relative error %.3g at element %d (gpu %v, cpu %v)", what, e, i, g[i], c[i])
	}
}

// checkStats compares the statistics element by element.
func (p *parity) checkStats(what string, b both) {
	p.t.Helper()
	c, g := p.download(b)
	for i := range c {
		d := math.Abs(float64(g[i]) - float64(c[i]))
		if c[i] != 0 {
			p.record(what+" stats", d/math.Abs(float64(c[i])))
		}
		if d > parityTol*math.Abs(float64(c[i]))+1e-7 {
			p.t.Fatalf("%s: stats[%d] = %v on the GPU, %v on the CPU", what, i, g[i], c[i])
		}
	}
}

func TestCUDATransfers(t *testing.T) {
	p := newParity(t, 1)
	for _, n := range []int{1, 5, 1000, asyncUploadMax, asyncUploadMax + 1, 300001} {
		x := p.rand(1, n, 10)
		p.check(fmt.Sprintf("upload %d", n), x)
		if n > 4 {
			p.cpu.Fill(x.c.Slice(1, 1, n-3), -2.5)
			p.gpu.Fill(x.g.Slice(1, 1, n-3), -2.5)
			p.check(fmt.Sprintf("fill %d", n), x)
		}
		y := p.zeros(1, n)
		p.cpu.Copy(y.c, x.c)
		p.gpu.Copy(y.g, x.g)
		c, g := p.download(y)
		for i := range c {
			if c[i] != g[i] {
				t.Fatalf("copy %d: element %d is %v on the GPU, %v on the CPU", n, i, g[i], c[i])
			}
		}
	}
	// A fresh tensor is zero.
	z := p.gpu.Alloc(7, 9)
	h := make([]float32, 63)
	for i := range h {
		h[i] = 1
	}
	p.gpu.Download(h, z)
	for i, v := range h {
		if v != 0 {
			t.Fatalf("Alloc: element %d is %v", i, v)
		}
	}
}

func TestCUDAMatMul(t *testing.T) {
	p := newParity(t, 2)
	shapes := []struct{ m, n, k int }{
		{1, 1, 1}, {3, 5, 7}, {4, 64, 4}, {128, 64, 64}, {129, 2, 64}, {67, 65, 63},
		{512, 64, 4}, {5, 256, 256}, {1000, 257, 33}, {4096, 256, 256}, {7, 1, 300},
	}
	for _, s := range shapes {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, beta := range []float32{0, 1, 0.5} {
					ar, ac, br, bc := operandShapes(s.m, s.n, s.k, ta, tb)
					a, b, c := p.rand(ar, ac, 1), p.rand(br, bc, 1), p.rand(s.m, s.n, 1)
					p.cpu.MatMul(c.c, a.c, ta, b.c, tb, beta)
					p.gpu.MatMul(c.g, a.g, ta, b.g, tb, beta)
					p.check(fmt.Sprintf("matmul %dx%dx%d ta=%v tb=%v beta=%v", s.m, s.n, s.k, ta, tb, beta), c)
				}
			}
		}
	}
}

func TestCUDABiasActAndGrad(t *testing.T) {
	p := newParity(t, 3)
	for _, act := range []Activation{Identity, Tanh, ReLU} {
		for _, s := range [][2]int{{1, 1}, {7, 13}, {64, 64}, {1000, 257}, {131072, 4}} {
			x, b, g := p.rand(s[0], s[1], 4), p.rand(1, s[1], 1), p.rand(s[0], s[1], 1)
			p.cpu.BiasAct(x.c, b.c, act)
			p.gpu.BiasAct(x.g, b.g, act)
			p.check(fmt.Sprintf("bias_act %d %dx%d", act, s[0], s[1]), x)
			p.cpu.ActGrad(g.c, x.c, act)
			p.gpu.ActGrad(g.g, x.g, act)
			p.check(fmt.Sprintf("act_grad %d %dx%d", act, s[0], s[1]), g)
		}
	}
	// tanh over its whole range, clamping and the small-x branch included,
	// element by element. (Not bit for bit: the CPU's AVX2 path uses FMA
	// and skips tanh32's small-|x| branch for all but the last n mod 8
	// columns; the two differ by an ulp or so.)
	n := 20001
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(-10 + 20*float64(i)/float64(n-1))
	}
	v[0], v[1], v[2] = 0.0003, -0.0001, 0
	x, b := p.from(1, n, v), p.zeros(1, n)
	p.cpu.BiasAct(x.c, b.c, Tanh)
	p.gpu.BiasAct(x.g, b.g, Tanh)
	c, g := p.download(x)
	for i := range c {
		if d := math.Abs(float64(g[i]) - float64(c[i])); d > parityTol*math.Abs(float64(c[i])) {
			t.Fatalf("tanh(%v) = %v on the GPU, %v on the CPU", v[i], g[i], c[i])
		}
	}
}

func TestCUDAColSum(t *testing.T) {
	p := newParity(t, 4)
	for _, rows := range []int{0, 1, 3, 1023, 1024, 1025, 5000, 131072} {
		for _, cols := range []int{1, 2, 33, 256} {
			for _, beta := range []float32{0, 1, 0.5} {
				x, out := p.rand(rows, cols, 1), p.rand(1, cols, 1)
				p.cpu.ColSum(out.c, x.c, beta)
				p.gpu.ColSum(out.g, x.g, beta)
				p.check(fmt.Sprintf("colsum %dx%d beta=%v", rows, cols, beta), out)
			}
		}
	}
}

func TestCUDAGatherRows(t *testing.T) {
	p := newParity(t, 5)
	src := p.rand(5000, 7, 1)
	wide := p.rand(5000, 1, 1)
	idx := make([]int32, 3000)
	for i := range idx {
		idx[i] = int32(p.r.IntN(5000))
	}
	for round := 0; round < 3; round++ {
		dst, dst1 := p.zeros(len(idx), 7), p.zeros(len(idx), 1)
		p.cpu.GatherRows(dst.c, src.c, idx)
		p.gpu.GatherRows(dst.g, src.g, idx)
		p.cpu.GatherRows(dst1.c, wide.c, idx) // same indices: cached on the device
		p.gpu.GatherRows(dst1.g, wide.g, idx)
		p.check(fmt.Sprintf("gather round %d", round), dst)
		p.check(fmt.Sprintf("gather (1 col) round %d", round), dst1)
		// Shuffle in place, as the PPO loop does between epochs.
		p.r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		idx[0] = int32(p.r.IntN(5000))
	}
	// A shorter prefix of the same slice.
	dst := p.zeros(10, 7)
	p.cpu.GatherRows(dst.c, src.c, idx[:10])
	p.gpu.GatherRows(dst.g, src.g, idx[:10])
	p.check("gather prefix", dst)
}

// policyInputs makes a minibatch whose old log-probabilities differ from
// the current ones by noise, so that some ratios clip.
func (p *parity) categoricalInputs(B, A int) (logits, acts, old, adv both) {
	lv := randSlice(p.r, B*A, 2)
	av, ov := make([]float32, B), make([]float32, B)
	for i := 0; i < B; i++ {
		a := p.r.IntN(A)
		av[i] = float32(a)
		row := lv[i*A : (i+1)*A]
		mx := row[0]
		for _, v := range row {
			mx = max(mx, v)
		}
		var se float64
		for _, v := range row {
			se += math.Exp(float64(v - mx))
		}
		ov[i] = float32(float64(row[a]-mx) - math.Log(se) + 0.3*p.r.NormFloat64())
	}
	advv := randSlice(p.r, B, 3)
	for i := range advv {
		advv[i] += 0.5
	}
	return p.from(B, A, lv), p.from(B, 1, av), p.from(B, 1, ov), p.from(B, 1, advv)
}

func TestCUDACategoricalPPO(t *testing.T) {
	p := newParity(t, 6)
	for _, B := range []int{1, 2, 7, 128, 2048, 2049, 50000} {
		for _, A := range []int{2, 3, 7} {
			for _, norm := range []bool{true, false} {
				if B == 1 && norm {
					continue // a single advantage normalises to 0/(0+1e-8): fine, but meaningless
				}
				name := fmt.Sprintf("categorical B=%d A=%d norm=%v", B, A, norm)
				logits, acts, old, adv := p.categoricalInputs(B, A)
				dout, stats := p.rand(B, A, 1), p.rand(1, NumStats, 1)
				args := PPOPolicyArgs{ClipCoef: 0.2, EntCoef: 0.01, NormAdv: norm}
				for round := 0; round < 2; round++ { // stats accumulate
					for dev, d := range []Device{p.cpu, p.gpu} {
						pick := func(x both) Tensor { return [2]Tensor{x.c, x.g}[dev] }
						a := args
						a.Out, a.Actions, a.OldLogp, a.Adv, a.DOut, a.Stats = pick(logits), pick(acts), pick(old), pick(adv), pick(dout), pick(stats)
						d.CategoricalPPO(a)
					}
				}
				p.check(name+" dOut", dout)
				p.checkStats(name, stats)
			}
		}
	}
}

func TestCUDAGaussianPPO(t *testing.T) {
	p := newParity(t, 7)
	for _, B := range []int{1, 3, 128, 2048, 2049, 50000} {
		for _, A := range []int{1, 2, 6, 17} {
			for _, norm := range []bool{true, false} {
				if B == 1 && norm {
					continue
				}
				name := fmt.Sprintf("gaussian B=%d A=%d norm=%v", B, A, norm)
				muv := randSlice(p.r, B*A, 1)
				lsv := randSlice(p.r, A, 0.7)
				av, ov := make([]float32, B*A), make([]float32, B)
				for i := 0; i < B; i++ {
					var lp float64
					for j := 0; j < A; j++ {
						sd := math.Exp(float64(lsv[j]))
						z := p.r.NormFloat64()
						av[i*A+j] = float32(float64(muv[i*A+j]) + sd*z)
						lp += -0.5*z*z - float64(lsv[j]) - halfLog2Pi
					}
					ov[i] = float32(lp + 0.3*p.r.NormFloat64())
				}
				mu, ls, acts, old := p.from(B, A, muv), p.from(1, A, lsv), p.from(B, A, av), p.from(B, 1, ov)
				adv := p.rand(B, 1, 2)
				dmu, dls, stats := p.rand(B, A, 1), p.rand(1, A, 1), p.rand(1, NumStats, 1)
				for round := 0; round < 2; round++ {
					for dev, d := range []Device{p.cpu, p.gpu} {
						pick := func(x both) Tensor { return [2]Tensor{x.c, x.g}[dev] }
						d.GaussianPPO(PPOPolicyArgs{Out: pick(mu), LogStd: pick(ls), Actions: pick(acts), OldLogp: pick(old),
							Adv: pick(adv), DOut: pick(dmu), DLogStd: pick(dls), ClipCoef: 0.2, EntCoef: 0.01, NormAdv: norm, Stats: pick(stats)})
					}
				}
				p.check(name+" dMu", dmu)
				p.check(name+" dLogStd", dls)
				p.checkStats(name, stats)
			}
		}
	}
}

func TestCUDAValueLoss(t *testing.T) {
	p := newParity(t, 8)
	for _, B := range []int{1, 5, 256, 70000} {
		for _, clip := range []bool{true, false} {
			v, ret := p.rand(B, 1, 5), p.rand(B, 1, 5)
			ov := make([]float32, B)
			vc, _ := p.download(v)
			for i := range ov {
				ov[i] = vc[i] + float32(0.4*p.r.NormFloat64())
			}
			old, dv, stats := p.from(B, 1, ov), p.rand(B, 1, 1), p.rand(1, NumStats, 1)
			for dev, d := range []Device{p.cpu, p.gpu} {
				pick := func(x both) Tensor { return [2]Tensor{x.c, x.g}[dev] }
				d.ValueLoss(ValueArgs{Value: pick(v), OldValue: pick(old), Returns: pick(ret), DValue: pick(dv),
					ClipCoef: 0.2, Clip: clip, VFCoef: 0.5, Stats: pick(stats)})
			}
			name := fmt.Sprintf("value loss B=%d clip=%v", B, clip)
			p.check(name+" dValue", dv)
			p.checkStats(name, stats)
		}
	}
}

func TestCUDAClipGradNormAndAdam(t *testing.T) {
	p := newParity(t, 9)
	for _, n := range []int{1, 1000, 300001} {
		for _, maxNorm := range []float32{0.5, 1e9} {
			name := fmt.Sprintf("n=%d max_norm=%v", n, maxNorm)
			params, m, v := p.rand(1, n, 1), p.zeros(1, n), p.zeros(1, n)
			stats := p.zeros(1, NumStats)
			for step := 1; step <= 5; step++ {
				grads := p.rand(1, n, 0.1)
				p.cpu.ClipGradNorm(grads.c, maxNorm, stats.c)
				p.gpu.ClipGradNorm(grads.g, maxNorm, stats.g)
				p.check(name+" clipped grads", grads)
				a := AdamArgs{LR: 2.5e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-5, Step: step}
				p.cpu.Adam(params.c, grads.c, m.c, v.c, a)
				p.gpu.Adam(params.g, grads.g, m.g, v.g, a)
				p.check(fmt.Sprintf("%s step %d params", name, step), params)
				p.check(fmt.Sprintf("%s step %d m", name, step), m)
				p.check(fmt.Sprintf("%s step %d v", name, step), v)
			}
			p.checkStats(name, stats)
		}
	}
}

func TestCUDAMisuse(t *testing.T) {
	p := newParity(t, 10)
	mustPanic := func(what, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(fmt.Sprint(r), want) {
				t.Fatalf("%s: panic %v, want one containing %q", what, r, want)
			}
		}()
		f()
	}
	x := p.rand(4, 4, 1)
	mustPanic("CPU tensor", "does not belong", func() { p.gpu.Fill(x.c, 1) })
	mustPanic("matmul shapes", "matmul shapes", func() { p.gpu.MatMul(x.g, x.g, false, p.gpu.Alloc(3, 4), false, 0) })
	mustPanic("gather range", "out of range", func() { p.gpu.GatherRows(p.gpu.Alloc(1, 4), x.g, []int32{4}) })
	// The device still works afterwards.
	p.cpu.Fill(x.c, 3)
	p.gpu.Fill(x.g, 3)
	p.check("fill after misuse", x)
}

func TestCUDAOpen(t *testing.T) {
	gpuForTest(t)
	d, why, err := Open("auto", 2, math.Inf(1))
	if err != nil {
		t.Fatal(err)
	}
	g, ok := d.(*CUDA)
	if !ok || !strings.Contains(why, "auto") || !strings.HasPrefix(why, "cuda:0 ") {
		t.Fatalf("auto chose %T: %s", d, why)
	}
	t.Logf("%s; %s", why, g.Info())
	g.Close()
	if _, _, err := Open("cuda:99", 2, math.Inf(1)); err == nil || !strings.Contains(err.Error(), "no GPU number 99") {
		t.Fatalf("cuda:99: %v", err)
	}
	if _, _, err := Open("cuda:x", 2, math.Inf(1)); err == nil {
		t.Fatal("cuda:x opened")
	}
	c, why, err := Open("cpu", 2, math.Inf(1))
	if _, ok := c.(*CPU); err != nil || !ok {
		t.Fatalf("cpu: %T %s %v", c, why, err)
	}
}

// TestOpenWithoutGPU runs where the driver does not answer (a cuda build on
// a machine without a GPU, e.g. against the CUDA stub libraries): the
// program must have started at all, auto must fall back to the CPU and say
// why, and cuda must fail with the reason.
func TestOpenWithoutGPU(t *testing.T) {
	if _, err := OpenCUDA(0); err == nil {
		t.Skip("a GPU answered")
	}
	d, why, err := Open("auto", 1, math.Inf(1))
	if _, ok := d.(*CPU); err != nil || !ok || !strings.Contains(why, "auto: no usable GPU") {
		t.Fatalf("auto without a GPU: %T %q %v", d, why, err)
	}
	t.Log(why)
	if _, _, err := Open("cuda", 1, math.Inf(1)); err == nil || !strings.Contains(err.Error(), "not usable") {
		t.Fatalf("cuda without a GPU: %v", err)
	}
}

// TestCUDAKernelsCompile compiles the kernel source with NVRTC for the
// architectures of current GPUs. NVRTC needs no GPU, so this runs wherever
// the real libnvrtc is present (scripts/vet-cuda.sh runs it against
// Debian's NVRTC 11.8); with the stub library it skips.
func TestCUDAKernelsCompile(t *testing.T) {
	if _, _, err := nvrtc.Version(); err != nil {
		t.Skipf("no usable NVRTC: %v", err)
	}
	for _, cc := range [][2]int{{7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}} {
		ptx, arch, err := kernelPTX(cc[0], cc[1])
		if err != nil {
			t.Fatalf("compute capability %d.%d: %v", cc[0], cc[1], err)
		}
		for _, name := range kernelNames {
			if !strings.Contains(ptx, ".entry "+name+"(") {
				t.Errorf("%s: no kernel %s in the PTX", arch, name)
			}
		}
		// Every parameter is 8 bytes wide (Function.Launch copies 8 per parameter).
		for _, line := range strings.Split(ptx, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, ".param") && !strings.HasPrefix(line, ".param .u64") && !strings.HasPrefix(line, ".param .f64") {
				t.Errorf("%s: kernel parameter not 8 bytes wide: %s", arch, line)
			}
		}
		t.Logf("%s: %d bytes of PTX", arch, len(ptx))
	}
}

func TestCUDAIm2ColCol2Im(t *testing.T) {
	p := newParity(t, 12)
	for _, g := range []Conv2D{
		{H: 10, W: 10, C: 4, K: 3, Stride: 1}, {H: 10, W: 10, C: 7, K: 3, Stride: 1, Pad: 1},
		{H: 9, W: 11, C: 3, K: 4, Stride: 2, Pad: 2}, {H: 8, W: 8, C: 16, K: 2, Stride: 2},
		{H: 1, W: 1, C: 1, K: 1, Stride: 1}, {H: 5, W: 7, C: 2, K: 3, Stride: 3, Pad: 1},
	} {
		for _, B := range []int{1, 3, 257} {
			oh, ow := g.Out()
			x := p.rand(B, g.H*g.W*g.C, 1)
			cols := p.rand(B*oh*ow, g.Patch(), 1) // garbage, overwritten
			p.cpu.Im2Col(cols.c, x.c, g)
			p.gpu.Im2Col(cols.g, x.g, g)
			p.check(fmt.Sprintf("im2col %+v B=%d", g, B), cols)
			dcols := p.rand(B*oh*ow, g.Patch(), 1)
			dx := p.rand(B, g.H*g.W*g.C, 1) // garbage, overwritten
			p.cpu.Col2Im(dx.c, dcols.c, g)
			p.gpu.Col2Im(dx.g, dcols.g, g)
			p.check(fmt.Sprintf("col2im %+v B=%d", g, B), dx)
		}
	}
}
