package classic

import "math"

// NumPy computes `v**2` on a float64 scalar with the C library's pow, and
// glibc's pow is not correctly rounded: about one square in a thousand comes
// out an ulp away from v*v. Acrobot's dynamics and Pendulum's reward square
// float64 scalars this way, so to match Gymnasium bit for bit powSquare
// replays glibc 2.36's pow(x, 2) as compiled for x86-64 CPUs with FMA (the
// __pow_fma variant the recording machine ran): the same table-driven
// log/exp algorithm, with a fused multiply-add exactly where that binary has
// one. Go's compiler may fuse a*b+c on some platforms, so every product that
// feeds a sum below is rounded explicitly with float64(…).

const (
	powLn2hi = 0x1.62e42fefa3800p-1
	powLn2lo = 0x1.ef35793c76730p-45
	powA0    = -0x1p-1
	powA1    = -0x1.5555555555560p-1
	powA2    = 0x1.0000000000006p-1
	powA3    = 0x1.999999959554ep-1
	powA4    = -0x1.555555529a47ap-1
	powA5    = -0x1.2495b9b4845e9p+0
	powA6    = 0x1.0002b8b263fc3p+0
	powOff   = 0x3fe6955500000000 // bits of the lower end of log's reduced range

	expInvLn2N   = 0x1.71547652b82fep+7 // 128/ln 2
	expNegLn2hiN = -0x1.62e42fefa0000p-8
	expNegLn2loN = -0x1.cf79abc9e3b3ap-47
	expShift     = 0x1.8p52
	expC2        = 0x1.ffffffffffdbdp-2
	expC3        = 0x1.555555555543cp-3
	expC4        = 0x1.55555cf172b91p-5
	expC5        = 0x1.1111167a4d017p-7
)

// powSquare returns glibc's pow(x, 2). Outside 1e-100 < |x| < 1e100 (where
// glibc takes its over/underflow paths; no environment gets there) it
// returns x*x, which is what glibc returns for zeros, infinities and NaNs.
func powSquare(x float64) float64 {
	ax := math.Abs(x)
	if !(ax > 1e-100 && ax < 1e100) {
		return x * x
	}
	hi, lo := powLog(math.Float64bits(ax))
	ehi := 2 * hi
	elo := math.FMA(2, lo, math.FMA(hi, 2, -ehi))
	top := math.Float64bits(ehi) >> 52 & 0x7ff
	if top < 0x3c9 { // |ehi| < 2^-54: pow is 1 to within rounding
		return 1 + ehi
	}
	if top >= 0x408 { // |ehi| ≥ 512: cannot happen inside the range above
		return x * x
	}
	return powExp(ehi, elo)
}

// powLog returns log(x) as hi+lo with about 15 bits more than a double.
func powLog(ix uint64) (hi, lo float64) {
	tmp := ix - powOff
	i := tmp >> 45 & 127
	k := int64(tmp) >> 52
	z := math.Float64frombits(ix - tmp&(0xfff<<52))
	kd := float64(k)
	invc := math.Float64frombits(powLogTab[i][0])
	logc := math.Float64frombits(powLogTab[i][1])
	logctail := math.Float64frombits(powLogTab[i][2])

	t1 := math.FMA(kd, powLn2hi, logc)
	lo1 := math.FMA(kd, powLn2lo, logctail)
	r := math.FMA(z, invc, -1)
	ar := float64(r * powA0)
	q12 := math.FMA(r, powA2, powA1)
	q34 := math.FMA(r, powA4, powA3)
	t2 := r + t1
	ar2 := float64(r * ar)
	ar3 := float64(r * ar2)
	lo3 := math.FMA(ar, r, -ar2)
	lo2 := t1 - t2 + r
	q56 := math.FMA(r, powA6, powA5)
	hi = t2 + ar2
	lo4 := t2 - hi + ar2
	q := math.FMA(q56, ar2, q34)
	q = math.FMA(ar2, q, q12)
	l := lo1 + lo2 + lo3 + lo4
	l = math.FMA(ar3, q, l)
	y := hi + l
	return y, hi - y + l
}

// powExp returns exp(x+xtail) for |x| in [2^-54, 512).
func powExp(x, xtail float64) float64 {
	kd := math.FMA(x, expInvLn2N, expShift)
	ki := math.Float64bits(kd)
	kd -= expShift
	r := math.FMA(kd, expNegLn2loN, math.FMA(kd, expNegLn2hiN, x))
	r = xtail + r
	idx := 2 * (ki & 127)
	tail := math.Float64frombits(expTab[idx])
	scale := math.Float64frombits(expTab[idx+1] + ki<<45)
	p23 := math.FMA(r, expC3, expC2)
	tr := r + tail
	r2 := float64(r * r)
	p45 := math.FMA(r, expC5, expC4)
	t := math.FMA(p23, r2, tr)
	tmp := math.FMA(p45, float64(r2*r2), t)
	return math.FMA(tmp, scale, scale)
}
