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
		ID:              "MountainCar-v0",
		Description:     "rock an underpowered car out of a valley to the flag (Gymnasium classic control)",
		MaxEpisodeSteps: 200,
		New:             func(args envs.Params) (envs.Env, error) { return noArgs(args, NewMountainCar()) },
	})
}

// MountainCar is Gymnasium 0.29.1's MountainCar-v0, reproduced step for
// step: float64 state, Python's math.cos (glibc's, replayed by libmCos),
// float32 observations.
type MountainCar struct{ valleyCar }

// valleyCar is what both mountain cars share: the car's state, how an
// episode starts, and saving and restoring it.
type valleyCar struct {
	position, velocity float64
	rng                *nprand.Generator
}

func newValleyCar() valleyCar { return valleyCar{rng: nprand.NewGenerator(0)} }

const (
	mcMinPosition  = -1.2
	mcMaxPosition  = 0.6
	mcMaxSpeed     = 0.07
	mcGoalPosition = 0.5
	mcForce        = 0.001
	mcGravity      = 0.0025
)

// NewMountainCar returns a MountainCar seeded with 0 until its first Reset.
func NewMountainCar() *MountainCar { return &MountainCar{newValleyCar()} }

// ObservationSpace implements Env: (position, velocity).
func (m *valleyCar) ObservationSpace() envs.Space {
	return envs.Space{Kind: envs.Box, Dim: 2,
		Low:  []float32{mcMinPosition, -mcMaxSpeed},
		High: []float32{mcMaxPosition, mcMaxSpeed}}
}

// ActionSpace implements Env: 0 pushes left, 1 coasts, 2 pushes right.
func (m *MountainCar) ActionSpace() envs.Space { return envs.Space{Kind: envs.Discrete, N: 3} }

// Reset implements Env: the car starts at rest, uniform in [−0.6, −0.4].
func (m *valleyCar) Reset(seed int64, obs []float32) {
	if seed != envs.NoSeed {
		m.rng.Seed(gymSeed(seed))
	}
	m.position, m.velocity = uniform(m.rng, -0.6, -0.4), 0
	obs[0], obs[1] = float32(m.position), float32(m.velocity)
}

// Step implements Env.
func (m *MountainCar) Step(action, obs []float32) (float64, bool, bool) {
	a := envs.DiscreteAction(action[0], 3)
	c := libmCos(3 * m.position)
	v := m.velocity + (float64(float64(a-1)*mcForce) + float64(c*-mcGravity))
	v = max(-mcMaxSpeed, min(mcMaxSpeed, v))
	p := max(mcMinPosition, min(mcMaxPosition, m.position+v))
	if p == mcMinPosition && v < 0 {
		v = 0 // an inelastic wall
	}
	m.position, m.velocity = p, v
	obs[0], obs[1] = float32(p), float32(v)
	return -1, p >= mcGoalPosition && v >= 0, false
}

// State implements Stateful: (position, velocity).
func (m *valleyCar) State() []float64 { return []float64{m.position, m.velocity} }

// SetState implements Stateful.
func (m *valleyCar) SetState(s []float64) { m.position, m.velocity = s[0], s[1] }

// Render implements Renderer.
func (m *MountainCar) Render() string {
	d, caption := m.Picture()
	return d + caption
}

// Picture implements envs.Picturer.
func (m *MountainCar) Picture() (drawing, caption string) {
	return renderValley(m.position, m.velocity, mcGoalPosition)
}

// renderValley draws both mountain cars: the hill's height sin(3x) sampled
// over the track, the car 'C' on it and the flag 'F' at the goal, then the
// numbers.
func renderValley(position, velocity, goal float64) (drawing, caption string) {
	const width, height = 37, 5
	col := func(x float64) int {
		c := (x - mcMinPosition) / (mcMaxPosition - mcMinPosition) * (width - 1)
		if !(c >= 0) { // also NaN
			return 0
		}
		return min(width-1, int(math.Round(c)))
	}
	row := func(x float64) int { // 0 is the top line
		return int(math.Round((1 - math.Sin(3*x)) / 2 * (height - 1)))
	}
	grid := make([][]rune, height)
	for i := range grid {
		grid[i] = []rune(strings.Repeat(" ", width))
	}
	for c := 0; c < width; c++ {
		x := mcMinPosition + float64(c)/(width-1)*(mcMaxPosition-mcMinPosition)
		grid[row(x)][c] = '.'
	}
	gx := mcMinPosition + float64(col(goal))/(width-1)*(mcMaxPosition-mcMinPosition)
	grid[row(gx)][col(goal)] = 'F'
	cx := mcMinPosition + float64(col(position))/(width-1)*(mcMaxPosition-mcMinPosition)
	grid[row(cx)][col(position)] = 'C'
	var b strings.Builder
	for _, line := range grid {
		b.WriteString(strings.TrimRight(string(line), " ") + "\n")
	}
	return b.String(), fmt.Sprintf("x=%+.3f  v=%+.4f", position, velocity)
}

// Snapshot implements Snapshotter.
func (m *valleyCar) Snapshot() ([]byte, error) { return snapshotPhysics(m.State(), m.rng) }

// Restore implements Snapshotter.
func (m *valleyCar) Restore(b []byte) error { return restoreStateful(b, m, m.rng) }
