package classic

import "math"

// glibc's sin and cos (since 2.28) are not correctly rounded either: about
// one result in 700 on [−π, π] is an ulp away from the true value rounded,
// so the correctly rounded sinCos in libm.go sometimes disagrees with the
// Python math.sin/math.cos Gymnasium calls. MountainCar's golden file hits
// two such cosines, enough to nudge the float64 velocity. libmSin and
// libmCos replay glibc 2.36's __sin_fma/__cos_fma (IBM's Accurate
// Mathematical Library: a 1/128-spaced table of sin and cos plus short
// polynomials) with a fused multiply-add exactly where that binary has one.
// Beyond |x| ≈ 1e8, and for infinities and NaNs, they fall back to sinCos.

const (
	libmBig   = 0x1.8p45 // adding it rounds |x| to a multiple of 1/128
	libmSn3   = -0x1.5555555555515p-3
	libmSn5   = 0x1.11110e829872fp-7
	libmCs2   = 0x1p-1
	libmCs4   = -0x1.5555555555535p-5
	libmCs6   = 0x1.6c16bedd9e239p-10
	libmS1    = -0x1.5555555555555p-3
	libmS2    = 0x1.1111111110ecep-7
	libmS3    = -0x1.a01a019db08b8p-13
	libmS4    = 0x1.71de27b9a7ed9p-19
	libmS5    = -0x1.addffc2fcdf59p-26
	libmHp0   = 0x1.921fb54442d18p+0 // π/2 in two parts
	libmHp1   = 0x1.1a62633145c07p-54
	libmHpInv = 0x1.45f306dc9c883p-1 // 2/π
	libmToInt = 0x1.8p52
	libmMp1   = 0x1.921fb58000000p+0 // π/2 in four parts
	libmMp2   = -0x1.dde973c000000p-27
	libmPp3   = -0x1.cb3b398000000p-55
	libmPp4   = -0x1.d747f23e32ed7p-83
)

// libmSin is glibc 2.36's sin on x86-64 CPUs with FMA.
func libmSin(x float64) float64 {
	switch k := libmHighWord(x); {
	case k < 0x3e500000: // |x| < 2^-26
		return x
	case k < 0x3feb6000: // |x| < 0.855469
		return libmDoSin(x, 0)
	case k < 0x400368fd: // |x| < 2.426265
		return math.Copysign(libmDoCos(libmHp0-math.Abs(x), libmHp1), x)
	case k < 0x419921fb: // |x| < 105414350
		a, da, n := libmReduce(x)
		return libmDoSinCos(a, da, n)
	}
	s, _ := sinCos(x)
	return s
}

// libmCos is glibc 2.36's cos on x86-64 CPUs with FMA.
func libmCos(x float64) float64 {
	switch k := libmHighWord(x); {
	case k < 0x3e400000: // |x| < 2^-27
		return 1
	case k < 0x3feb6000:
		return libmDoCos(x, 0)
	case k < 0x400368fd:
		y := libmHp0 - math.Abs(x)
		a := y + libmHp1
		return libmDoSin(a, y-a+libmHp1)
	case k < 0x419921fb:
		a, da, n := libmReduce(x)
		return libmDoSinCos(a, da, n+1)
	}
	_, c := sinCos(x)
	return c
}

func libmHighWord(x float64) uint32 { return uint32(math.Float64bits(x)>>32) & 0x7fffffff }

// libmTable splits |x| < 0.86 into the nearest multiple of 1/128, whose
// sin and cos the table holds, and the remainder.
func libmTable(ax float64) (r, sn, ssn, cs, ccs float64) {
	u := libmBig + ax
	k := uint32(math.Float64bits(u)) << 2
	t := sinCosTab[k : k+4 : k+4]
	return ax - (u - libmBig), math.Float64frombits(t[0]), math.Float64frombits(t[1]),
		math.Float64frombits(t[2]), math.Float64frombits(t[3])
}

// libmDoSin is sin(x+dx) for |x| < 0.86 or so.
func libmDoSin(x, dx float64) float64 {
	if math.Abs(x) < 0.126 {
		xx := float64(x * x)
		p := math.FMA(math.FMA(math.FMA(math.FMA(xx, libmS5, libmS4), xx, libmS3), xx, libmS2), xx, libmS1)
		t := math.FMA(p, x, -float64(0.5*dx))
		return x + math.FMA(xx, t, dx)
	}
	xold := x
	if x <= 0 {
		dx = -dx
	}
	r, sn, ssn, cs, ccs := libmTable(math.Abs(x))
	xx := float64(r * r)
	s := r + math.FMA(float64(r*xx), math.FMA(xx, libmSn5, libmSn3), dx)
	c := math.FMA(r, dx, float64(xx*math.FMA(xx, math.FMA(xx, libmCs6, libmCs4), libmCs2)))
	cor := math.FMA(s, ccs, ssn)
	cor = math.FMA(-c, sn, cor)
	cor = math.FMA(s, cs, cor)
	return math.Copysign(sn+cor, xold)
}

// libmDoCos is cos(x+dx) for |x| < 0.86 or so.
func libmDoCos(x, dx float64) float64 {
	if x < 0 {
		dx = -dx
	}
	r, sn, ssn, cs, ccs := libmTable(math.Abs(x))
	r += dx
	xx := float64(r * r)
	s := math.FMA(float64(r*xx), math.FMA(xx, libmSn5, libmSn3), r)
	c := float64(xx * math.FMA(xx, math.FMA(xx, libmCs6, libmCs4), libmCs2))
	cor := math.FMA(-s, ssn, ccs)
	cor = math.FMA(-c, cs, cor)
	cor = math.FMA(-s, sn, cor)
	return cs + cor
}

// libmReduce writes x as n·π/2 + (a + da), |a| ≤ π/4, for |x| < 105414350.
func libmReduce(x float64) (a, da float64, n uint64) {
	t := math.FMA(x, libmHpInv, libmToInt)
	xn := t - libmToInt
	y := math.FMA(-xn, libmMp1, x)
	y = math.FMA(-xn, libmMp2, y)
	t2 := math.FMA(-xn, libmPp3, y)
	da = math.FMA(-xn, libmPp3, y-t2)
	a = math.FMA(-xn, libmPp4, t2)
	da += math.FMA(-xn, libmPp4, t2-a)
	return a, da, math.Float64bits(t) & 3
}

// libmDoSinCos is sin(a+da) turned by n quarter turns.
func libmDoSinCos(a, da float64, n uint64) float64 {
	var r float64
	if n&1 == 1 {
		r = libmDoCos(a, da)
	} else {
		r = libmDoSin(a, da)
	}
	if n&2 != 0 {
		r = -r
	}
	return r
}
