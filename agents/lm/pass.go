package lm

import (
	"fmt"
	"math"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// Batch is Rows sequences of Seq tokens, padded on the left or the right.
type Batch struct {
	Rows, Seq int
	// IDs are the Rows·Seq token ids, row after row (a padding position
	// may hold any id of the vocabulary).
	IDs []int32
	// Mask is 1 on real tokens and 0 on padding (nil: all real). A real
	// token's position is the number of real tokens before it in its row
	// (verl's cumsum(mask) − 1), so left padding changes nothing.
	Mask []int32
	// Targets gives, per position, the token whose log-probability that
	// position's logits are scored on (usually the next token), or −1.
	// Forward returns the scored positions' log-probabilities in order.
	Targets []int32
}

// NextTokenTargets sets Targets to score every real token after the first
// of each row given the tokens before it: position t's target is the id at
// t+1 when both are real.
func (b *Batch) NextTokenTargets() {
	b.Targets = make([]int32, b.Rows*b.Seq)
	for i := range b.Targets {
		b.Targets[i] = -1
		if i%b.Seq < b.Seq-1 && b.real(i) && b.real(i+1) {
			b.Targets[i] = b.IDs[i+1]
		}
	}
}

func (b *Batch) real(i int) bool { return b.Mask == nil || b.Mask[i] != 0 }

// Pass runs the forward and backward of a model over batches of up to a
// fixed number of tokens, keeping what the backward needs. It is not safe
// for concurrent use; a Pass and the generators of a model must not run at
// once either.
type Pass struct {
	m                 *Model
	maxTokens, maxSel int

	// Saved by Forward for Backward, per layer: its input, the residual
	// after attention, the q/k/v projection (attention's input, after
	// RoPE; with per-head q/k norms, before them, which their backward
	// needs), the attention output with its log-sum-exps, and the gate/up
	// projection.
	x, mid, qkvSaved, attn, lse, gu []gpu.Tensor
	rstd1, rstd2                    []gpu.Tensor

	// One layer's scratch (qkv only with per-head q/k norms: attention's
	// input, made from the saved projection again in the backward).
	norm, qkv, qR, kR, h, dx, dqkv, dattn, dgu, dh gpu.Tensor
	// The scored rows: their final hidden states, normed, and a chunk of
	// their logits.
	sel, selNorm, rstdF, logits, logp, ent, dlogp, dent gpu.Tensor
	// The value head's outputs and their gradients at the scored rows,
	// allocated on its first use.
	vals, dvals gpu.Tensor

	// The batch in hand.
	n            int
	ids, pos     []int32
	mask         []int32
	rows, seq    int
	selIdx, tgts []int32
	logitsFor    int // the chunk the logits buffer holds (−1: none)
	entropy      bool
	invTemp      float32
	value        *ValueHead // the head the last Forward computed values with
}

// NewPass prepares a pass for batches of up to maxTokens tokens of which
// up to maxSelected are scored, refusing one whose memory estimate
// exceeds the model's limit.
func (m *Model) NewPass(maxTokens, maxSelected int) (*Pass, error) {
	if maxTokens < 1 || maxSelected < 1 {
		return nil, fmt.Errorf("a pass needs at least one token and one scored token")
	}
	if err := m.checkMemory(PassBytes(m.Config, maxTokens, maxSelected),
		fmt.Sprintf("a pass over %d tokens", maxTokens), "use fewer or shorter sequences per pass"); err != nil {
		return nil, err
	}
	d, dev := dimsOf(m.Config), m.Dev
	p := &Pass{m: m, maxTokens: maxTokens, maxSel: maxSelected, logitsFor: -1}
	n := maxTokens
	p.x = append(p.x, dev.Alloc(n, d.h))
	for l := 0; l < m.Config.Layers; l++ {
		p.x = append(p.x, dev.Alloc(n, d.h))
		p.mid = append(p.mid, dev.Alloc(n, d.h))
		p.qkvSaved = append(p.qkvSaved, dev.Alloc(n, d.qkv))
		p.attn = append(p.attn, dev.Alloc(n, d.q))
		p.lse = append(p.lse, dev.Alloc(n, d.heads))
		p.gu = append(p.gu, dev.Alloc(n, 2*d.inter))
		p.rstd1 = append(p.rstd1, dev.Alloc(n, 1))
		p.rstd2 = append(p.rstd2, dev.Alloc(n, 1))
	}
	p.norm, p.qR, p.kR = dev.Alloc(n, d.h), dev.Alloc(n, d.heads), dev.Alloc(n, d.kvHeads)
	if m.Config.QKNorm {
		p.qkv = dev.Alloc(n, d.qkv)
	}
	p.h, p.dx, p.dqkv, p.dattn = dev.Alloc(n, d.inter), dev.Alloc(n, d.h), dev.Alloc(n, d.qkv), dev.Alloc(n, d.q)
	p.dgu, p.dh = dev.Alloc(n, 2*d.inter), dev.Alloc(n, d.inter)
	s := maxSelected
	p.sel, p.selNorm, p.rstdF = dev.Alloc(s, d.h), dev.Alloc(s, d.h), dev.Alloc(s, 1)
	p.logits = dev.Alloc(passChunk(d.vocab, s), d.vocab)
	p.logp, p.ent, p.dlogp, p.dent = dev.Alloc(s, 1), dev.Alloc(s, 1), dev.Alloc(s, 1), dev.Alloc(s, 1)
	return p, nil
}

// ForwardOptions change what Forward computes.
type ForwardOptions struct {
	// Entropy also computes each scored position's entropy.
	Entropy bool
	// Temperature divides the logits before the softmax (0 or 1: none),
	// as RL trainers score a policy that sampled with a temperature.
	Temperature float64
	// Values, when set, also computes the value head's estimate at each
	// scored position: the value of the state from which that position's
	// target is drawn (verl's values at the response tokens).
	Values *ValueHead
}

// Scores are what Forward returns per scored position.
type Scores struct {
	LogProbs []float32
	Entropy  []float32 // nil unless asked for
	Values   []float32 // nil unless asked for
}

// first returns the first n rows of t.
func first(t gpu.Tensor, n int) gpu.Tensor { return t.RowRange(0, n) }

// check validates a batch against the model and the pass's size, and
// works out positions and the scored positions.
func (p *Pass) check(b Batch) error {
	c := p.m.Config
	n := b.Rows * b.Seq
	if b.Rows < 1 || b.Seq < 1 {
		return fmt.Errorf("a batch needs at least one row of one token, not %d×%d", b.Rows, b.Seq)
	}
	if n > p.maxTokens {
		return fmt.Errorf("a batch of %d×%d tokens is larger than the %d this pass was made for", b.Rows, b.Seq, p.maxTokens)
	}
	if len(b.IDs) != n || b.Mask != nil && len(b.Mask) != n || len(b.Targets) != n {
		return fmt.Errorf("a batch of %d×%d needs %d ids, mask values and targets (got %d, %d, %d)", b.Rows, b.Seq, n, len(b.IDs), len(b.Mask), len(b.Targets))
	}
	p.pos = p.pos[:0]
	p.selIdx, p.tgts = p.selIdx[:0], p.tgts[:0]
	for r := 0; r < b.Rows; r++ {
		pos := int32(-1)
		for t := 0; t < b.Seq; t++ {
			i := r*b.Seq + t
			if id := b.IDs[i]; id < 0 || int(id) >= c.VocabSize {
				return fmt.Errorf("row %d, position %d: token id %d is outside the vocabulary of %d", r, t, id, c.VocabSize)
			}
			real := b.real(i)
			if b.Mask != nil && b.Mask[i] != 0 && b.Mask[i] != 1 {
				return fmt.Errorf("row %d, position %d: mask value %d is neither 0 nor 1", r, t, b.Mask[i])
			}
			if real {
				pos++
			}
			p.pos = append(p.pos, max(pos, 0))
			if tg := b.Targets[i]; tg >= 0 {
				if int(tg) >= c.VocabSize {
					return fmt.Errorf("row %d, position %d: target %d is outside the vocabulary of %d", r, t, tg, c.VocabSize)
				}
				if !real {
					return fmt.Errorf("row %d, position %d: a padding position cannot be scored", r, t)
				}
				p.selIdx, p.tgts = append(p.selIdx, int32(i)), append(p.tgts, tg)
			} else if tg < -1 {
				return fmt.Errorf("row %d, position %d: target %d (−1 means none)", r, t, tg)
			}
		}
		if int(pos) >= c.MaxPositions {
			return fmt.Errorf("row %d holds %d tokens, more than the model's context of %d", r, pos+1, c.MaxPositions)
		}
	}
	if len(p.selIdx) > p.maxSel {
		return fmt.Errorf("a batch scores %d positions, more than the %d this pass was made for", len(p.selIdx), p.maxSel)
	}
	p.n, p.rows, p.seq, p.ids, p.mask = n, b.Rows, b.Seq, b.IDs, b.Mask
	return nil
}

// Forward runs the model over b, keeps what Backward needs, and returns
// the log-probabilities of the targets.
func (p *Pass) Forward(b Batch, opt ForwardOptions) (Scores, error) {
	if err := p.check(b); err != nil {
		return Scores{}, err
	}
	m, ops, c := p.m, p.m.ops, p.m.Config
	d := dimsOf(c)
	n := p.n
	p.entropy, p.invTemp, p.value = opt.Entropy, 1, opt.Values
	if v := opt.Values; v != nil && v.hidden != d.h {
		return Scores{}, fmt.Errorf("a value head for a %d-wide model cannot score a %d-wide one", v.hidden, d.h)
	}
	if opt.Temperature > 0 {
		p.invTemp = float32(1 / opt.Temperature)
	}
	cos, sin := m.rope(maxPos(p.pos) + 1)
	ops.Embed(first(p.x[0], n), m.w.embed, p.ids, c.Tied)
	for l, w := range m.w.layers {
		x, mid := first(p.x[l], n), first(p.mid[l], n)
		norm := first(p.norm, n)
		ops.RMSNorm(gpu.NormArgs{X: x, Y: norm, W: w.ln1, RStd: first(p.rstd1[l], n), Groups: 1, Width: d.h, Eps: float32(c.RMSNormEps)})
		raw := first(p.qkvSaved[l], n)
		m.Dev.MatMul(raw, norm, false, w.wqkv, false, 0)
		if c.QKVBias {
			m.Dev.BiasAct(raw, w.bqkv, gpu.Identity)
		}
		ops.Attention(p.attnArgs(l, p.prepareQKV(l, cos, sin)))
		m.Dev.Copy(mid, x)
		m.Dev.MatMul(mid, first(p.attn[l], n), false, w.wo, false, 1)
		if c.OBias {
			m.Dev.BiasAct(mid, w.bo, gpu.Identity)
		}
		ops.RMSNorm(gpu.NormArgs{X: mid, Y: norm, W: w.ln2, RStd: first(p.rstd2[l], n), Groups: 1, Width: d.h, Eps: float32(c.RMSNormEps)})
		gu := first(p.gu[l], n)
		m.Dev.MatMul(gu, norm, false, w.wgu, false, 0)
		if c.MLPBias {
			m.Dev.BiasAct(gu, w.bgu, gpu.Identity)
		}
		h := first(p.h, n)
		ops.SwiGLU(h, gu)
		next := first(p.x[l+1], n)
		m.Dev.Copy(next, mid)
		m.Dev.MatMul(next, h, false, w.wd, false, 1)
		if c.MLPBias {
			m.Dev.BiasAct(next, w.bd, gpu.Identity)
		}
	}
	s := len(p.selIdx)
	if s == 0 {
		out := Scores{LogProbs: []float32{}}
		if opt.Values != nil {
			out.Values = []float32{}
		}
		return out, nil
	}
	m.Dev.GatherRows(first(p.sel, s), first(p.x[c.Layers], n), p.selIdx)
	ops.RMSNorm(gpu.NormArgs{X: first(p.sel, s), Y: first(p.selNorm, s), W: m.w.normF, RStd: first(p.rstdF, s), Groups: 1, Width: d.h, Eps: float32(c.RMSNormEps)})
	chunk := p.logits.Rows
	for c0 := 0; c0 < s; c0 += chunk {
		c1 := min(c0+chunk, s)
		p.logitsOf(c0, c1)
		ent := gpu.Tensor{}
		if opt.Entropy {
			ent = p.ent.RowRange(c0, c1)
		}
		ops.LogProbs(gpu.LogProbArgs{Logits: first(p.logits, c1-c0), Targets: p.tgts[c0:c1], LogP: p.logp.RowRange(c0, c1), Entropy: ent, InvTemp: p.invTemp})
	}
	out := Scores{LogProbs: make([]float32, s)}
	m.Dev.Download(out.LogProbs, first(p.logp, s))
	if v := opt.Values; v != nil {
		if p.vals.Rows == 0 {
			p.vals, p.dvals = m.Dev.Alloc(p.maxSel, 1), m.Dev.Alloc(p.maxSel, 1)
		}
		vals := first(p.vals, s)
		m.Dev.MatMul(vals, first(p.selNorm, s), false, v.w, false, 0)
		m.Dev.BiasAct(vals, v.b, gpu.Identity)
		out.Values = make([]float32, s)
		m.Dev.Download(out.Values, vals)
	}
	if opt.Entropy {
		out.Entropy = make([]float32, s)
		m.Dev.Download(out.Entropy, first(p.ent, s))
	}
	return out, nil
}

// logitsOf computes the logits of scored rows [c0, c1) into the logits
// buffer.
func (p *Pass) logitsOf(c0, c1 int) {
	p.m.Dev.MatMul(first(p.logits, c1-c0), p.selNorm.RowRange(c0, c1), false, p.m.w.head, false, 0)
	p.logitsFor = c0
}

func maxPos(pos []int32) int {
	mx := int32(0)
	for _, v := range pos {
		mx = max(mx, v)
	}
	return int(mx)
}

// prepareQKV turns layer l's q/k/v projection, saved by the forward, into
// attention's input and returns it: RoPE on queries and keys, in place;
// with per-head q/k norms (Qwen3), the norms and RoPE in the scratch, the
// projection kept for the norms' backward, which calls it again.
func (p *Pass) prepareQKV(l int, cos, sin gpu.Tensor) gpu.Tensor {
	c, d, w := p.m.Config, dimsOf(p.m.Config), p.m.w.layers[l]
	n := p.n
	qkv := first(p.qkvSaved[l], n)
	if c.QKNorm {
		raw := qkv
		qkv = first(p.qkv, n)
		p.m.Dev.Copy(qkv, raw)
		eps := float32(c.RMSNormEps)
		p.m.ops.RMSNorm(gpu.NormArgs{X: qkv, Y: qkv, W: w.qnorm, RStd: first(p.qR, n), Col: 0, Groups: d.heads, Width: d.hd, Eps: eps})
		p.m.ops.RMSNorm(gpu.NormArgs{X: qkv, Y: qkv, W: w.knorm, RStd: first(p.kR, n), Col: d.q, Groups: d.kvHeads, Width: d.hd, Eps: eps})
	}
	p.m.ops.Rope(gpu.RopeArgs{X: qkv, Col: 0, Heads: d.heads, HeadDim: d.hd, Pos: p.pos, Cos: cos, Sin: sin})
	p.m.ops.Rope(gpu.RopeArgs{X: qkv, Col: d.q, Heads: d.kvHeads, HeadDim: d.hd, Pos: p.pos, Cos: cos, Sin: sin})
	return qkv
}

func (p *Pass) attnArgs(l int, qkv gpu.Tensor) gpu.AttentionArgs {
	d := dimsOf(p.m.Config)
	return gpu.AttentionArgs{QKV: qkv, Out: first(p.attn[l], p.n), LSE: first(p.lse[l], p.n), Mask: p.mask,
		Batch: p.rows, Seq: p.seq, Heads: d.heads, KVHeads: d.kvHeads, HeadDim: d.hd, Scale: float32(1 / math.Sqrt(float64(d.hd)))}
}

// Backward adds to the model's gradients those of Σ dLogP·logp (+
// dEntropy·entropy, when Forward computed entropies and dEntropy is
// given) over the scored positions of the last Forward.
func (p *Pass) Backward(dLogP, dEntropy []float32) error {
	return p.BackwardScores(ScoreGrads{LogP: dLogP, Entropy: dEntropy})
}

// ScoreGrads are the gradients of a loss in what Forward returned, one per
// scored position: the log-probabilities, and optionally the entropies
// and the values (nil: none).
type ScoreGrads struct {
	LogP, Entropy, Values []float32
}

// BackwardScores adds to the model's gradients those of Σ g.LogP·logp +
// g.Entropy·entropy + g.Values·value over the scored positions of the last
// Forward; the value term's also go to the value head's gradients (the
// trunk's are summed with the policy's: a shared trunk).
func (p *Pass) BackwardScores(g ScoreGrads) error {
	dLogP, dEntropy := g.LogP, g.Entropy
	if !p.m.HasGrads() {
		return fmt.Errorf("backward needs gradients; this model was loaded for inference (LoadOptions.Inference)")
	}
	s := len(p.selIdx)
	if len(dLogP) != s || dEntropy != nil && len(dEntropy) != s || g.Values != nil && len(g.Values) != s {
		return fmt.Errorf("backward needs one gradient per scored position (%d), not %d", s, len(dLogP))
	}
	if dEntropy != nil && !p.entropy {
		return fmt.Errorf("an entropy gradient needs a forward that computed entropies")
	}
	if g.Values != nil && p.value == nil {
		return fmt.Errorf("a value gradient needs a forward that computed values (ForwardOptions.Values)")
	}
	m, ops, c := p.m, p.m.ops, p.m.Config
	d := dimsOf(c)
	n := p.n
	dx := first(p.dx, n)
	m.Dev.Fill(dx, 0)
	if s > 0 {
		m.Dev.Upload(first(p.dlogp, s), dLogP)
		dent := gpu.Tensor{}
		if dEntropy != nil {
			dent = first(p.dent, s)
			m.Dev.Upload(dent, dEntropy)
		}
		// The head, chunk by chunk: the logits again (unless the buffer
		// still holds them), their gradient in their place, then the
		// gradients of the normed hidden states (into sel) and the head.
		dnorm := first(p.norm, s)
		chunk := p.logits.Rows
		for c0 := (s - 1) / chunk * chunk; c0 >= 0; c0 -= chunk { // the last chunk first: the buffer may hold it
			c1 := min(c0+chunk, s)
			if p.logitsFor != c0 {
				p.logitsOf(c0, c1)
			}
			a := gpu.LogProbArgs{Logits: first(p.logits, c1-c0), Targets: p.tgts[c0:c1], LogP: p.logp.RowRange(c0, c1),
				DLogP: p.dlogp.RowRange(c0, c1), InvTemp: p.invTemp}
			if dEntropy != nil {
				a.Entropy, a.DEntropy = p.ent.RowRange(c0, c1), dent.RowRange(c0, c1)
			}
			ops.LogProbsGrad(a)
			p.logitsFor = -1
			m.Dev.MatMul(dnorm.RowRange(c0, c1), a.Logits, false, m.w.head, true, 0)
			m.Dev.MatMul(m.g.head, p.selNorm.RowRange(c0, c1), true, a.Logits, false, 1)
		}
		if v := p.value; g.Values != nil {
			// V = norm·w + b: the head's gradients, and w·dV into the
			// normed hidden states beside the policy head's.
			dv := first(p.dvals, s)
			m.Dev.Upload(dv, g.Values)
			m.Dev.MatMul(v.gw, first(p.selNorm, s), true, dv, false, 1)
			m.Dev.ColSum(v.gb, dv, 1)
			m.Dev.MatMul(dnorm, dv, false, v.w, true, 1)
		}
		// The final norm's backward, over the scored rows' hidden states
		// (sel still holds them from Forward).
		ops.RMSNormGrad(gpu.NormArgs{X: first(p.sel, s), W: m.w.normF, RStd: first(p.rstdF, s), Groups: 1, Width: d.h,
			DY: dnorm, DX: dnorm, DW: m.g.normF})
		ops.EmbedGrad(dx, dnorm, p.selIdx, false) // scatter into the scored rows
	}
	eps := float32(c.RMSNormEps)
	cos, sin := m.rope(maxPos(p.pos) + 1)
	for l := c.Layers - 1; l >= 0; l-- {
		w, g := m.w.layers[l], m.g.layers[l]
		x, mid, gu := first(p.x[l], n), first(p.mid[l], n), first(p.gu[l], n)
		norm, h, dh, dgu := first(p.norm, n), first(p.h, n), first(p.dh, n), first(p.dgu, n)
		// MLP: x' = mid + down(swiglu(gate/up(norm2(mid)))).
		ops.SwiGLU(h, gu)
		m.Dev.MatMul(dh, dx, false, w.wd, true, 0)
		m.Dev.MatMul(g.wd, h, true, dx, false, 1)
		if c.MLPBias {
			m.Dev.ColSum(g.bd, dx, 1)
		}
		ops.SwiGLUGrad(dgu, dh, gu)
		ops.RMSNorm(gpu.NormArgs{X: mid, Y: norm, W: w.ln2, RStd: first(p.rstd2[l], n), Groups: 1, Width: d.h, Eps: eps})
		m.Dev.MatMul(g.wgu, norm, true, dgu, false, 1)
		if c.MLPBias {
			m.Dev.ColSum(g.bgu, dgu, 1)
		}
		m.Dev.MatMul(norm, dgu, false, w.wgu, true, 0) // norm now holds its gradient
		ops.RMSNormGrad(gpu.NormArgs{X: mid, W: w.ln2, RStd: first(p.rstd2[l], n), Groups: 1, Width: d.h, DY: norm, DX: dx, DW: g.ln2, AddDX: true})
		// Attention: mid = x + o(attn(rope(norm(qkv(norm1(x)))))).
		attn, dattn := first(p.attn[l], n), first(p.dattn, n)
		m.Dev.MatMul(dattn, dx, false, w.wo, true, 0)
		m.Dev.MatMul(g.wo, attn, true, dx, false, 1)
		if c.OBias {
			m.Dev.ColSum(g.bo, dx, 1)
		}
		raw, dqkv := first(p.qkvSaved[l], n), first(p.dqkv, n)
		qkv := raw // roped in place by the forward, unless there are q/k norms
		if c.QKNorm {
			qkv = p.prepareQKV(l, cos, sin)
		}
		a := p.attnArgs(l, qkv)
		a.DOut, a.DQKV = dattn, dqkv
		ops.AttentionGrad(a)
		ops.Rope(gpu.RopeArgs{X: dqkv, Col: 0, Heads: d.heads, HeadDim: d.hd, Pos: p.pos, Cos: cos, Sin: sin, Inverse: true})
		ops.Rope(gpu.RopeArgs{X: dqkv, Col: d.q, Heads: d.kvHeads, HeadDim: d.hd, Pos: p.pos, Cos: cos, Sin: sin, Inverse: true})
		if c.QKNorm {
			ops.RMSNormGrad(gpu.NormArgs{X: raw, W: w.qnorm, RStd: first(p.qR, n), Col: 0, Groups: d.heads, Width: d.hd, DY: dqkv, DX: dqkv, DW: g.qnorm})
			ops.RMSNormGrad(gpu.NormArgs{X: raw, W: w.knorm, RStd: first(p.kR, n), Col: d.q, Groups: d.kvHeads, Width: d.hd, DY: dqkv, DX: dqkv, DW: g.knorm})
		}
		if c.QKVBias {
			m.Dev.ColSum(g.bqkv, dqkv, 1)
		}
		ops.RMSNorm(gpu.NormArgs{X: x, Y: norm, W: w.ln1, RStd: first(p.rstd1[l], n), Groups: 1, Width: d.h, Eps: eps})
		m.Dev.MatMul(g.wqkv, norm, true, dqkv, false, 1)
		m.Dev.MatMul(norm, dqkv, false, w.wqkv, true, 0)
		ops.RMSNormGrad(gpu.NormArgs{X: x, W: w.ln1, RStd: first(p.rstd1[l], n), Groups: 1, Width: d.h, DY: norm, DX: dx, DW: g.ln1, AddDX: true})
	}
	ops.EmbedGrad(m.g.embed, dx, p.ids, c.Tied)
	return nil
}

// ZeroGrad clears the model's gradients (Backward adds to them).
func (m *Model) ZeroGrad() {
	if m.HasGrads() {
		m.Dev.Fill(m.Grads, 0)
	}
}
