package anynum

import (
	"encoding/json"
	"math"
	"testing"
)

func TestInt(t *testing.T) {
	tests := []struct {
		in   any
		want int64
		ok   bool
	}{
		{int(7), 7, true},
		{int8(-3), -3, true},
		{uint16(65535), 65535, true},
		{int64(math.MaxInt64), math.MaxInt64, true},
		{uint64(math.MaxUint64), 0, false},
		{uint(1 << 63), 0, false},
		{float64(4), 4, true},
		{float32(-2), -2, true},
		{float64(2.5), 0, false},
		{float64(1 << 53), 1 << 53, true},
		{float64(1<<53) * 4, 0, false}, // not exact any more
		{math.NaN(), 0, false},
		{math.Inf(1), 0, false},
		{json.Number("12"), 12, true},
		{json.Number("12.0"), 12, true},
		{json.Number("1.5"), 0, false},
		{"12", 0, false},
		{true, 0, false},
		{nil, 0, false},
	}
	for _, tt := range tests {
		got, ok := Int(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("Int(%#v) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFloat(t *testing.T) {
	tests := []struct {
		in   any
		want float64
		ok   bool
	}{
		{float64(0.25), 0.25, true},
		{float32(0.5), 0.5, true},
		{int(3), 3, true},
		{uint8(200), 200, true},
		{json.Number("1e-3"), 1e-3, true},
		{json.Number("x"), 0, false},
		{"0.5", 0, false},
		{false, 0, false},
		{[]any{1.0}, 0, false},
	}
	for _, tt := range tests {
		got, ok := Float(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("Float(%#v) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
