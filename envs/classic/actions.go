package classic

import (
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/internal/nprand"
)

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

// uniform is np_random.uniform(lo, hi) for one value: Gymnasium's classic
// control draws its starts from np_random, a NumPy Generator over PCG64.
func uniform(rng *nprand.Generator, lo, hi float64) float64 { return rng.Uniform(lo, hi) }

// gymSeed is the seed Reset(seed) hands to SeedSequence, as Gymnasium's
// reset(seed=seed) does with seeding.np_random(seed). Gymnasium refuses a
// negative seed; Reset cannot fail, so a negative one other than NoSeed is
// read as its 64-bit two's complement.
func gymSeed(seed int64) uint64 { return uint64(seed) }

// noArgs returns e, unless env.args holds anything: the classic-control
// environments read no arguments, and a misspelt key must not pass unseen.
func noArgs(args envs.Params, e envs.Env) (envs.Env, error) {
	if err := args.CheckArgs(); err != nil {
		return nil, err
	}
	return e, nil
}
