package envs

import (
	"math"
)

// DiscreteAction reads a discrete action index from action[0]. Gymnasium
// asserts on an index outside the space; an agent here must never crash the
// run, so the index is rounded and clamped into 0…n−1, and NaN picks 0.
func DiscreteAction(a float32, n int) int {
	if !(a > 0) { // also NaN
		return 0
	}
	if a >= float32(n-1) {
		return n - 1
	}
	return int(math.Round(float64(a)))
}
