package lm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// FinishReason says why a completion ended.
type FinishReason string

// The reasons a completion ends.
const (
	FinishStop   FinishReason = "stop"   // a stop id, or the Stop callback said so
	FinishLength FinishReason = "length" // MaxNewTokens, or the generator's context, reached
)

// SampleOptions are the sampling settings of Generate.
type SampleOptions struct {
	MaxNewTokens int
	// Temperature divides the logits before sampling; 0 picks the most
	// likely token (greedy).
	Temperature float64
	// TopK keeps the K most likely tokens (0: all); TopP the smallest set
	// of most likely tokens whose probability reaches P (0 or 1: all).
	// They apply after the temperature, top-k first, as transformers does.
	TopK int
	TopP float64
	// StopIDs end a completion when sampled (the id is kept in it).
	StopIDs []int32
	// Seeds are the completions' seeds, one per prompt; without them
	// completion i uses Seed+i. A completion depends only on its prompt,
	// its seed and the model, not on what else is generated beside it.
	Seeds []uint64
	Seed  uint64
	// Stop, when set, is asked after every token whether the completion
	// so far ends (a stop string, decoded by a tokenizer).
	Stop func(seq int, tokens []int32) bool
	// OnToken, when set, is told every token as it is sampled, with its
	// log-probability (streaming).
	OnToken func(seq int, id int32, logp float32)
}

// Completion is one prompt's generated tokens.
type Completion struct {
	Tokens []int32
	// LogProbs are each token's log-probability under the model's raw
	// distribution (no temperature, top-k or top-p): what an RL loss takes
	// as the behaviour policy's.
	LogProbs []float32
	Finish   FinishReason
}

// Generator holds a KV cache of Slots sequences of up to MaxLen tokens and
// generates completions of prompts through it, admitting a waiting prompt
// into a slot as soon as a completion frees it.
type Generator struct {
	m             *Model
	slots, maxLen int
	maxRows       int // tokens per step: every slot's next token and a prompt chunk
	kc, vc        []gpu.Tensor

	x, norm, qkv, qR, kR, attn, gu, h gpu.Tensor
	sel, rstd, logits                 gpu.Tensor
	host                              []float32

	// Weights laid out once per Generate call for the products of every
	// step (on a device that packs, when the slots make products it
	// packs): each layer's wqkv, wo, wgu, wd, then the head. fresh says
	// which hold this call's weights; a call starts with none, since the
	// weights may have been trained in place since the last.
	packer gpu.WeightPacker
	packs  []gpu.PackedWeight
	fresh  []bool

	copies int // prompts copied from another slot's cache (for the tests)
}

// prefillChunk is the most prompt tokens one step takes (a variable for
// the tests).
var prefillChunk = 256

// NewGenerator makes a generator of slots sequences of up to maxLen tokens
// (prompt and completion), refusing one whose memory estimate exceeds the
// model's limit or whose length exceeds the model's context.
func (m *Model) NewGenerator(slots, maxLen int) (*Generator, error) {
	if slots < 1 || maxLen < 2 {
		return nil, fmt.Errorf("a generator needs at least one slot of two tokens")
	}
	if maxLen > m.Config.MaxPositions {
		return nil, fmt.Errorf("%d tokens is longer than the model's context of %d", maxLen, m.Config.MaxPositions)
	}
	rows := slots + prefillChunk
	packer, packs := m.Dev.(gpu.WeightPacker)
	packs = packs && packer.PacksRows(slots)
	if packs && !m.fits(GeneratorBytes(m.Config, slots, maxLen, rows, true)) {
		packs = false // the packs are a speed-up, not worth refusing for
	}
	if err := m.checkMemory(GeneratorBytes(m.Config, slots, maxLen, rows, packs),
		fmt.Sprintf("a generator of %d sequences of %d tokens", slots, maxLen), "generate fewer sequences at once or shorter ones"); err != nil {
		return nil, err
	}
	d, dev := dimsOf(m.Config), m.Dev
	g := &Generator{m: m, slots: slots, maxLen: maxLen, maxRows: rows}
	if packs {
		n := 4*m.Config.Layers + 1
		g.packer, g.packs, g.fresh = packer, make([]gpu.PackedWeight, n), make([]bool, n)
	}
	for l := 0; l < m.Config.Layers; l++ {
		g.kc = append(g.kc, dev.Alloc(slots*d.kv, maxLen))
		g.vc = append(g.vc, dev.Alloc(slots*maxLen, d.kv))
	}
	g.x, g.norm, g.qkv = dev.Alloc(rows, d.h), dev.Alloc(rows, d.h), dev.Alloc(rows, d.qkv)
	g.qR, g.kR, g.attn = dev.Alloc(rows, d.heads), dev.Alloc(rows, d.kvHeads), dev.Alloc(rows, d.q)
	g.gu, g.h = dev.Alloc(rows, 2*d.inter), dev.Alloc(rows, d.inter)
	g.sel, g.rstd, g.logits = dev.Alloc(rows, d.h), dev.Alloc(rows, 1), dev.Alloc(slots, d.vocab)
	return g, nil
}

