package nprand

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
)

// SeedSequence constants (NumPy's bit_generator.pyx, after O'Neill's
// seed_seq design).
const (
	ssPoolSize = 4
	ssInitA    = 0x43b0d7e5
	ssMultA    = 0x931e8875
	ssInitB    = 0x8b51f9dd
	ssMultB    = 0x58f38ded
	ssMixL     = 0xca01f9dd
	ssMixR     = 0x4973f715
	ssXShift   = 16
)

// SeedSequence is numpy.random.SeedSequence(entropy) for a non-negative
// integer entropy and no spawn key: the entropy's 32-bit words hashed into
// a pool of four words.
type SeedSequence struct {
	pool [ssPoolSize]uint32
}

// NewSeedSequence mixes entropy into the pool as SeedSequence(entropy) does.
func NewSeedSequence(entropy uint64) SeedSequence {
	// The integer as little-endian 32-bit words; 0 is the one word 0.
	words := []uint32{uint32(entropy)}
	if hi := uint32(entropy >> 32); hi != 0 {
		words = append(words, hi)
	}
	var s SeedSequence
	hashConst := uint32(ssInitA)
	hashmix := func(v uint32) uint32 {
		v ^= hashConst
		hashConst *= ssMultA
		v *= hashConst
		return v ^ v>>ssXShift
	}
	mix := func(x, y uint32) uint32 {
		r := ssMixL*x - ssMixR*y
		return r ^ r>>ssXShift
	}
	for i := range s.pool {
		var w uint32
		if i < len(words) {
			w = words[i]
		}
		s.pool[i] = hashmix(w)
	}
	for src := range s.pool {
		for dst := range s.pool {
			if src != dst {
				s.pool[dst] = mix(s.pool[dst], hashmix(s.pool[src]))
			}
		}
	}
	// Entropy beyond the pool size (more than four words) cannot occur for
	// a 64-bit integer.
	return s
}

// GenerateState32 is generate_state(n, np.uint32).
func (s SeedSequence) GenerateState32(n int) []uint32 {
	out := make([]uint32, n)
	hashConst := uint32(ssInitB)
	for i := range out {
		v := s.pool[i%ssPoolSize]
		v ^= hashConst
		hashConst *= ssMultB
		v *= hashConst
		out[i] = v ^ v>>ssXShift
	}
	return out
}

// GenerateState64 is generate_state(n, np.uint64): 2n 32-bit words read
// pairwise as little-endian 64-bit words.
func (s SeedSequence) GenerateState64(n int) []uint64 {
	w := s.GenerateState32(2 * n)
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(w[2*i]) | uint64(w[2*i+1])<<32
	}
	return out
}

// PCG64's 128-bit multiplier.
const (
	pcgMulHi = 2549297995355413924
	pcgMulLo = 4865540595714422341
)

// PCG64 is NumPy's PCG64 bit generator: a 128-bit linear congruential
// generator with the XSL-RR output function.
type PCG64 struct {
	stateHi, stateLo uint64
	incHi, incLo     uint64
}

// NewPCG64 returns PCG64(SeedSequence(seed)).
func NewPCG64(seed uint64) *PCG64 {
	p := &PCG64{}
	p.Seed(seed)
	return p
}

// Seed re-seeds p as PCG64(SeedSequence(seed)): four 64-bit words from
// the sequence give the initial state (first two) and the stream (last two).
func (p *PCG64) Seed(seed uint64) {
	v := NewSeedSequence(seed).GenerateState64(4)
	// pcg64_srandom_r: state 0, inc = stream<<1 | 1, step, add the seed, step.
	p.incHi = v[2]<<1 | v[3]>>63
	p.incLo = v[3]<<1 | 1
	p.stateHi, p.stateLo = 0, 0
	p.step()
	var c uint64
	p.stateLo, c = bits.Add64(p.stateLo, v[1], 0)
	p.stateHi, _ = bits.Add64(p.stateHi, v[0], c)
	p.step()
}

// step advances the LCG: state = state·mul + inc (mod 2^128).
func (p *PCG64) step() {
	hi, lo := bits.Mul64(p.stateLo, pcgMulLo)
	hi += p.stateHi*pcgMulLo + p.stateLo*pcgMulHi
	var c uint64
	p.stateLo, c = bits.Add64(lo, p.incLo, 0)
	p.stateHi, _ = bits.Add64(hi, p.incHi, c)
}

// Uint64 advances and returns the XSL-RR output of the new state.
func (p *PCG64) Uint64() uint64 {
	p.step()
	return bits.RotateLeft64(p.stateHi^p.stateLo, -int(p.stateHi>>58))
}

// Generator is numpy.random.Generator over PCG64, for the draws the worlds
// here make. MarshalBinary saves the PCG64 state only, not the half word
// Uint32 keeps, so a stream that draws Integers is not snapshotted whole.
type Generator struct {
	PCG64
	hasUint32 bool
	uinteger  uint32
}

// NewGenerator returns Generator(PCG64(SeedSequence(seed))), which is what
// Gymnasium's seeding.np_random(seed) builds.
func NewGenerator(seed uint64) *Generator {
	g := &Generator{}
	g.Seed(seed)
	return g
}

// Random is random(): a double in [0, 1) from the top 53 bits of one word.
func (g *Generator) Random() float64 {
	return float64(g.Uint64()>>11) * (1.0 / 9007199254740992.0)
}

