package classic

import (
	"fmt"
	"github.com/agenttrainer/agenttrainer/internal/nprand"
	"math"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
)

func init() {
	envs.Register(envs.Spec{
		ID:              "CartPole-v1",
		Description:     "balance a pole on a cart by pushing it left or right (Gymnasium classic control)",
		MaxEpisodeSteps: 500,
		New:             func(args envs.Params) (envs.Env, error) { return noArgs(args, NewCartPole()) },
	})
}

// CartPole is Gymnasium 0.29.1's CartPole-v1 (Barto, Sutton and Anderson's
// cart-pole), reproduced step for step: the physics runs in float64 with the
// same association order as the Python source, observations are float32.
type CartPole struct {
	x, xDot, theta, thetaDot float64
	stepsBeyondTerminated    int // −1 until the episode terminates
	rng                      *nprand.Generator
}

const (
	cpGravity        = 9.8
	cpMassCart       = 1.0
	cpMassPole       = 0.1
	cpTotalMass      = cpMassPole + cpMassCart
	cpLength         = 0.5 // half the pole's length
	cpPoleMassLength = cpMassPole * cpLength
	cpForceMag       = 10.0
	cpTau            = 0.02
	cpXThreshold     = 2.4
)

var cpThetaThreshold = 12 * 2 * math.Pi / 360

// NewCartPole returns a CartPole seeded with 0 until its first Reset.
func NewCartPole() *CartPole {
	return &CartPole{rng: nprand.NewGenerator(0), stepsBeyondTerminated: -1}
}

// ObservationSpace implements Env.
func (c *CartPole) ObservationSpace() envs.Space {
	inf := float32(math.MaxFloat32)
	th := float32(cpThetaThreshold * 2)
	return envs.Space{Kind: envs.Box, Dim: 4,
		Low:  []float32{-cpXThreshold * 2, -inf, -th, -inf},
		High: []float32{cpXThreshold * 2, inf, th, inf}}
}

// ActionSpace implements Env: 0 pushes left, 1 pushes right.
func (c *CartPole) ActionSpace() envs.Space { return envs.Space{Kind: envs.Discrete, N: 2} }

// Reset implements Env: each state variable starts uniform in ±0.05,
// np_random.uniform(-0.05, 0.05, size=(4,)) as Gymnasium draws it.
func (c *CartPole) Reset(seed int64, obs []float32) {
	if seed != envs.NoSeed {
		c.rng.Seed(gymSeed(seed))
	}
	u := func() float64 { return uniform(c.rng, -0.05, 0.05) }
	c.x, c.xDot, c.theta, c.thetaDot = u(), u(), u(), u()
	c.stepsBeyondTerminated = -1
	c.observe(obs)
}

func (c *CartPole) observe(obs []float32) {
	obs[0], obs[1], obs[2], obs[3] = float32(c.x), float32(c.xDot), float32(c.theta), float32(c.thetaDot)
}

// Step implements Env.
func (c *CartPole) Step(action, obs []float32) (float64, bool, bool) {
	force := -cpForceMag
	if action[0] == 1 {
		force = cpForceMag
	}
	sinTheta, cosTheta := libmSin(c.theta), libmCos(c.theta)
	temp := (force + cpPoleMassLength*(c.thetaDot*c.thetaDot)*sinTheta) / cpTotalMass
	thetaAcc := (cpGravity*sinTheta - cosTheta*temp) /
		(cpLength * (4.0/3.0 - cpMassPole*(cosTheta*cosTheta)/cpTotalMass))
	xAcc := temp - cpPoleMassLength*thetaAcc*cosTheta/cpTotalMass
	c.x += cpTau * c.xDot
	c.xDot += cpTau * xAcc
	c.theta += cpTau * c.thetaDot
	c.thetaDot += cpTau * thetaAcc
	c.observe(obs)

	terminated := c.x < -cpXThreshold || c.x > cpXThreshold ||
		c.theta < -cpThetaThreshold || c.theta > cpThetaThreshold
	reward := 1.0
	if terminated {
		// Gymnasium pays the terminating step and nothing for steps taken
		// after it (it also warns about them).
		c.stepsBeyondTerminated++
		if c.stepsBeyondTerminated > 0 {
			reward = 0
		}
	}
	return reward, terminated, false
}

// State implements Stateful: (x, ẋ, θ, θ̇).
func (c *CartPole) State() []float64 { return []float64{c.x, c.xDot, c.theta, c.thetaDot} }

// SetState implements Stateful.
func (c *CartPole) SetState(s []float64) { c.x, c.xDot, c.theta, c.thetaDot = s[0], s[1], s[2], s[3] }

// Snapshot implements Snapshotter.
func (c *CartPole) Snapshot() ([]byte, error) {
	return snapshotPhysics(c.State(), c.rng, int64(c.stepsBeyondTerminated))
}

// Restore implements Snapshotter.
func (c *CartPole) Restore(b []byte) error {
	s, err := restorePhysics(b, 4, 1, c.rng)
	if err != nil {
		return err
	}
	c.SetState(s.State)
	c.stepsBeyondTerminated = int(s.Extra[0])
	return nil
}

// Render implements Renderer: the track as a line with the cart and the
// pole's lean drawn above it.
func (c *CartPole) Render() string {
	d, caption := c.Picture()
	return d + caption
}

// Picture implements envs.Picturer.
func (c *CartPole) Picture() (drawing, caption string) {
	const width = 41
	pos := int(math.Round((c.x + cpXThreshold) / (2 * cpXThreshold) * (width - 1)))
	pos = max(0, min(width-1, pos))
	lean := int(math.Round(c.theta / cpThetaThreshold * 3))
	lean = max(-3, min(3, lean))
	var b strings.Builder
	for row := 3; row >= 1; row-- {
		line := []rune(strings.Repeat(" ", width))
		col := pos + lean*row/3
		if col >= 0 && col < width {
			ch := '|'
			if lean > 0 {
				ch = '/'
			} else if lean < 0 {
				ch = '\\'
			}
			line[col] = ch
		}
		b.WriteString(strings.TrimRight(string(line), " ") + "\n")
	}
	track := []rune(strings.Repeat("-", width))
	track[pos] = '#'
	b.WriteString(string(track) + "\n")
	return b.String(), fmt.Sprintf("x=%+.2f  θ=%+.3f rad", c.x, c.theta)
}
