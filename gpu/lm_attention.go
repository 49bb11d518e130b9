package gpu

import (
	"math"
	"sync"
)

// attnBlock is the number of query rows whose scores against every key
// they may see are held at once: 32 rows of a 2,048-token sequence are
// 256 KB per core, where the whole score matrix of one head would be
// 16 MB. A block's products run to its last row's keys, so the half of
// the diagonal block above the diagonal is wasted work: 32 rather than 64
// halves that waste (a 256-token sequence computes 1.12 rather than 1.25
// times the causal scores), 4–10 % faster (BenchmarkAttention).
const attnBlock = 32

// attnScratch is one part's buffers: transposed keys and values of the
// sequence and group in hand, and a block of scores and of their
// gradients.
type attnScratch struct {
	kt, vt, s, dp, drow []float32
}

// attnUnits runs fn over every (sequence, key/value head) pair, the units
// taken in turn by the caller and the device's helpers, each with scratch
// of its own. A unit owns its keys' and values' gradients, so no two write
// the same values.
func (d *CPU) attnUnits(a AttentionArgs, fn func(s *attnScratch, b, g int)) {
	units := a.Batch * a.KVHeads
	run := func(u int) {
		s := attnScratchPool.Get().(*attnScratch)
		fn(s, u/a.KVHeads, u%a.KVHeads)
		attnScratchPool.Put(s)
	}
	if a.Batch*a.Seq*a.Seq*a.Heads*a.HeadDim < lmMinParallel {
		for u := 0; u < units; u++ {
			run(u)
		}
		return
	}
	d.stealer().run(units, run)
}

// attnScratchPool keeps the parts' scratch between calls (a device's
// parts run one op at a time, but devices are many: the pool serves all).
var attnScratchPool = sync.Pool{New: func() any { return new(attnScratch) }}

// roundUp16 rounds n up to a multiple of 16 (the kernels' column strip).
func roundUp16(n int) int { return (n + 15) &^ 15 }

// transposeHead writes the seq×hd block of rows starting at src (rows ld
// apart) into dst as hd×ldt, zero beyond seq.
func transposeHead(dst []float32, ldt int, src []float32, ld, seq, hd int) []float32 {
	dst = grow(dst, hd*ldt)
	transposeRows(dst, ldt, src, ld, seq, hd)
	for j := 0; j < hd; j++ {
		clear(dst[j*ldt+seq : (j+1)*ldt])
	}
	return dst
}

// Attention implements TransformerOps.
func (d *CPU) Attention(a AttentionArgs) {
	a.check(false)
	qkv, out, lse := d.data(a.QKV), d.data(a.Out), d.data(a.LSE)
	T, hd, w, ow := a.Seq, a.HeadDim, a.QKV.Cols, a.Out.Cols
	group := a.Heads / a.KVHeads
	tp := roundUp16(T)
	d.attnUnits(a, func(s *attnScratch, b, g int) {
		base := b * T
		kcol, vcol := (a.Heads+g)*hd, (a.Heads+a.KVHeads+g)*hd
		s.kt = transposeHead(s.kt, tp, qkv[base*w+kcol:], w, T, hd)
		s.s, s.drow = grow(s.s, attnBlock*tp), grow(s.drow, attnBlock)
		for h := g * group; h < (g+1)*group; h++ {
			for i0 := 0; i0 < T; i0 += attnBlock {
				i1 := min(i0+attnBlock, T)
				m, kend := i1-i0, i1
				sp := roundUp16(kend)
				sgemm(s.s, sp, qkv[(base+i0)*w+h*hd:], w, false, s.kt, tp, m, sp, hd, false)
				for r := 0; r < m; r++ {
					i := i0 + r
					p := s.s[r*sp : r*sp+kend]
					if a.Mask != nil && a.Mask[base+i] == 0 {
						clear(p)
						lse[(base+i)*a.Heads+h], s.drow[r] = 0, 0
						continue
					}
					lse[(base+i)*a.Heads+h], s.drow[r] = softmaxRow(p, a.Mask, base, a.Scale, i)
				}
				o := out[(base+i0)*ow+h*hd:]
				sgemm(o, ow, s.s, sp, false, qkv[base*w+vcol:], w, m, hd, kend, false)
				for r := 0; r < m; r++ {
					scaleRow(o[r*ow:r*ow+hd], s.drow[r])
				}
			}
		}
	})
}

