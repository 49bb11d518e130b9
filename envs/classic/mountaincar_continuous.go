package classic

import "github.com/agenttrainer/agenttrainer/envs"

func init() {
	envs.Register(envs.Spec{
		ID:              "MountainCarContinuous-v0",
		Description:     "drive an underpowered car to the flag with a continuous, costly throttle (Gymnasium classic control)",
		MaxEpisodeSteps: 999,
		New: func(args envs.Params) (envs.Env, error) {
			return noArgs(args, NewMountainCarContinuous())
		},
	})
}

// MountainCarContinuous is Gymnasium 0.29.1's MountainCarContinuous-v0,
// reproduced step for step. Gymnasium stores its state as a float32 array
// after every step (but float64 after reset), while the step itself runs in
// float64: NumPy 1.24 promotes float32 scalars mixed with Python numbers.
// The state is kept as float64 here and rounded to float32 where Gymnasium
// rounds it.
type MountainCarContinuous struct{ valleyCar }

const (
	mccPower        = 0.0015
	mccGoalPosition = 0.45
)

// NewMountainCarContinuous returns one seeded with 0 until its first Reset.
func NewMountainCarContinuous() *MountainCarContinuous {
	return &MountainCarContinuous{newValleyCar()}
}

// ActionSpace implements Env: one force in [−1, 1].
func (m *MountainCarContinuous) ActionSpace() envs.Space {
	return envs.Space{Kind: envs.Box, Dim: 1, Low: []float32{-1}, High: []float32{1}}
}

// Step implements Env. The force is the action clipped to [−1, 1], but the
// reward charges 0.1·action² on the action as given, as Gymnasium does; it
// adds 100 on reaching the flag.
func (m *MountainCarContinuous) Step(action, obs []float32) (float64, bool, bool) {
	a := action[0]
	if a != a {
		a = 0 // see clipAction
	}
	force := float64(clipAction(a, -1, 1))
	c := libmCos(3 * m.position)
	v := m.velocity + (float64(force*mccPower) - float64(mcGravity*c))
	v = max(-mcMaxSpeed, min(mcMaxSpeed, v))
	p := max(mcMinPosition, min(mcMaxPosition, m.position+v))
	if p == mcMinPosition && v < 0 {
		v = 0
	}
	terminated := p >= mccGoalPosition && v >= 0
	reward := 0.0
	if terminated {
		reward = 100
	}
	af := float64(a)
	reward -= float64(float64(af*af) * 0.1) // math.pow(a, 2) is exact for a float32 a
	m.position, m.velocity = float64(float32(p)), float64(float32(v))
	obs[0], obs[1] = float32(p), float32(v)
	return reward, terminated, false
}

// Render implements Renderer.
func (m *MountainCarContinuous) Render() string {
	d, caption := m.Picture()
	return d + caption
}

// Picture implements envs.Picturer.
func (m *MountainCarContinuous) Picture() (drawing, caption string) {
	return renderValley(m.position, m.velocity, mccGoalPosition)
}
