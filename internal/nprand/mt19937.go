package nprand

import (
	"encoding/binary"
	"fmt"
)

const (
	mtN         = 624
	mtM         = 397
	mtMatrixA   = 0x9908b0df
	mtUpperMask = 0x80000000
	mtLowerMask = 0x7fffffff
)

// RandomState is NumPy's legacy numpy.random.RandomState over MT19937. The
// zero value is not usable; build one with NewRandomState or
// NewRandomStateArray.
type RandomState struct {
	key [mtN]uint32
	pos int
}

// NewRandomState returns RandomState(seed) for an integer seed: NumPy seeds
// MT19937 from an integer with Matsumoto and Nishimura's init_genrand.
func NewRandomState(seed uint32) *RandomState {
	r := &RandomState{}
	r.Seed(seed)
	return r
}

// Seed re-seeds r as RandomState.seed(seed) does for an integer.
func (r *RandomState) Seed(seed uint32) {
	r.key[0] = seed
	for i := 1; i < mtN; i++ {
		prev := r.key[i-1]
		r.key[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	r.pos = mtN
}

// NewRandomStateArray returns RandomState(words) for a seed given as an
// array of 32-bit words (init_by_array), as NumPy seeds from a list.
func NewRandomStateArray(words []uint32) *RandomState {
	r := NewRandomState(19650218)
	n := len(words)
	i, j := 1, 0
	for k := max(mtN, n); k > 0; k-- {
		prev := r.key[i-1]
		r.key[i] = (r.key[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + words[j] + uint32(j)
		i++
		j++
		if i >= mtN {
			r.key[0] = r.key[mtN-1]
			i = 1
		}
		if j >= n {
			j = 0
		}
	}
	for k := mtN - 1; k > 0; k-- {
		prev := r.key[i-1]
		r.key[i] = (r.key[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= mtN {
			r.key[0] = r.key[mtN-1]
			i = 1
		}
	}
	r.key[0] = 0x80000000 // the first word is non-zero, as the reference makes sure
	r.pos = mtN
	return r
}

// regenerate refills the whole key (MT19937's "twist").
func (r *RandomState) regenerate() {
	mag := func(y uint32) uint32 { return (y & 1) * mtMatrixA }
	var i int
	for i = 0; i < mtN-mtM; i++ {
		y := (r.key[i] & mtUpperMask) | (r.key[i+1] & mtLowerMask)
		r.key[i] = r.key[i+mtM] ^ (y >> 1) ^ mag(y)
	}
	for ; i < mtN-1; i++ {
		y := (r.key[i] & mtUpperMask) | (r.key[i+1] & mtLowerMask)
		r.key[i] = r.key[i+mtM-mtN] ^ (y >> 1) ^ mag(y)
	}
	y := (r.key[mtN-1] & mtUpperMask) | (r.key[0] & mtLowerMask)
	r.key[mtN-1] = r.key[mtM-1] ^ (y >> 1) ^ mag(y)
	r.pos = 0
}

// Uint32 is the next raw 32-bit output (tempered).
func (r *RandomState) Uint32() uint32 {
	if r.pos == mtN {
		r.regenerate()
	}
	y := r.key[r.pos]
	r.pos++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// Uint64 is two 32-bit outputs, the first in the high half, as NumPy's
// MT19937 makes 64-bit words.
func (r *RandomState) Uint64() uint64 {
	hi := uint64(r.Uint32())
	return hi<<32 | uint64(r.Uint32())
}

// RandomSample is random_sample() (and rand()): a double in [0, 1) built
// from 27 + 26 bits of two outputs.
func (r *RandomState) RandomSample() float64 {
	a, b := r.Uint32()>>5, r.Uint32()>>6
	return (float64(a)*67108864.0 + float64(b)) / 9007199254740992.0
}

// Rand fills out with rand(len(out)): len(out) successive RandomSample values.
func (r *RandomState) Rand(out []float64) {
	for i := range out {
		out[i] = r.RandomSample()
	}
}

// RandInt is randint(low, high) for the default integer type: uniform in
// [low, high), drawn by NumPy's legacy masked rejection (the smallest
// all-ones mask covering high−1−low, redrawn while above it). A range of
// one value draws nothing. It panics when high <= low, where NumPy raises.
func (r *RandomState) RandInt(low, high int64) int64 {
	if high <= low {
		panic(fmt.Sprintf("nprand: RandInt(%d, %d): high must be above low", low, high))
	}
	return low + int64(r.bounded(uint64(high-1-low)))
}

// RandIntN fills out with randint(low, high, size=len(out)).
func (r *RandomState) RandIntN(low, high int64, out []int64) {
	for i := range out {
		out[i] = r.RandInt(low, high)
	}
}

// Choice is choice(n) (and choice(a) for a sequence of n items, returning
// the index): uniform without weights, which NumPy draws as randint(0, n).
func (r *RandomState) Choice(n int) int { return int(r.RandInt(0, int64(n))) }

// bounded draws a value in [0, rng] as random_bounded_uint64_fill does with
// use_masked: 32-bit draws when the range fits in 32 bits.
func (r *RandomState) bounded(rng uint64) uint64 {
	switch {
	case rng == 0:
		return 0
	case rng == 0xFFFFFFFF:
		return uint64(r.Uint32())
	case rng < 0xFFFFFFFF:
		mask := uint32(mask64(rng))
		for {
			if v := r.Uint32() & mask; uint64(v) <= rng {
				return uint64(v)
			}
		}
	case rng == ^uint64(0):
		return r.Uint64()
	}
	mask := mask64(rng)
	for {
		if v := r.Uint64() & mask; v <= rng {
			return v
		}
	}
}

// mask64 is the smallest 2^k−1 at or above x.
func mask64(x uint64) uint64 {
	x |= x >> 1
	x |= x >> 2
	x |= x >> 4
	x |= x >> 8
	x |= x >> 16
	x |= x >> 32
	return x
}

// MarshalBinary saves the stream's position (624 words and the index).
func (r *RandomState) MarshalBinary() ([]byte, error) {
	b := make([]byte, 4*mtN+4)
	for i, k := range r.key {
		binary.LittleEndian.PutUint32(b[4*i:], k)
	}
	binary.LittleEndian.PutUint32(b[4*mtN:], uint32(r.pos))
	return b, nil
}

// UnmarshalBinary restores a position saved by MarshalBinary.
func (r *RandomState) UnmarshalBinary(b []byte) error {
	if len(b) != 4*mtN+4 {
		return fmt.Errorf("MT19937 state must be %d bytes, got %d (was it saved by another kind of stream?)", 4*mtN+4, len(b))
	}
	pos := int(binary.LittleEndian.Uint32(b[4*mtN:]))
	if pos > mtN {
		return fmt.Errorf("MT19937 state has position %d, beyond %d: the saved state is corrupt", pos, mtN)
	}
	for i := range r.key {
		r.key[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	r.pos = pos
	return nil
}