func scaleRow(x []float32, c float32) {
	for j := range x {
		x[j] *= c
	}
}

// maskScores sets to −Inf, whose exponential is 0, the scores p[0…i] of
// the keys that mask (from base; nil: none) marks as padding.
func maskScores(p []float32, mask []int32, base, i int) {
	if mask == nil {
		return
	}
	for j, m := range mask[base : base+i+1] {
		if m == 0 {
			p[j] = float32(math.Inf(-1))
		}
	}
}

// softmaxRow turns the scores p[0…i] of query i into unnormalised
// probabilities e^(score·scale − max) in place (zero where mask, from
// base, is 0, and beyond i), and returns the log-sum-exp of the scaled
// scores it kept and 1/Σ, the normalisation left to the caller (cheaper
// on a row of the output than on the scores).
func softmaxRow(p []float32, mask []int32, base int, scale float32, i int) (lse, inv float32) {
	maskScores(p, mask, base, i)
	mx := maxScaled(p[:i+1], scale)
	sum := ExpSum(p[:i+1], p[:i+1], scale, mx)
	clear(p[i+1:])
	return mx + float32(math.Log(float64(sum))), 1 / sum
}

// AttentionGrad implements TransformerOps: the scores of each block of
// queries are computed again from the saved log-sum-exps (as
// FlashAttention's backward does) rather than kept from the forward.
func (d *CPU) AttentionGrad(a AttentionArgs) {
	a.check(true)
	qkv, out, lse, dout, dqkv := d.data(a.QKV), d.data(a.Out), d.data(a.LSE), d.data(a.DOut), d.data(a.DQKV)
	T, hd, w, ow := a.Seq, a.HeadDim, a.QKV.Cols, a.Out.Cols
	group := a.Heads / a.KVHeads
	tp := roundUp16(T)
	d.attnUnits(a, func(s *attnScratch, b, g int) {
		base := b * T
		kcol, vcol := (a.Heads+g)*hd, (a.Heads+a.KVHeads+g)*hd
		s.kt = transposeHead(s.kt, tp, qkv[base*w+kcol:], w, T, hd)
		s.vt = transposeHead(s.vt, tp, qkv[base*w+vcol:], w, T, hd)
		s.s, s.dp, s.drow = grow(s.s, attnBlock*tp), grow(s.dp, attnBlock*tp), grow(s.drow, attnBlock)
		for i := 0; i < T; i++ { // this unit's key and value gradients accumulate below
			clear(dqkv[(base+i)*w+kcol : (base+i)*w+kcol+hd])
			clear(dqkv[(base+i)*w+vcol : (base+i)*w+vcol+hd])
		}
		for h := g * group; h < (g+1)*group; h++ {
			for i0 := 0; i0 < T; i0 += attnBlock {
				i1 := min(i0+attnBlock, T)
				m, kend := i1-i0, i1
				sp := roundUp16(kend)
				qb, dob := qkv[(base+i0)*w+h*hd:], dout[(base+i0)*ow+h*hd:]
				sgemm(s.s, sp, qb, w, false, s.kt, tp, m, sp, hd, false)
				sgemm(s.dp, sp, dob, ow, false, s.vt, tp, m, sp, hd, false)
				for r := 0; r < m; r++ {
					i := i0 + r
					p, dp := s.s[r*sp:r*sp+sp], s.dp[r*sp:r*sp+sp]
					if a.Mask != nil && a.Mask[base+i] == 0 {
						clear(p)
						clear(dp)
						continue
					}
					l := lse[(base+i)*a.Heads+h]
					o, do := out[(base+i)*ow+h*hd:(base+i)*ow+(h+1)*hd], dout[(base+i)*ow+h*hd:(base+i)*ow+(h+1)*hd]
					di := dot(do, o) // Σ_j p_j·dp_j, as rowsum(dO ⊙ O)
					maskScores(p, a.Mask, base, i)
					ExpSum(p[:i+1], p[:i+1], a.Scale, l)
					clear(p[i+1:])
					dpi := dp[:i+1]
					for j, pj := range p[:len(dpi)] {
						dpi[j] = pj * (dpi[j] - di) * a.Scale
					}
					clear(dp[i+1:])
				}
				// dQ = dS·K; dK += dSᵀ·Q; dV += Pᵀ·dO.
				sgemm(dqkv[(base+i0)*w+h*hd:], w, s.dp, sp, false, qkv[base*w+kcol:], w, m, hd, kend, false)
				sgemm(dqkv[base*w+kcol:], w, s.dp, sp, true, qb, w, kend, hd, m, true)
				sgemm(dqkv[base*w+vcol:], w, s.s, sp, true, dob, ow, kend, hd, m, true)
			}
		}
	})
}

