package classic

import (
	"fmt"
	"github.com/agenttrainer/agenttrainer/internal/nprand"
	"math"

	"github.com/agenttrainer/agenttrainer/envs"
)

func init() {
	envs.Register(envs.Spec{
		ID:              "Pendulum-v1",
		Description:     "swing a pendulum up and hold it upright with limited torque (Gymnasium classic control)",
		MaxEpisodeSteps: 200,
		New:             func(args envs.Params) (envs.Env, error) { return noArgs(args, NewPendulum()) },
	})
}

// Pendulum is Gymnasium 0.29.1's Pendulum-v1, reproduced step for step. The
// state (θ, θ̇) is float64 with θ left unwrapped; sin and cos are NumPy's
// (svmlSin/svmlCos), squares in the cost are glibc's pow (powSquare), and
// the float32 torque enters float64 arithmetic as NumPy 1.24 promotes it.
type Pendulum struct {
	theta, thetaDot float64
	lastU           float32 // the clipped torque of the last step, for Render
	rng             *nprand.Generator
}

const (
	pdMaxSpeed  = 8.0
	pdMaxTorque = 2.0
	pdDt        = 0.05
	// 3g/(2l) and 3/(ml²) with g = 10, m = l = 1, as Python folds them.
	pdGravityTerm = 15.0
	pdTorqueTerm  = 3.0
)

// NewPendulum returns a Pendulum seeded with 0 until its first Reset.
func NewPendulum() *Pendulum { return &Pendulum{rng: nprand.NewGenerator(0)} }

// ObservationSpace implements Env: (cos θ, sin θ, θ̇).
func (p *Pendulum) ObservationSpace() envs.Space {
	return envs.Space{Kind: envs.Box, Dim: 3,
		Low:  []float32{-1, -1, -pdMaxSpeed},
		High: []float32{1, 1, pdMaxSpeed}}
}

// ActionSpace implements Env: one torque in [−2, 2].
func (p *Pendulum) ActionSpace() envs.Space {
	return envs.Space{Kind: envs.Box, Dim: 1, Low: []float32{-pdMaxTorque}, High: []float32{pdMaxTorque}}
}

// Reset implements Env: θ uniform in [−π, π], θ̇ uniform in [−1, 1].
func (p *Pendulum) Reset(seed int64, obs []float32) {
	if seed != envs.NoSeed {
		p.rng.Seed(gymSeed(seed))
	}
	p.theta = uniform(p.rng, -math.Pi, math.Pi)
	p.thetaDot = uniform(p.rng, -1, 1)
	p.lastU = 0
	p.observe(obs)
}

func (p *Pendulum) observe(obs []float32) {
	obs[0], obs[1], obs[2] = float32(svmlCos(p.theta)), float32(svmlSin(p.theta)), float32(p.thetaDot)
}

// Step implements Env. The torque is clipped to ±2 before it is used or
// paid for, as Gymnasium does.
func (p *Pendulum) Step(action, obs []float32) (float64, bool, bool) {
	u := clipAction(action[0], -pdMaxTorque, pdMaxTorque)
	p.lastU = u
	uf := float64(u)
	cost := powSquare(angleNormalize(p.theta)) + float64(0.1*powSquare(p.thetaDot)) + float64(0.001*float64(uf*uf))

	acc := float64(pdGravityTerm*svmlSin(p.theta)) + float64(pdTorqueTerm*uf)
	newThetaDot := p.thetaDot + float64(acc*pdDt)
	newThetaDot = max(-pdMaxSpeed, min(pdMaxSpeed, newThetaDot))
	p.theta += float64(newThetaDot * pdDt)
	p.thetaDot = newThetaDot
	p.observe(obs)
	return -cost, false, false
}

// angleNormalize maps x into [−π, π) as ((x + π) mod 2π) − π with Python's
// floored modulo.
func angleNormalize(x float64) float64 {
	const twoPi = 2 * math.Pi
	m := math.Mod(x+math.Pi, twoPi)
	if m != 0 && m < 0 {
		m += twoPi
	}
	return m - math.Pi
}

// State implements Stateful: (θ, θ̇).
func (p *Pendulum) State() []float64 { return []float64{p.theta, p.thetaDot} }

// SetState implements Stateful.
func (p *Pendulum) SetState(s []float64) { p.theta, p.thetaDot = s[0], s[1] }

// Render implements Renderer: the rod from the pivot 'o' to its end '*'
// (up is θ = 0, θ grows counter-clockwise), then the angle, speed and last
// torque.
func (p *Pendulum) Render() string {
	d, caption := p.Picture()
	return d + caption
}

// Picture implements envs.Picturer.
func (p *Pendulum) Picture() (drawing, caption string) {
	c := newCanvas(19, 9, 9, 4, 8, 4) // the rod is 8 cells across, 4 down
	s, co := math.Sincos(p.theta)
	x, y := -s, co
	c.line(0, 0, x, y, '.')
	c.plot(0, 0, 'o')
	c.plot(x, y, '*')
	return c.String(), fmt.Sprintf("θ=%+.3f rad  θ̇=%+.3f  u=%+.2f", angleNormalize(p.theta), p.thetaDot, p.lastU)
}

// Snapshot implements Snapshotter.
func (p *Pendulum) Snapshot() ([]byte, error) { return snapshotPhysics(p.State(), p.rng) }

// Restore implements Snapshotter.
func (p *Pendulum) Restore(b []byte) error { return restoreStateful(b, p, p.rng) }
