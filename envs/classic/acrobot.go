package classic

import (
	"fmt"
	"github.com/agenttrainer/agenttrainer/internal/nprand"
	"math"

	"github.com/agenttrainer/agenttrainer/envs"
)

func init() {
	envs.Register(envs.Spec{
		ID:              "Acrobot-v1",
		Description:     "swing a two-link arm's tip above the bar by torquing its elbow (Gymnasium classic control)",
		MaxEpisodeSteps: 500,
		New:             func(args envs.Params) (envs.Env, error) { return noArgs(args, NewAcrobot()) },
	})
}

// Acrobot is Gymnasium 0.29.1's Acrobot-v1 (Sutton and Barto's book
// dynamics, one RK4 step of 0.2 s per action), reproduced step for step:
// float64 state (θ1, θ2, θ̇1, θ̇2), NumPy's sin and cos (svmlSin/svmlCos),
// glibc's pow for squares (powSquare), and Python's association order and
// rounding of constant expressions. The state after reset is float32, as
// Gymnasium draws it.
type Acrobot struct {
	s   [4]float64
	rng *nprand.Generator
}

// Python rounds each product of its constants (9·π, (0.5+1.0)·9.8, 0.2/6)
// to float64, while Go would fold a constant expression exactly and round
// once, which can land on the neighbouring float64. Deriving them from
// variables makes Go round them at run time, as Python does.
var (
	abPi      = math.Pi
	abG       = 9.8
	abDt      = 0.2
	abDt2     = abDt / 2.0
	abDt6     = abDt / 6.0
	abMaxVel1 = 4 * abPi
	abMaxVel2 = 9 * abPi
	abPhi1G   = (0.5 + 1.0) * abG // (m1·lc1 + m2·l1)·g
	abPhi2G   = 1.0 * 0.5 * abG   // m2·lc2·g
	abHalfPi  = abPi / 2.0
)

// NewAcrobot returns an Acrobot seeded with 0 until its first Reset.
func NewAcrobot() *Acrobot { return &Acrobot{rng: nprand.NewGenerator(0)} }

// ObservationSpace implements Env: (cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2).
func (a *Acrobot) ObservationSpace() envs.Space {
	v1, v2 := float32(abMaxVel1), float32(abMaxVel2)
	return envs.Space{Kind: envs.Box, Dim: 6,
		Low:  []float32{-1, -1, -1, -1, -v1, -v2},
		High: []float32{1, 1, 1, 1, v1, v2}}
}

// ActionSpace implements Env: torque −1, 0 or +1 on the elbow.
func (a *Acrobot) ActionSpace() envs.Space { return envs.Space{Kind: envs.Discrete, N: 3} }

// Reset implements Env: each state variable uniform in [−0.1, 0.1], rounded
// to float32 as Gymnasium's astype(np.float32) does.
func (a *Acrobot) Reset(seed int64, obs []float32) {
	if seed != envs.NoSeed {
		a.rng.Seed(gymSeed(seed))
	}
	for i := range a.s {
		a.s[i] = float64(float32(uniform(a.rng, -0.1, 0.1)))
	}
	a.observe(obs)
}

func (a *Acrobot) observe(obs []float32) {
	obs[0], obs[1] = float32(svmlCos(a.s[0])), float32(svmlSin(a.s[0]))
	obs[2], obs[3] = float32(svmlCos(a.s[1])), float32(svmlSin(a.s[1]))
	obs[4], obs[5] = float32(a.s[2]), float32(a.s[3])
}

// Step implements Env: reward −1 per step, 0 on the step that lifts the tip
// above the bar, which terminates the episode.
func (a *Acrobot) Step(action, obs []float32) (float64, bool, bool) {
	torque := float64(envs.DiscreteAction(action[0], 3) - 1)
	ns := acrobotRK4(a.s, torque)
	ns[0] = wrapAngle(ns[0])
	ns[1] = wrapAngle(ns[1])
	ns[2] = boundPy(ns[2], abMaxVel1)
	ns[3] = boundPy(ns[3], abMaxVel2)
	a.s = ns
	a.observe(obs)
	terminated := -svmlCos(ns[0])-svmlCos(ns[1]+ns[0]) > 1.0
	if terminated {
		return 0, true, false
	}
	return -1, false, false
}

