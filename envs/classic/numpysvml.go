package classic

import "math"

// Acrobot and Pendulum call numpy.sin and numpy.cos, and NumPy 1.24 on an
// AVX-512 CPU (the recording machine) hands float64 sin/cos to Intel's SVML
// kernels __svml_sin8 and __svml_cos8, which are accurate to a few ulps but
// not correctly rounded: about one result in six differs from the C
// library's. Those ulps feed back through the dynamics, so replaying whole
// Gymnasium episodes needs the same bits. svmlSin and svmlCos follow the
// kernels' main path operation for operation (BSD-3 licensed, from
// numpy/SVML): reduce by a three-part π, evaluate an odd degree-15
// polynomial, fix the sign from N's parity. Inputs the kernels send to
// their large-argument path (|x| beyond 2^24 for sin, about 2.6e7 for cos),
// infinities and NaNs get the correctly rounded sinCos instead; no
// environment gets there.

const (
	svmlInvPi = 0x1.45f306dc9c883p-2
	svmlPi1   = 0x1.921fb54442d18p+1
	svmlPi2   = 0x1.1a62633145c06p-53
	svmlPi3   = 0x1.c1cd129024e09p-106

	svmlSinShifter = 0x1.8p52 // adding it rounds x/π to an integer in the low bits
	svmlSinRange   = 0x1p24

	svmlCosShifter = 0x1p52
	svmlCosHalf    = 0x1.fffffffffffffp51 // svmlCosShifter − 0.5
	svmlCosRange   = 0x1.00000007ffffep52 // svmlCosShifter + 2^23 − 2
	svmlCosTiny    = 0x1p-27
)

var (
	svmlSinC = [7]float64{-0x1.55555555554a8p-3, 0x1.111111110a573p-7, -0x1.a01a019a659ddp-13,
		0x1.71de3806add1ap-19, -0x1.ae6355aaa4a53p-26, 0x1.60e6bee01d83ep-33, -0x1.9f1517e9f65f0p-41}
	svmlCosC = [7]float64{-0x1.55555555554a7p-3, 0x1.111111110a4a8p-7, -0x1.a01a019a5b87bp-13,
		0x1.71de38030fea0p-19, -0x1.ae63546002231p-26, 0x1.60e6857a2f220p-33, -0x1.9f0d60811aac8p-41}
)

// svmlPoly evaluates r + r·r²·(c0 + r²·(c1 + … + r²·c6)) the way the
// kernels do, with r² taken from the two-part reduced argument.
func svmlPoly(c *[7]float64, r, r2 float64) float64 {
	p := math.FMA(c[6], r2, c[5])
	for i := 4; i >= 0; i-- {
		p = math.FMA(r2, p, c[i])
	}
	return math.FMA(float64(r*r2), p, r)
}

// svmlSin is NumPy 1.24's float64 sin on AVX-512 CPUs.
func svmlSin(x float64) float64 {
	if x == 0 {
		return x
	}
	if !(math.Abs(x) <= svmlSinRange) {
		s, _ := sinCos(x)
		return s
	}
	t := math.FMA(x, svmlInvPi, svmlSinShifter)
	odd := math.Float64bits(t)&1 == 1
	n := t - svmlSinShifter
	r := math.FMA(-n, svmlPi1, x)
	r = math.FMA(-svmlPi2, n, r)
	r2 := float64(r * r)
	r = math.FMA(-svmlPi3, n, r)
	res := svmlPoly(&svmlSinC, r, r2)
	if odd {
		res = -res
	}
	return res
}

// svmlCos is NumPy 1.24's float64 cos on AVX-512 CPUs: cos|x| is
// sin((N+½)π − |x|) up to the sign of N's parity, with N = ⌊|x|/π⌋.
func svmlCos(x float64) float64 {
	ax := math.Abs(x)
	t := svmlCosShifter + floorProduct(ax, svmlInvPi) // the kernel rounds this FMA toward zero
	if !(t <= svmlCosRange) {
		_, c := sinCos(x)
		return c
	}
	if ax < svmlCosTiny {
		return 1
	}
	odd := math.Float64bits(t)&1 == 1
	n := t - svmlCosHalf // N + ½
	r := math.FMA(n, svmlPi1, -ax)
	r = math.FMA(svmlPi2, n, r)
	r2 := float64(r * r)
	r = math.FMA(svmlPi3, n, r)
	if odd {
		r = -r
	}
	return svmlPoly(&svmlCosC, r, r2)
}

// floorProduct returns ⌊a·b⌋ of the exact product of non-negative a and b
// (small enough that the floor is exact in a float64).
func floorProduct(a, b float64) float64 {
	p := float64(a * b)
	e := math.FMA(a, b, -p) // a·b = p + e exactly
	f := math.Floor(p)
	if f == p && e < 0 {
		f--
	}
	return f
}
