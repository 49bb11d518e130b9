// Package anynum reads numbers out of values decoded from TOML, JSON, CSV
// or Go maps (config overrides, env.args, task dataset rows, protocol
// messages), whichever Go type the decoder chose for them.
package anynum

import (
	"encoding/json"
	"math"
)

// maxExact is the largest magnitude up to which a float64 holds every
// integer exactly; an integer-valued float beyond it may not be the integer
// the user wrote.
const maxExact = 1 << 53

// Int returns v as an integer: any Go integer type, a float with no
// fractional part up to ±2⁵³ (JSON and CSV decoders give floats), or a
// json.Number of either kind. ok is false for anything else, and for
// values outside int64.
func Int(v any) (n int64, ok bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		return int64(x), uint64(x) <= math.MaxInt64
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case float32:
		return Int(float64(x))
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= maxExact {
			return int64(x), true
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
		if f, err := x.Float64(); err == nil {
			return Int(f)
		}
	}
	return 0, false
}

// Float returns v as a float64: any Go integer or float type, or a
// json.Number. It does not judge NaN or infinities; callers that need a
// finite number check.
func Float(v any) (f float64, ok bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	if n, ok := Int(v); ok {
		return float64(n), true
	}
	return 0, false
}
