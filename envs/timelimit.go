package envs

// TimeLimit truncates episodes after a fixed number of steps, as Gymnasium's
// TimeLimit wrapper does: a step that both terminates and reaches the limit
// reports both flags.
type TimeLimit struct {
	Env
	max, elapsed int
}

// NewTimeLimit wraps e so that episodes last at most max steps.
func NewTimeLimit(e Env, max int) *TimeLimit { return &TimeLimit{Env: e, max: max} }

// Reset implements Env.
func (t *TimeLimit) Reset(seed int64, obs []float32) {
	t.elapsed = 0
	t.Env.Reset(seed, obs)
}

// Step implements Env.
func (t *TimeLimit) Step(action, obs []float32) (float64, bool, bool) {
	r, term, trunc := t.Env.Step(action, obs)
	t.elapsed++
	if t.elapsed >= t.max {
		trunc = true
	}
	return r, term, trunc
}

// Unwrap returns the wrapped environment.
func (t *TimeLimit) Unwrap() Env { return t.Env }

// Render draws the wrapped environment when it can.
func (t *TimeLimit) Render() string {
	if r, ok := t.Env.(Renderer); ok {
		return r.Render()
	}
	return ""
}

// Picture splits the wrapped environment's drawing from its caption.
func (t *TimeLimit) Picture() (drawing, caption string) {
	d, c, _ := Picture(t.Env)
	return d, c
}