// Uniform is uniform(low, high) for one value: low + (high−low)·random(),
// rounded after the product as NumPy's C code is (no fused multiply-add).
// uniform(low, high, size=(n,)) is n successive calls, as are array bounds
// (each element with its own low and high).
func (g *Generator) Uniform(low, high float64) float64 {
	return low + float64((high-low)*g.Random())
}

// MarshalBinary saves the generator's state and stream (32 bytes).
func (p *PCG64) MarshalBinary() ([]byte, error) {
	b := make([]byte, 32)
	for i, w := range []uint64{p.stateHi, p.stateLo, p.incHi, p.incLo} {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return b, nil
}

// UnmarshalBinary restores a state saved by MarshalBinary.
func (p *PCG64) UnmarshalBinary(b []byte) error {
	if len(b) != 32 {
		return fmt.Errorf("PCG64 state must be 32 bytes, got %d (was it saved by another kind of stream?)", len(b))
	}
	if binary.LittleEndian.Uint64(b[24:])&1 == 0 {
		return fmt.Errorf("PCG64 state has an even increment, which no seeding makes: the saved state is corrupt")
	}
	p.stateHi, p.stateLo = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	p.incHi, p.incLo = binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])
	return nil
}

// Uint32 is PCG64's next_uint32: the low half of a fresh 64-bit word, the
// high half kept for the next call. Generator.integers draws its bounded
// 32-bit values this way; random() does not touch the kept half.
func (g *Generator) Uint32() uint32 {
	if g.hasUint32 {
		g.hasUint32 = false
		return g.uinteger
	}
	w := g.Uint64()
	g.hasUint32, g.uinteger = true, uint32(w>>32)
	return uint32(w)
}

// Integers is integers(low, high) for one int64: uniform in [low, high),
// drawn by Lemire's multiply-and-reject (NumPy's default for Generator):
// from 32-bit draws when high−1−low fits in 32 bits, else from 64-bit
// ones. A range of one value draws nothing. It panics when high <= low,
// where NumPy raises ValueError.
func (g *Generator) Integers(low, high int64) int64 {
	if high <= low {
		panic("nprand: Integers needs low < high")
	}
	rng := uint64(high) - 1 - uint64(low)
	switch {
	case rng == 0:
		return low
	case rng == math.MaxUint32:
		return low + int64(g.Uint32())
	case rng < math.MaxUint32:
		return low + int64(g.lemire32(uint32(rng)))
	case rng == math.MaxUint64:
		return low + int64(g.Uint64())
	}
	return low + int64(g.lemire64(rng))
}

// lemire32 is buffered_bounded_lemire_uint32: a value in [0, rng].
func (g *Generator) lemire32(rng uint32) uint32 {
	excl := uint64(rng) + 1
	m := uint64(g.Uint32()) * excl
	if leftover := uint32(m); uint64(leftover) < excl {
		threshold := uint32((math.MaxUint32 - uint64(rng)) % excl)
		for leftover < threshold {
			m = uint64(g.Uint32()) * excl
			leftover = uint32(m)
		}
	}
	return uint32(m >> 32)
}

// lemire64 is bounded_lemire_uint64: a value in [0, rng].
func (g *Generator) lemire64(rng uint64) uint64 {
	excl := rng + 1
	hi, lo := bits.Mul64(g.Uint64(), excl)
	if lo < excl {
		threshold := (math.MaxUint64 - rng) % excl
		for lo < threshold {
			hi, lo = bits.Mul64(g.Uint64(), excl)
		}
	}
	return hi
}

// ChoiceP is choice(len(p), size=n, p=p) with replacement: n indices drawn
// by inverting the cumulative sums of p (normalised by their last value)
// at n successive random() values, as NumPy does (searchsorted, side
// "right"). p is checked as NumPy checks it: no NaN, no negative entry, a
// (Kahan) sum within √ε of 1; the error says which check failed.
func (g *Generator) ChoiceP(p []float64, n int) ([]int, error) {
	if len(p) == 0 {
		return nil, errors.New("a cannot be empty unless no samples are taken")
	}
	var sum, c float64 // kahan_sum
	for _, x := range p {
		y := x - c
		t := sum + y
		c = (t - sum) - y
		sum = t
	}
	switch {
	case math.IsNaN(sum):
		return nil, errors.New("probabilities contain NaN")
	case slices.ContainsFunc(p, func(x float64) bool { return x < 0 }):
		return nil, errors.New("probabilities are not non-negative")
	case math.Abs(sum-1) > math.Sqrt(0x1p-52):
		return nil, errors.New("probabilities do not sum to 1")
	}
	cdf := make([]float64, len(p))
	acc := 0.0
	for i, x := range p {
		acc += x
		cdf[i] = acc
	}
	last := cdf[len(cdf)-1]
	for i := range cdf {
		cdf[i] /= last
	}
	out := make([]int, n)
	for i := range out {
		u := g.Random()
		// The number of cdf entries <= u.
		out[i] = sort.Search(len(cdf), func(k int) bool { return cdf[k] > u })
	}
	return out, nil
}

// Seed re-seeds g as Generator(PCG64(SeedSequence(seed))), dropping any
// half word kept by Uint32.
func (g *Generator) Seed(seed uint64) {
	g.PCG64.Seed(seed)
	g.hasUint32, g.uinteger = false, 0
}
