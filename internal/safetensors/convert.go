package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
)

// convert widens raw little-endian values of dtype into dst (len(raw) =
// len(dst)·size).
func convert(dst []float32, raw []byte, dtype DType) error {
	switch dtype {
	case F32:
		raw = raw[:4*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case BF16:
		raw = raw[:2*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	case F16:
		raw = raw[:2*len(dst)]
		for i := range dst {
			dst[i] = HalfToFloat32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	default:
		return fmt.Errorf("dtype %s cannot be read as float32", dtype)
	}
	return nil
}

// encodeValues appends vals stored as dtype.
func encodeValues(out []byte, vals []float32, dtype DType) []byte {
	switch dtype {
	case BF16:
		for _, v := range vals {
			out = binary.LittleEndian.AppendUint16(out, Float32ToBF16(v))
		}
	case F16:
		for _, v := range vals {
			out = binary.LittleEndian.AppendUint16(out, Float32ToHalf(v))
		}
	default:
		for _, v := range vals {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out
}

// HalfToFloat32 widens an IEEE binary16 value exactly (subnormals,
// infinities and NaN payloads included).
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: frac·2⁻²⁴, normalised.
	e := uint32(127 - 15 + 1)
	for frac&0x400 == 0 {
		frac <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
}

// Float32ToHalf rounds to the nearest binary16, ties to even, overflowing
// to infinity (as PyTorch's .half()); NaN stays NaN.
func Float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	frac := b & 0x7fffff
	if exp == 0xff {
		if frac != 0 {
			return sign | 0x7e00 | uint16(frac>>13) // quiet NaN, payload kept
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal or zero in binary16: shift the full significand.
		if e < -10 {
			return sign
		}
		m := frac | 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		q := m >> shift
		rem := m & (1<<shift - 1)
		if rem > half || rem == half && q&1 == 1 {
			q++
		}
		return sign | uint16(q)
	}
	q := uint32(e)<<10 | frac>>13
	rem := frac & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && q&1 == 1 {
		q++ // may carry into the exponent, up to infinity: correct
	}
	return sign | uint16(q)
}

// Float32ToBF16 rounds to the nearest bfloat16, ties to even; NaN stays NaN.
func Float32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40 // quiet NaN
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// checkFinite refuses the first NaN or infinity in vals, whose first
// element is element base of the tensor.
func checkFinite(name string, vals []float32, base int64) error {
	for i, v := range vals {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("tensor %s holds a %w (%v) at index %d", name, errNonFinite, v, base+int64(i))
		}
	}
	return nil
}
