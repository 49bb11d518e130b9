//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gorgonia.org/cu/nvrtc"
)

// Parity of the CUDA device's TransformerOps with the CPU device's (which
// lm_cpu_test.go checks against float64 references and finite
// differences), on awkward shapes and views at odd offsets.

func TestCUDALMKernelsCompile(t *testing.T) {
	if _, _, err := nvrtc.Version(); err != nil {
		t.Skipf("no usable NVRTC: %v", err)
	}
	for _, arch := range []string{"compute_75", "compute_80", "compute_90"} {
		ptx, err := compileLMKernels(arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		for _, name := range lmKernelNames {
			if !strings.Contains(ptx, ".entry "+name+"(") {
				t.Errorf("%s: no kernel %s in the PTX", arch, name)
			}
		}
		for _, line := range strings.Split(ptx, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, ".param") && !strings.HasPrefix(line, ".param .u64") && !strings.HasPrefix(line, ".param .f64") {
				t.Errorf("%s: kernel parameter not 8 bytes wide: %s", arch, line)
			}
		}
	}
}

func (p *parity) ints(n, limit int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(p.r.IntN(limit))
	}
	return out
}

func TestCUDALinearAddEmbed(t *testing.T) {
	p := newParity(t, 31)
	for _, s := range []struct{ m, n, k int }{{1, 70, 33}, {5, 64, 16}, {64, 200, 48}} {
		a, b, c := p.rand(s.m, s.k, 1), p.rand(s.k, s.n, 1), p.rand(s.m, s.n, 1)
		p.cpu.Linear(c.c, a.c, b.c, 1)
		p.gpu.Linear(c.g, a.g, b.g, 1)
		p.check(fmt.Sprintf("linear %+v", s), c)
	}
	x, y := p.rand(7, 13, 1), p.rand(7, 13, 1)
	p.cpu.Add(x.c, y.c)
	p.gpu.Add(x.g, y.g)
	p.check("add", x)
	const v, h = 37, 24
	for _, tr := range []bool{false, true} {
		rows, cols := v, h
		if tr {
			rows, cols = h, v
		}
		table := p.rand(rows, cols, 1)
		ids := append(p.ints(40, v), 3, 3, 3)
		out := p.rand(len(ids), h, 1)
		p.cpu.Embed(out.c, table.c, ids, tr)
		p.gpu.Embed(out.g, table.g, ids, tr)
		p.check(fmt.Sprintf("embed transposed=%v", tr), out)
		dout := p.rand(len(ids), h, 1)
		p.cpu.EmbedGrad(table.c, dout.c, ids, tr)
		p.gpu.EmbedGrad(table.g, dout.g, ids, tr)
		p.check(fmt.Sprintf("embed_grad transposed=%v dTable", tr), table)
	}
}

func TestCUDARMSNormRopeSwiGLU(t *testing.T) {
	p := newParity(t, 32)
	for _, s := range []struct{ n, c, col, groups, width int }{{5, 24, 0, 1, 24}, {300, 64, 0, 1, 64}, {9, 96, 16, 4, 16}, {3, 20, 4, 1, 13}} {
		name := fmt.Sprintf("rmsnorm %+v", s)
		x, w := p.rand(s.n, s.c, 2), p.rand(1, s.width, 1)
		y, rs := p.rand(s.n, s.c, 1), p.rand(s.n, s.groups, 1)
		cp := func(b both) both { c, _ := p.download(b); return p.from(b.c.Rows, b.c.Cols, c) }
		y = cp(x) // columns outside the groups pass through
		a := func(dev int) NormArgs {
			pick := func(b both) Tensor { return [2]Tensor{b.c, b.g}[dev] }
			return NormArgs{X: pick(x), Y: pick(y), W: pick(w), RStd: pick(rs), Col: s.col, Groups: s.groups, Width: s.width, Eps: 1e-6}
		}
		p.cpu.RMSNorm(a(0))
		p.gpu.RMSNorm(a(1))
		p.check(name+" y", y)
		p.check(name+" rstd", rs)
		for _, add := range []bool{false, true} {
			dy, dx, dw := p.rand(s.n, s.c, 1), p.rand(s.n, s.c, 1), p.rand(1, s.width, 1)
			g := func(dev int) NormArgs {
				pick := func(b both) Tensor { return [2]Tensor{b.c, b.g}[dev] }
				na := a(dev)
				na.DY, na.DX, na.DW, na.AddDX = pick(dy), pick(dx), pick(dw), add
				if !add {
					na.DX = na.DY // in place, as the q/k norms' backward runs
				}
				return na
			}
			p.cpu.RMSNormGrad(g(0))
			p.gpu.RMSNormGrad(g(1))
			if add {
				p.check(name+" dX", dx)
			} else {
				p.check(name+" dX", dy)
			}
			p.check(name+" dW", dw)
		}
	}
	const n, c, col, heads, hd = 11, 80, 16, 3, 16
	cs, sn := refRopeTables(50, hd, 10000)
	cos, sin := p.from(50, hd/2, cs), p.from(50, hd/2, sn)
	pos := p.ints(n, 50)
	for _, inv := range []bool{false, true} {
		x := p.rand(n, c, 1)
		p.cpu.Rope(RopeArgs{X: x.c, Col: col, Heads: heads, HeadDim: hd, Pos: pos, Cos: cos.c, Sin: sin.c, Inverse: inv})
		p.gpu.Rope(RopeArgs{X: x.g, Col: col, Heads: heads, HeadDim: hd, Pos: pos, Cos: cos.g, Sin: sin.g, Inverse: inv})
		p.check(fmt.Sprintf("rope inverse=%v", inv), x)
	}
	gu, h := p.rand(33, 2*45, 4), p.rand(33, 45, 1)
	p.cpu.SwiGLU(h.c, gu.c)
	p.gpu.SwiGLU(h.g, gu.g)
	p.check("swiglu", h)
	dh, dgu := p.rand(33, 45, 1), p.rand(33, 90, 1)
	p.cpu.SwiGLUGrad(dgu.c, dh.c, gu.c)
	p.gpu.SwiGLUGrad(dgu.g, dh.g, gu.g)
	p.check("swiglu_grad dGU", dgu)
}