// step runs new tokens (ids, each in slot[i] at pos[i]) through the model,
// filling the cache, and returns the logits of rows want (host memory,
// len(want)×V, valid until the next step).
func (g *Generator) step(ids, slot, pos []int32, want []int32) []float32 {
	m, ops, c := g.m, g.m.ops, g.m.Config
	d := dimsOf(c)
	n := len(ids)
	eps := float32(c.RMSNormEps)
	cos, sin := m.rope(maxPos(pos) + 1)
	x, norm, qkv := first(g.x, n), first(g.norm, n), first(g.qkv, n)
	ops.Embed(x, m.w.embed, ids, c.Tied)
	scale := float32(1 / math.Sqrt(float64(d.hd)))
	for l, w := range m.w.layers {
		ops.RMSNorm(gpu.NormArgs{X: x, Y: norm, W: w.ln1, RStd: first(g.rstd, n), Groups: 1, Width: d.h, Eps: eps})
		g.linear(qkv, norm, w.wqkv, 4*l, 0)
		if c.QKVBias {
			m.Dev.BiasAct(qkv, w.bqkv, gpu.Identity)
		}
		if c.QKNorm {
			ops.RMSNorm(gpu.NormArgs{X: qkv, Y: qkv, W: w.qnorm, RStd: first(g.qR, n), Groups: d.heads, Width: d.hd, Eps: eps})
			ops.RMSNorm(gpu.NormArgs{X: qkv, Y: qkv, W: w.knorm, RStd: first(g.kR, n), Col: d.q, Groups: d.kvHeads, Width: d.hd, Eps: eps})
		}
		ops.Rope(gpu.RopeArgs{X: qkv, Heads: d.heads, HeadDim: d.hd, Pos: pos, Cos: cos, Sin: sin})
		ops.Rope(gpu.RopeArgs{X: qkv, Col: d.q, Heads: d.kvHeads, HeadDim: d.hd, Pos: pos, Cos: cos, Sin: sin})
		attn := first(g.attn, n)
		ops.CacheAttention(gpu.CacheArgs{QKV: qkv, Out: attn, KCache: g.kc[l], VCache: g.vc[l], Slot: slot, Pos: pos, MaxLen: g.maxLen,
			Heads: d.heads, KVHeads: d.kvHeads, HeadDim: d.hd, Scale: scale})
		g.linear(x, attn, w.wo, 4*l+1, 1)
		if c.OBias {
			m.Dev.BiasAct(x, w.bo, gpu.Identity)
		}
		ops.RMSNorm(gpu.NormArgs{X: x, Y: norm, W: w.ln2, RStd: first(g.rstd, n), Groups: 1, Width: d.h, Eps: eps})
		gu, h := first(g.gu, n), first(g.h, n)
		g.linear(gu, norm, w.wgu, 4*l+2, 0)
		if c.MLPBias {
			m.Dev.BiasAct(gu, w.bgu, gpu.Identity)
		}
		ops.SwiGLU(h, gu)
		g.linear(x, h, w.wd, 4*l+3, 1)
		if c.MLPBias {
			m.Dev.BiasAct(x, w.bd, gpu.Identity)
		}
	}
	k := len(want)
	sel := first(g.sel, k)
	m.Dev.GatherRows(sel, x, want)
	ops.RMSNorm(gpu.NormArgs{X: sel, Y: sel, W: m.w.normF, RStd: first(g.rstd, k), Groups: 1, Width: d.h, Eps: eps})
	logits := first(g.logits, k)
	g.linear(logits, sel, m.w.head, 4*len(m.w.layers), 0)
	if hm, ok := m.Dev.(interface{ Data(gpu.Tensor) []float32 }); ok {
		return hm.Data(logits) // the CPU: read in place
	}
	g.host = grow(g.host, k*d.vocab)
	m.Dev.Download(g.host, logits)
	return g.host
}

