package classic

import "github.com/agenttrainer/agenttrainer/envs"

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
func uniform(rng envs.PCGRand, lo, hi float64) float64 {
	return lo + float64((hi-lo)*rng.Float64())
}