func TestCUDAAttention(t *testing.T) {
	p := newParity(t, 33)
	for _, c := range []attnCase{{1, 5, 2, 1, 8, false}, {3, 9, 4, 2, 16, true}, {2, 70, 4, 2, 24, true}, {1, 600, 2, 1, 8, false}} {
		name := fmt.Sprintf("attention %+v", c)
		w, n := (c.heads+2*c.kvHeads)*c.hd, c.batch*c.seq
		qkv, out, lse := p.rand(n, w, 1.5), p.rand(n, c.heads*c.hd, 1), p.rand(n, c.heads, 1)
		mask := c.mask()
		args := func(dev int) AttentionArgs {
			pick := func(b both) Tensor { return [2]Tensor{b.c, b.g}[dev] }
			return AttentionArgs{QKV: pick(qkv), Out: pick(out), LSE: pick(lse), Mask: mask, Batch: c.batch, Seq: c.seq,
				Heads: c.heads, KVHeads: c.kvHeads, HeadDim: c.hd, Scale: float32(1 / math.Sqrt(float64(c.hd)))}
		}
		p.cpu.Attention(args(0))
		p.gpu.Attention(args(1))
		p.check(name+" out", out)
		p.check(name+" lse", lse)
		dout, dqkv := p.rand(n, c.heads*c.hd, 1), p.rand(n, w, 1)
		if mask != nil { // padding rows get no gradient from downstream
			dc, _ := p.download(dout)
			for i := range dc {
				if mask[i/(c.heads*c.hd)] == 0 {
					dc[i] = 0
				}
			}
			dout = p.from(n, c.heads*c.hd, dc)
		}
		grad := func(dev int) AttentionArgs {
			a := args(dev)
			a.DOut, a.DQKV = [2]Tensor{dout.c, dout.g}[dev], [2]Tensor{dqkv.c, dqkv.g}[dev]
			return a
		}
		p.cpu.AttentionGrad(grad(0))
		p.gpu.AttentionGrad(grad(1))
		p.check(name+" dQKV", dqkv)
	}
}

func TestCUDACacheAttention(t *testing.T) {
	p := newParity(t, 34)
	const heads, kvHeads, hd, maxLen, slots = 4, 2, 16, 24, 3
	w := (heads + 2*kvHeads) * hd
	kc, vc := p.zeros(slots*kvHeads*hd, maxLen), p.zeros(slots*maxLen, kvHeads*hd)
	// A prompt in two slots, then single tokens.
	steps := []struct{ slot, pos []int32 }{
		{[]int32{0, 0, 0, 0, 2, 2, 2}, []int32{0, 1, 2, 3, 0, 1, 2}},
		{[]int32{0, 2}, []int32{4, 3}},
		{[]int32{2, 0, 1}, []int32{4, 5, 0}},
	}
	for i, s := range steps {
		n := len(s.slot)
		qkv, out := p.rand(n, w, 1.5), p.rand(n, heads*hd, 1)
		a := func(dev int) CacheArgs {
			pick := func(b both) Tensor { return [2]Tensor{b.c, b.g}[dev] }
			return CacheArgs{QKV: pick(qkv), Out: pick(out), KCache: pick(kc), VCache: pick(vc), Slot: s.slot, Pos: s.pos,
				MaxLen: maxLen, Heads: heads, KVHeads: kvHeads, HeadDim: hd, Scale: 0.25}
		}
		p.cpu.CacheAttention(a(0))
		p.gpu.CacheAttention(a(1))
		p.check(fmt.Sprintf("cache_attention call %d out", i), out)
	}
	p.check("cache_attention kcache", kc)
	p.check("cache_attention vcache", vc)
}

func TestCUDALogProbs(t *testing.T) {
	p := newParity(t, 35)
	for _, s := range []struct {
		m, v    int
		inv     float32
		entropy bool
	}{{4, 10, 1, true}, {7, 1000, 1.4, true}, {3, 300, 1, false}} {
		name := fmt.Sprintf("logprobs %+v", s)
		z, lp, ent := p.rand(s.m, s.v, 5), p.rand(s.m, 1, 1), p.rand(s.m, 1, 1)
		dl, de := p.rand(s.m, 1, 1), p.rand(s.m, 1, 1)
		tg := p.ints(s.m, s.v)
		a := func(dev int) LogProbArgs {
			pick := func(b both) Tensor { return [2]Tensor{b.c, b.g}[dev] }
			la := LogProbArgs{Logits: pick(z), Targets: tg, LogP: pick(lp), DLogP: pick(dl), InvTemp: s.inv}
			if s.entropy {
				la.Entropy, la.DEntropy = pick(ent), pick(de)
			}
			return la
		}
		p.cpu.LogProbs(a(0))
		p.gpu.LogProbs(a(1))
		p.check(name+" logp", lp)
		if s.entropy {
			p.check(name+" entropy", ent)
		}
		p.cpu.LogProbsGrad(a(0))
		p.gpu.LogProbsGrad(a(1))
		p.check(name+" dLogits", z)
	}
}