// linear is ops.Linear(c, a, b, beta) for weight b, the packs' i-th:
// from the pack where the device packs products of a's rows, packing b
// on its first such product of the call.
func (g *Generator) linear(c, a, b gpu.Tensor, i int, beta float32) {
	if g.packer == nil || !g.packer.PacksRows(a.Rows) {
		g.m.ops.Linear(c, a, b, beta)
		return
	}
	if !g.fresh[i] {
		g.packer.PackWeight(&g.packs[i], b)
		g.fresh[i] = true
	}
	g.packer.LinearPacked(c, a, &g.packs[i], beta)
}

// seqState is a prompt being completed in a slot.
type seqState struct {
	index  int // the prompt's
	slot   int32
	prompt []int32
	fed    int  // prompt tokens fed (in the cache once the step ran)
	ready  bool // the whole prompt is in the cache (a donor for copies)
	out    Completion
	rng    *rand.Rand
}

// Generate completes every prompt, at most Slots at a time. The model's
// weights must not change during the call; between calls they may (the
// generator lays them out again in each).
func (g *Generator) Generate(prompts [][]int32, opt SampleOptions) ([]Completion, error) {
	if err := g.checkRequest(prompts, opt); err != nil {
		return nil, err
	}
	clear(g.fresh) // the weights may have changed since the last call
	out := make([]Completion, len(prompts))
	var free []int32
	for s := g.slots - 1; s >= 0; s-- {
		free = append(free, int32(s))
	}
	next := 0
	var active []*seqState
	var ids, slot, pos, want []int32
	var wantSeq []*seqState
	sampler := newSampler(g.m.Config.VocabSize)
	for next < len(prompts) || len(active) > 0 {
		for len(free) > 0 && next < len(prompts) {
			seed := opt.Seed + uint64(next)
			if opt.Seeds != nil {
				seed = opt.Seeds[next]
			}
			s := &seqState{index: next, slot: free[len(free)-1], prompt: prompts[next], rng: rand.New(rand.NewPCG(seed, 0x73616d706c65))} // "sample"
			free = free[:len(free)-1]
			active = append(active, s)
			next++
		}
		ids, slot, pos, want, wantSeq = ids[:0], slot[:0], pos[:0], want[:0], wantSeq[:0]
		budget := prefillChunk
		for _, s := range active {
			if s.fed == len(s.prompt) { // decoding: the last sampled token goes in
				ids, slot, pos = append(ids, s.out.Tokens[len(s.out.Tokens)-1]), append(slot, s.slot), append(pos, int32(len(s.prompt)+len(s.out.Tokens)-1))
				want, wantSeq = append(want, int32(len(ids)-1)), append(wantSeq, s)
				continue
			}
			if s.fed == 0 && len(s.prompt) > 1 {
				if d := donor(active, s); d != nil {
					if !d.ready {
						continue // d's prefill is under way: copy it next step
					}
					g.copyPrompt(d.slot, s.slot, len(s.prompt)-1)
					s.fed = len(s.prompt) - 1
				}
			}
			take := min(budget, len(s.prompt)-s.fed)
			if take == 0 {
				continue
			}
			for i := s.fed; i < s.fed+take; i++ {
				ids, slot, pos = append(ids, s.prompt[i]), append(slot, s.slot), append(pos, int32(i))
			}
			s.fed += take
			budget -= take
			if s.fed == len(s.prompt) {
				want, wantSeq = append(want, int32(len(ids)-1)), append(wantSeq, s)
			}
		}
		if len(ids) == 0 { // cannot happen: a waiting prompt's donor is fed
			return nil, fmt.Errorf("generation stalled with %d sequences waiting", len(active))
		}
		logits := g.step(ids, slot, pos, want)
		for _, s := range active {
			s.ready = s.fed == len(s.prompt)
		}
		v := g.m.Config.VocabSize
		toks, lps := sampler.rows(logits, len(want), v, &opt, func(i int) *rand.Rand { return wantSeq[i].rng })
		for i, s := range wantSeq {
			s.out.Tokens, s.out.LogProbs = append(s.out.Tokens, toks[i]), append(s.out.LogProbs, lps[i])
			if opt.OnToken != nil {
				opt.OnToken(s.index, toks[i], lps[i])
			}
			switch {
			case slices.Contains(opt.StopIDs, toks[i]) || opt.Stop != nil && opt.Stop(s.index, s.out.Tokens):
				s.out.Finish = FinishStop
			case len(s.out.Tokens) >= opt.MaxNewTokens || len(s.prompt)+len(s.out.Tokens) >= g.maxLen:
				s.out.Finish = FinishLength
			}
		}
		kept := active[:0]
		for _, s := range active {
			if s.out.Finish == "" {
				kept = append(kept, s)
				continue
			}
			out[s.index] = s.out
			free = append(free, s.slot)
		}
		active = kept
	}
	return out, nil
}