// distinctSlots says whether no two of slot (each below n) are the same.
func distinctSlots(slot []int32, n int) bool {
	var small [8]uint64 // up to 512 slots without an allocation
	seen := small[:]
	if n > 64*len(small) {
		seen = make([]uint64, (n+63)/64)
	}
	for _, s := range slot {
		if seen[s/64]&(1<<(s%64)) != 0 {
			return false
		}
		seen[s/64] |= 1 << (s % 64)
	}
	return true
}

// CacheAttention implements TransformerOps. A new token's scores against
// its sequence's keys are one product of its group's query heads with the
// transposed key cache, and its output one product of the probabilities
// with the values.
func (d *CPU) CacheAttention(a CacheArgs) {
	a.check()
	qkv, out, kc, vc := d.data(a.QKV), d.data(a.Out), d.data(a.KCache), d.data(a.VCache)
	hd, w, ow, kvw, ml := a.HeadDim, a.QKV.Cols, a.Out.Cols, a.KVHeads*a.HeadDim, a.MaxLen
	n := a.QKV.Rows
	// store puts row i's key and value head g in the caches. A key's
	// components lie a cache row apart (a line each), so where every row
	// is its own sequence's (decoding) each unit stores its own head just
	// before its scores read those lines; rows of one sequence (a prompt)
	// read each other's keys, so they are all stored first.
	store := func(i, g int) {
		slot, pos := int(a.Slot[i]), int(a.Pos[i])
		k := qkv[i*w+(a.Heads+g)*hd : i*w+(a.Heads+g+1)*hd]
		kcol := kc[(slot*kvw+g*hd)*ml+pos:]
		for c, v := range k {
			kcol[c*ml] = v
		}
		copy(vc[(slot*ml+pos)*kvw+g*hd:(slot*ml+pos)*kvw+(g+1)*hd], qkv[i*w+(a.Heads+a.KVHeads+g)*hd:])
	}
	perUnit := distinctSlots(a.Slot, a.VCache.Rows/ml)
	if !perUnit {
		for i := 0; i < n; i++ {
			for g := 0; g < a.KVHeads; g++ {
				store(i, g)
			}
		}
	}
	group := a.Heads / a.KVHeads
	units := n * a.KVHeads
	var ctx int
	for _, p := range a.Pos {
		ctx += int(p) + 1
	}
	chunks := 1
	if ctx*a.Heads*hd >= lmMinParallel {
		chunks = min(units, 4*d.pool.parts())
	}
	d.stealer().run(chunks, func(chunk int) {
		s := attnScratchPool.Get().(*attnScratch)
		defer attnScratchPool.Put(s)
		u0, u1 := units*chunk/chunks, units*(chunk+1)/chunks
		for u := u0; u < u1; u++ {
			i, g := u/a.KVHeads, u%a.KVHeads
			slot, keys := int(a.Slot[i]), int(a.Pos[i])+1
			if perUnit {
				store(i, g)
			}
			kp := min(roundUp16(keys), ml) // whole strips of the kernels; the scores past keys are not read
			s.s, s.drow = grow(s.s, group*kp), grow(s.drow, group)
			q := qkv[i*w+g*group*hd:]
			sgemm(s.s, kp, q, hd, false, kc[(slot*kvw+g*hd)*ml:], ml, group, kp, hd, false)
			for r := 0; r < group; r++ {
				_, s.drow[r] = softmaxRow(s.s[r*kp:(r+1)*kp], nil, 0, a.Scale, keys-1)
			}
			o := out[i*ow+g*group*hd:]
			sgemm(o, hd, s.s, kp, false, vc[slot*ml*kvw+g*hd:], kvw, group, hd, keys, false)
			for r := 0; r < group; r++ {
				scaleRow(o[r*hd:(r+1)*hd], s.drow[r])
			}
		}
	})
}
