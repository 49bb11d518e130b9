package classic

import (
	"math"
	"testing"
)

// The vectors below are inputs where glibc 2.36 (Debian 12, x86-64 with
// FMA; what Gymnasium ran on) does not round correctly, with glibc's
// results as Python's math.sin, math.cos and float.__pow__ returned them.
// They pin the replays to glibc rather than to the true values.

func TestLibmSinCosMatchesGlibc(t *testing.T) {
	cases := []struct {
		x, want uint64
		sin     bool
	}{
		{0x400b7d1a458af155, 0xbfd29386f34f9524, true},
		{0xbfe25724b59ec120, 0xbfe15a489e1546ea, true},
		{0xbfd328b0c35a1a88, 0xbfd2dfc30eb8c3fe, true},
		{0xbfcc2c53d48bc130, 0xbfcbf23c0b65086a, true},
		{0x3ffb4b3673c7a7ee, 0xbfc13c67368bf2a0, false},
		{0xbff60e7d2b4e3e36, 0x3fc87533ec7c7978, false},
		{0xbffe18ba206e41eb, 0xbfd389d57aa3bb30, false},
		{0xbffafb2adaf802cc, 0xbfbd82243d894240, false},
	}
	for _, c := range cases {
		x := math.Float64frombits(c.x)
		got, name := libmCos(x), "cos"
		cs, cc := sinCos(x)
		correct := cc
		if c.sin {
			got, name, correct = libmSin(x), "sin", cs
		}
		if math.Float64bits(got) != c.want {
			t.Errorf("libm %s(%v) = %v, want glibc's %v", name, x, got, math.Float64frombits(c.want))
		}
		if math.Float64bits(correct) == c.want {
			t.Errorf("%s(%v): vector does not tell glibc from correct rounding", name, x)
		}
	}
}

func TestPowSquareMatchesGlibc(t *testing.T) {
	cases := []struct{ x, want uint64 }{
		{0xc03d2059b8470858, 0x408a82c3526cda61},
		{0xc0230d92be9074a0, 0x4056b048084e9e63},
		{0x4025829e2b3c91b0, 0x405ceb0981d92d0f},
		{0x403c498a4131b234, 0x4089015af335bd69},
		{0xc03235bf3d7da368, 0x4074b9a2d63fdd08},
		{0x402619a3d44216c0, 0x405e86ab9e3a8cda},
	}
	for _, c := range cases {
		x := math.Float64frombits(c.x)
		if got := powSquare(x); math.Float64bits(got) != c.want {
			t.Errorf("powSquare(%v) = %v, want glibc's %v", x, got, math.Float64frombits(c.want))
		}
		if math.Float64bits(x*x) == c.want {
			t.Errorf("powSquare(%v): vector does not tell pow from x*x", x)
		}
	}
}

// TestReplayedMathEdgeCases checks the fallbacks: what the replays do not
// follow bit for bit must still be the right function.
func TestReplayedMathEdgeCases(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	sin := func(x float64) float64 { s, _ := sinCos(x); return s }
	cos := func(x float64) float64 { _, c := sinCos(x); return c }
	funcs := []struct {
		name       string
		f, want, m func(float64) float64 // m gives the sign (sinCos loses −0's)
	}{
		{"libmSin", libmSin, sin, math.Sin}, {"libmCos", libmCos, cos, math.Cos},
		{"svmlSin", svmlSin, sin, math.Sin}, {"svmlCos", svmlCos, cos, math.Cos},
	}
	for _, x := range []float64{0, math.Copysign(0, -1), 1e-300, 3e-9, 1, -2.5, 10, 1e6, 3e7, 1e9, 1e300} {
		for _, f := range funcs {
			got, want := f.f(x), f.want(x)
			if math.Abs(got-want) > 4e-16*math.Max(1, math.Abs(want)) || math.Signbit(got) != math.Signbit(f.m(x)) {
				t.Errorf("%s(%v) = %v, want about %v", f.name, x, got, want)
			}
		}
	}
	for _, x := range []float64{inf, -inf, nan} {
		if !math.IsNaN(libmSin(x)) || !math.IsNaN(libmCos(x)) || !math.IsNaN(svmlSin(x)) || !math.IsNaN(svmlCos(x)) {
			t.Errorf("sin/cos(%v) is not NaN", x)
		}
	}
	for _, x := range []float64{0, 1, -1, 1e-200, 1e200, inf, -inf} {
		if got, want := powSquare(x), x*x; got != want {
			t.Errorf("powSquare(%v) = %v, want %v", x, got, want)
		}
	}
	if !math.IsNaN(powSquare(nan)) {
		t.Error("powSquare(NaN) is not NaN")
	}
	for _, x := range []float64{0.5, 3, -7.25, 1e10} {
		if got := powSquare(x); math.Abs(got-x*x) > 2e-16*x*x {
			t.Errorf("powSquare(%v) = %v, want about %v", x, got, x*x)
		}
	}
}