// donor is an active sequence other than s with s's prompt whose prefill
// has begun, ready ones first, or nil: several completions of one prompt
// (an RL group) then prefill it once. The copies' sequences feed only the
// prompt's last token themselves (its logits are their first draw); every
// row's arithmetic is the same whatever else a step holds, so a copied
// prompt gives the bits its own prefill would.
func donor(active []*seqState, s *seqState) *seqState {
	var found *seqState
	for _, d := range active {
		if d == s || d.fed == 0 || !slices.Equal(d.prompt, s.prompt) {
			continue
		}
		if d.ready {
			return d
		}
		found = d
	}
	return found
}

// copyPrompt copies the first n positions of slot from's caches into slot
// to's: every layer's values, and its keys with the rest of the slot's
// columns (one contiguous block; positions past n are written before
// they are read, as in any reused slot).
func (g *Generator) copyPrompt(from, to int32, n int) {
	kv, ml, dev := dimsOf(g.m.Config).kv, g.maxLen, g.m.Dev
	f, t := int(from), int(to)
	for l := range g.kc {
		dev.Copy(g.kc[l].RowRange(t*kv, (t+1)*kv), g.kc[l].RowRange(f*kv, (f+1)*kv))
		dev.Copy(g.vc[l].RowRange(t*ml, t*ml+n), g.vc[l].RowRange(f*ml, f*ml+n))
	}
	g.copies++
}

func (g *Generator) checkRequest(prompts [][]int32, opt SampleOptions) error {
	v := g.m.Config.VocabSize
	switch {
	case opt.MaxNewTokens < 1:
		return fmt.Errorf("max new tokens must be at least 1, not %d", opt.MaxNewTokens)
	case opt.Temperature < 0 || math.IsNaN(opt.Temperature) || math.IsInf(opt.Temperature, 0):
		return fmt.Errorf("temperature must be 0 (greedy) or positive, not %v", opt.Temperature)
	case opt.TopK < 0:
		return fmt.Errorf("top-k must be 0 (off) or positive, not %d", opt.TopK)
	case !(opt.TopP >= 0 && opt.TopP <= 1):
		return fmt.Errorf("top-p must lie in [0, 1] (0 or 1: off), not %v", opt.TopP)
	case opt.Seeds != nil && len(opt.Seeds) != len(prompts):
		return fmt.Errorf("%d seeds for %d prompts", len(opt.Seeds), len(prompts))
	}
	for _, id := range opt.StopIDs {
		if id < 0 || int(id) >= v {
			return fmt.Errorf("stop id %d is outside the vocabulary of %d", id, v)
		}
	}
	for i, p := range prompts {
		if len(p) == 0 {
			return fmt.Errorf("prompt %d is empty", i)
		}
		if len(p) >= g.maxLen {
			return fmt.Errorf("prompt %d has %d tokens, too long for a context of %d (prompt and completion)", i, len(p), g.maxLen)
		}
		for j, id := range p {
			if id < 0 || int(id) >= v {
				return fmt.Errorf("prompt %d, token %d: id %d is outside the vocabulary of %d", i, j, id, v)
			}
		}
	}
	return nil
}

// sampler draws tokens from rows of logits, its rows split across
// goroutines when there are many (each row's draw uses only its own
// generator, so the result is the same).
type sampler struct {
	scratch []*sampleScratch
	toks    []int32
	lps     []float32
}

type sampleScratch struct {
	w, sel []float32
	cand   []int32
}

func newSampler(vocab int) *sampler {
	s := &sampler{}
	for i := 0; i < 2; i++ {
		s.scratch = append(s.scratch, &sampleScratch{w: make([]float32, vocab)})
	}
	return s
}

