package classic

import (
	"math"
	"math/big"
)

// sinCos is a correctly rounded sine and cosine: the Taylor series in
// double-double arithmetic (about 106 bits) after a double-double range
// reduction, rounded once. glibc's sin and cos are not always correctly
// rounded, so the environments that must match Gymnasium bit for bit use
// the glibc replays in libmsincos.go; those fall back to sinCos outside the
// range they reproduce.

// dd is an unevaluated sum hi+lo with |lo| ≤ ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func ddAdd(a, b dd) dd {
	s := twoSum(a.hi, b.hi)
	s.lo += a.lo + b.lo
	return twoSum(s.hi, s.lo)
}

func ddMul(a, b dd) dd {
	p := a.hi * b.hi
	e := math.FMA(a.hi, b.hi, -p)
	e += a.hi*b.lo + a.lo*b.hi
	return twoSum(p, e)
}

const taylorTerms = 28 // x^28/28! < 1e-36 for |x| ≤ π/4

var (
	invFact  [taylorTerms + 1]dd // 1/n!, signs folded in by the callers
	halfPiDD dd
)

func init() {
	prec := uint(300)
	f := new(big.Float).SetPrec(prec).SetInt64(1)
	for n := 0; n <= taylorTerms; n++ {
		if n > 0 {
			f.Quo(f, new(big.Float).SetPrec(prec).SetInt64(int64(n)))
		}
		invFact[n] = splitBig(f, prec)
	}
	// π/2 to 300 bits from its decimal expansion.
	pi, _, _ := big.ParseFloat("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798", 10, prec, big.ToNearestEven)
	halfPiDD = splitBig(pi.Quo(pi, big.NewFloat(2).SetPrec(prec)), prec)
}

func splitBig(f *big.Float, prec uint) dd {
	hi, _ := f.Float64()
	rest := new(big.Float).SetPrec(prec).Sub(f, new(big.Float).SetPrec(prec).SetFloat64(hi))
	lo, _ := rest.Float64()
	return dd{hi, lo}
}

// series evaluates Σ_k (−1)^k y^k / (2k+first)! by Horner's rule.
func series(y dd, first int) dd {
	var p dd
	for n := taylorTerms - (taylorTerms-first)%2; n >= first; n -= 2 {
		c := invFact[n]
		if (n-first)/2%2 == 1 {
			c = dd{-c.hi, -c.lo}
		}
		p = ddAdd(ddMul(p, y), c)
	}
	return p
}

// sinCos returns sin(x) and cos(x) rounded from a double-double evaluation.
func sinCos(x float64) (sin, cos float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e5 {
		return math.Sin(x), math.Cos(x)
	}
	k := math.Round(x / halfPiDD.hi)
	// r = x − k·π/2 in double-double: k is a small integer, so k·π/2 is exact
	// enough in double-double and the subtraction keeps ~106 bits.
	kp := ddMul(dd{k, 0}, halfPiDD)
	r := ddAdd(dd{x, 0}, dd{-kp.hi, -kp.lo})
	r2 := ddMul(r, r)
	s := ddMul(r, series(r2, 1))
	c := series(r2, 0)
	switch int64(k) & 3 {
	case 0:
		return s.hi + s.lo, c.hi + c.lo
	case 1:
		return c.hi + c.lo, -(s.hi + s.lo)
	case 2:
		return -(s.hi + s.lo), -(c.hi + c.lo)
	default:
		return -(c.hi + c.lo), s.hi + s.lo
	}
}