// acrobotRK4 is Gymnasium's rk4 over [0, dt] for the augmented state
// (s, torque), whose torque derivative is 0.
func acrobotRK4(y0 [4]float64, torque float64) [4]float64 {
	step := func(k [4]float64, h float64) (y [4]float64) {
		for i := range y {
			y[i] = y0[i] + float64(h*k[i])
		}
		return y
	}
	k1 := acrobotDsdt(y0, torque)
	k2 := acrobotDsdt(step(k1, abDt2), torque)
	k3 := acrobotDsdt(step(k2, abDt2), torque)
	k4 := acrobotDsdt(step(k3, abDt), torque)
	var y [4]float64
	for i := range y {
		sum := float64(k1[i]+float64(2*k2[i])) + float64(2*k3[i]) + k4[i]
		y[i] = y0[i] + float64(abDt6*sum)
	}
	return y
}

// acrobotDsdt is Gymnasium's _dsdt with book dynamics, m1 = m2 = l1 = 1,
// lc1 = lc2 = 0.5, I1 = I2 = 1, with the unit factors dropped (they are
// exact) and every other operation in Python's order.
func acrobotDsdt(s [4]float64, a float64) [4]float64 {
	theta1, theta2, dtheta1, dtheta2 := s[0], s[1], s[2], s[3]
	c2, s2 := svmlCos(theta2), svmlSin(theta2)
	d1 := 0.25 + (1.25 + c2) + 1.0 + 1.0
	d2 := 0.25 + float64(0.5*c2) + 1.0
	phi2 := float64(abPhi2G * svmlCos(theta1+theta2-abHalfPi))
	phi1 := float64(float64(-0.5*powSquare(dtheta2))*s2) -
		float64(float64(dtheta2*dtheta1)*s2) +
		float64(abPhi1G*svmlCos(theta1-abHalfPi)) + phi2
	num := a + float64(float64(d2/d1)*phi1) - float64(float64(0.5*powSquare(dtheta1))*s2) - phi2
	ddtheta2 := num / (1.25 - powSquare(d2)/d1)
	ddtheta1 := -(float64(d2*ddtheta2) + phi1) / d1
	return [4]float64{dtheta1, dtheta2, ddtheta1, ddtheta2}
}

// wrapAngle is Gymnasium's wrap(x, −π, π): whole turns are subtracted one
// at a time, which rounds differently from a modulo. One RK4 step moves an
// angle by less than a turn or two; only a state set from outside can be
// far enough out for the loop to stall (Gymnasium would hang), so such
// angles, and infinities, take a remainder instead.
func wrapAngle(x float64) float64 {
	turn := abPi - -abPi
	if !(math.Abs(x) < 1e6) {
		return math.Remainder(x, turn)
	}
	for x > abPi {
		x -= turn
	}
	for x < -abPi {
		x += turn
	}
	return x
}

// boundPy is Gymnasium's bound(x, −m, m), min(max(x, −m), m) with Python's
// min and max, which keep a NaN x.
func boundPy(x, m float64) float64 {
	if -m > x {
		x = -m
	}
	if m < x {
		x = m
	}
	return x
}

// State implements Stateful: (θ1, θ2, θ̇1, θ̇2).
func (a *Acrobot) State() []float64 { return []float64{a.s[0], a.s[1], a.s[2], a.s[3]} }

// SetState implements Stateful.
func (a *Acrobot) SetState(s []float64) { copy(a.s[:], s) }

// Render implements Renderer: both links hanging from the pivot 'o' (elbow
// '+', tip '*'), the target line one link above the pivot, then the state.
func (a *Acrobot) Render() string {
	d, caption := a.Picture()
	return d + caption
}

// Picture implements envs.Picturer.
func (a *Acrobot) Picture() (drawing, caption string) {
	c := newCanvas(21, 11, 10, 5, 4, 2) // a link is 4 cells across, 2 down
	c.hline(1, '-')
	s1, c1 := math.Sincos(a.s[0])
	s12, c12 := math.Sincos(a.s[0] + a.s[1])
	ex, ey := s1, -c1 // θ1 = 0 hangs straight down
	tx, ty := ex+s12, ey-c12
	c.line(0, 0, ex, ey, '.')
	c.line(ex, ey, tx, ty, '.')
	c.plot(0, 0, 'o')
	c.plot(ex, ey, '+')
	c.plot(tx, ty, '*')
	return c.String(), fmt.Sprintf("θ1=%+.3f θ2=%+.3f  θ̇1=%+.3f θ̇2=%+.3f", a.s[0], a.s[1], a.s[2], a.s[3])
}

// Snapshot implements Snapshotter.
func (a *Acrobot) Snapshot() ([]byte, error) { return snapshotPhysics(a.State(), a.rng) }

// Restore implements Snapshotter.
func (a *Acrobot) Restore(b []byte) error { return restoreStateful(b, a, a.rng) }