func (s *sampler) rows(logits []float32, k, v int, opt *SampleOptions, rng func(int) *rand.Rand) ([]int32, []float32) {
	s.toks, s.lps = grow32(s.toks, k), growF(s.lps, k)
	parts := 1
	if k >= 4 {
		parts = len(s.scratch)
	}
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := k * p / parts; i < k*(p+1)/parts; i++ {
				s.toks[i], s.lps[i] = sampleRow(logits[i*v:(i+1)*v], opt, rng(i), s.scratch[p])
			}
		}(p)
	}
	wg.Wait()
	return s.toks, s.lps
}

func grow32(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

func growF(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// sampleRow draws a token from one row of logits and returns it with its
// log-probability under softmax(z).
func sampleRow(z []float32, opt *SampleOptions, r *rand.Rand, sc *sampleScratch) (int32, float32) {
	mx, arg := z[0], 0
	for j, v := range z {
		if v > mx {
			mx, arg = v, j
		}
	}
	sc.w = growF(sc.w, len(z))
	w := sc.w
	lse := mx + float32(math.Log(float64(gpu.ExpSum(w, z, 1, mx))))
	logp := func(j int) float32 { return z[j] - lse }
	if opt.Temperature == 0 || opt.TopK == 1 {
		return int32(arg), logp(arg)
	}
	if opt.Temperature != 1 {
		inv := float32(1 / opt.Temperature)
		gpu.ExpSum(w, z, inv, mx*inv)
	}
	// Candidates: every token, or those at least as likely as the k-th.
	thr := float32(math.Inf(-1))
	if opt.TopK > 0 && opt.TopK < len(z) {
		sc.sel = growF(sc.sel, len(z))
		copy(sc.sel, z)
		thr = kthLargest(sc.sel, opt.TopK)
	}
	cand := sc.cand[:0]
	var total float64
	for j, v := range z {
		if v >= thr && w[j] > 0 {
			cand = append(cand, int32(j))
			total += float64(w[j])
		}
	}
	sc.cand = cand
	if len(cand) == 0 { // every weight underflowed: the most likely token
		return int32(arg), logp(arg)
	}
	if opt.TopP > 0 && opt.TopP < 1 {
		cand, total = nucleus(cand, w, total, opt.TopP)
	}
	u := r.Float64() * total
	for _, j := range cand {
		u -= float64(w[j])
		if u < 0 {
			return j, logp(int(j))
		}
	}
	last := cand[len(cand)-1] // rounding left u a hair above zero
	return last, logp(int(last))
}

// kthLargest is the k-th largest value of vals (which it reorders):
// quickselect, linear on average where sorting a 150,000-token vocabulary
// for every draw would not be.
func kthLargest(vals []float32, k int) float32 {
	lo, hi, want := 0, len(vals)-1, k-1
	for lo < hi {
		pivot := vals[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for vals[i] > pivot {
				i++
			}
			for vals[j] < pivot {
				j--
			}
			if i <= j {
				vals[i], vals[j] = vals[j], vals[i]
				i++
				j--
			}
		}
		switch {
		case want <= j:
			hi = j
		case want >= i:
			lo = i
		default:
			return vals[want]
		}
	}
	return vals[want]
}

// nucleus keeps the most likely candidates until their weight reaches p
// of total (at least one), sorting only the likeliest ones where that
// suffices: those of weight ≥ cut, for a cut lowered until they hold p.
func nucleus(cand []int32, w []float32, total, p float64) ([]int32, float64) {
	var maxW float32
	for _, j := range cand {
		maxW = max(maxW, w[j])
	}
	var top []int32
	for cut := maxW * 1e-3; ; cut *= 1e-3 {
		top = top[:0]
		var mass float64
		for _, j := range cand {
			if w[j] >= cut {
				top = append(top, j)
				mass += float64(w[j])
			}
		}
		if mass >= p*total || len(top) == len(cand) || cut == 0 {
			break
		}
	}
	slices.SortStableFunc(top, func(a, b int32) int {
		switch {
		case w[a] > w[b]:
			return -1
		case w[a] < w[b]:
			return 1
		}
		return int(a - b)
	})
	var kept float64
	for i, j := range top {
		kept += float64(w[j])
		if kept >= p*total {
			return top[:i+1], kept
		}
	}
	return top, kept
}
