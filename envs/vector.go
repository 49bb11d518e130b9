package envs

import (
	"errors"
	"fmt"
)

// Episode is one finished episode as the vector runner saw it.
type Episode struct {
	Env       int // index of the sub-environment
	Return    float64
	Length    int
	Truncated bool // ended by a time limit rather than a terminal state
	// Success is set for environments that report it (SuccessReporter);
	// HasSuccess says whether it means anything.
	Success, HasSuccess bool
}

// Stat is one figure an environment reported for an episode.
type Stat struct {
	Name  string
	Value float64
}

// Vector steps N environments in lockstep with Gymnasium-style auto-reset:
// when a sub-environment's episode ends, its final observation is kept in
// FinalObs and the environment is reset at once, so Obs always holds the
// observation the next action is for.
type Vector struct {
	Envs           []Env
	ObsDim, ActDim int

	Obs        []float32 // N×ObsDim: the observations to act on
	FinalObs   []float32 // N×ObsDim: where Done[i], the observation the episode ended on
	Rewards    []float32 // N: rewards of the last step
	Terminated []bool    // N: the last step reached a terminal state
	Truncated  []bool    // N: the last step was cut off (and did not terminate)
	Finished   []Episode // episodes that ended on the last step
	// EpisodeStats holds, for a sub-environment whose episode is in
	// Finished, the figures it reported for it (StatsReporter).
	EpisodeStats [][]Stat
	// BeforeReset, when set, is called with a sub-environment whose
	// episode just ended, before the automatic reset: its last state can
	// still be looked at (an evaluation draws the final frame).
	BeforeReset func(i int)

	returns []float64
	lengths []int

	obsSpace, actSpace Space

	// A vector built by NewBatchVector steps its sub-environments through
	// one backend call (a remote server) instead of Envs, which is nil.
	batch      BatchEnv
	batchSR    BatchSuccessReporter // nil unless the backend reports success
	batchRew   []float64
	batchTrunc []bool
	pool       *stepPool     // stepping on several cores (SetThreads), or nil
	async      AsyncBatchEnv // set when the backend steps asynchronously
	asyncActs  []float32     // N×ActDim: SendAsync's actions in sub-environment order
	asyncIDs   []int         // what RecvAsync returned last
	err        error         // what stopped the backend; sticky
	closed     bool
}

// NewVector wraps envs, which must share observation and action spaces.
func NewVector(envs []Env) (*Vector, error) {
	if len(envs) == 0 {
		return nil, fmt.Errorf("a vector of environments needs at least one environment")
	}
	os, as := envs[0].ObservationSpace(), envs[0].ActionSpace()
	for i, e := range envs[1:] {
		if e.ObservationSpace().Size() != os.Size() || e.ActionSpace().Size() != as.Size() ||
			e.ActionSpace().Kind != as.Kind {
			return nil, fmt.Errorf("environment %d has spaces %v/%v, environment 0 has %v/%v",
				i+1, e.ObservationSpace(), e.ActionSpace(), os, as)
		}
	}
	v := newVector(len(envs), os, as)
	v.Envs, v.EpisodeStats = envs, make([][]Stat, len(envs))
	return v, nil
}

func newVector(n int, os, as Space) *Vector {
	od := os.Size()
	return &Vector{
		ObsDim: od, ActDim: as.Size(), obsSpace: os, actSpace: as,
		Obs: make([]float32, n*od), FinalObs: make([]float32, n*od),
		Rewards: make([]float32, n), Terminated: make([]bool, n), Truncated: make([]bool, n),
		returns: make([]float64, n), lengths: make([]int, n),
	}
}

// Len is the number of sub-environments.
func (v *Vector) Len() int { return len(v.Rewards) }

// ObservationSpace and ActionSpace are those of the sub-environments.
func (v *Vector) ObservationSpace() Space { return v.obsSpace }

// ActionSpace is the sub-environments' action space.
func (v *Vector) ActionSpace() Space { return v.actSpace }

// Reset resets sub-environment i with seed+i (Gymnasium's vector seeding).
func (v *Vector) Reset(seed int64) {
	if v.batch != nil {
		v.resetBatch(seed)
		return
	}
	for i, e := range v.Envs {
		s := seed + int64(i)
		if seed == NoSeed {
			s = NoSeed
		}
		e.Reset(s, v.obs(i))
		v.returns[i], v.lengths[i] = 0, 0
	}
}

func (v *Vector) obs(i int) []float32 { return v.Obs[i*v.ObsDim : (i+1)*v.ObsDim] }

// Step applies actions (N×ActDim) to every sub-environment: one after
// the other, or on several cores when SetThreads allows it and stepping
// costs enough to pay for it (see stepPool); the results are the same bits
// either way.
func (v *Vector) Step(actions []float32) {
	v.Finished = v.Finished[:0]
	if v.batch != nil {
		v.stepBatch(actions)
		return
	}
	if v.pool != nil && v.BeforeReset == nil {
		v.pool.step(v, actions)
		return
	}
	v.stepSeq(actions)
}

// stepSeq steps the sub-environments one after the other.
func (v *Vector) stepSeq(actions []float32) {
	for i, e := range v.Envs {
		obs := v.obs(i)
		r, term, trunc := e.Step(actions[i*v.ActDim:(i+1)*v.ActDim], obs)
		ep := v.account(i, r, term, trunc)
		if ep == nil {
			continue
		}
		if s, ok := unwrapTo[SuccessReporter](e); ok {
			ep.Success, ep.HasSuccess = s.Succeeded(), true
		}
		if s, ok := unwrapTo[StatsReporter](e); ok {
			v.EpisodeStats[i] = v.EpisodeStats[i][:0]
			s.EpisodeStats(func(name string, x float64) { v.EpisodeStats[i] = append(v.EpisodeStats[i], Stat{name, x}) })
		}
		copy(v.FinalObs[i*v.ObsDim:(i+1)*v.ObsDim], obs)
		if v.BeforeReset != nil {
			v.BeforeReset(i)
		}
		e.Reset(NoSeed, obs)
	}
}

// account books sub-environment i's step: reward, running return and
// length, flags; when the episode ended it is appended to Finished, which
// account returns for the caller to complete.
func (v *Vector) account(i int, r float64, term, trunc bool) *Episode {
	v.Rewards[i] = float32(r)
	v.returns[i] += r
	v.lengths[i]++
	v.Terminated[i], v.Truncated[i] = term, trunc && !term
	if !term && !trunc {
		return nil
	}
	v.Finished = append(v.Finished, Episode{Env: i, Return: v.returns[i], Length: v.lengths[i], Truncated: !term})
	v.returns[i], v.lengths[i] = 0, 0
	return &v.Finished[len(v.Finished)-1]
}

// Done reports whether sub-environment i's episode ended on the last step.
func (v *Vector) Done(i int) bool { return v.Terminated[i] || v.Truncated[i] }

// Replace puts e into slot i in place of the environment there, resets it
// with seed and starts a new episode in that slot. Spaces must match.
func (v *Vector) Replace(i int, e Env, seed int64) error {
	if v.batch != nil {
		return errors.New("the sub-environments of a batch (a remote server) cannot be replaced one by one")
	}
	if e.ObservationSpace().Size() != v.ObsDim || e.ActionSpace().Size() != v.ActDim {
		return fmt.Errorf("environment with spaces %v/%v cannot replace one with %v/%v",
			e.ObservationSpace(), e.ActionSpace(), v.ObservationSpace(), v.ActionSpace())
	}
	v.Envs[i] = e
	e.Reset(seed, v.obs(i))
	v.returns[i], v.lengths[i] = 0, 0
	return nil
}
