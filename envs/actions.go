package envs

import (
	"math"
)

// discreteAction reads a discrete action index from action[0]. Gymnasium
// asserts on an index outside the space; an agent here must never crash the
// run, so the index is rounded and clamped into 0…n−1, and NaN picks 0.
func discreteAction(a float32, n int) int {
	if !(a > 0) { // also NaN
		return 0
	}
	if a >= float32(n-1) {
		return n - 1
	}
	return int(math.Round(float64(a)))
}

// clipAction clips a continuous action into [lo, hi] as np.clip does. NaN,
// which NumPy would carry into the state and keep there for the rest of the
// episode, is read as 0 (no force).
func clipAction(a, lo, hi float32) float32 {
	switch {
	case a != a:
		return 0
	case a < lo:
		return lo
	case a > hi:
		return hi
	}
	return a
}

// uniform draws from [lo, hi) the way NumPy's Generator.uniform does, from
// our own stream.
func uniform(rng pcgRand, lo, hi float64) float64 {
	return lo + float64((hi-lo)*rng.Float64())
}
