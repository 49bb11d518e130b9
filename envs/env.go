// Package envs is the environment core: the Env interface with Gymnasium
// semantics, observation and action spaces, the registry, the time-limit
// wrapper, snapshots and a vectorised runner with auto-reset. The worlds
// themselves live in subpackages (classic, minatar, frozenlake, remote) that register
// in init.
package envs

import (
	"fmt"
	"slices"
	"strings"
)

// SpaceKind says whether a space is a set of choices or a box of reals.
type SpaceKind uint8

const (
	Discrete SpaceKind = iota
	Box
)

func (k SpaceKind) String() string {
	if k == Discrete {
		return "discrete"
	}
	return "continuous"
}

// Space describes observations or actions. A Discrete space holds the
// integers 0…N−1; a Box holds float vectors of length Dim bounded by Low and
// High (±Inf where unbounded).
//
// A Box that is an image says so with Shape: (height, width, channels),
// whose product is Dim, the vector holding the image channel-last (the value
// of channel c at row y and column x at index (y·width + x)·channels + c).
// Convolutional agents read it; everything else sees the flat vector. Nil
// for vectors that are not images.
type Space struct {
	Kind      SpaceKind
	N         int // Discrete: number of choices
	Dim       int // Box: vector length
	Low, High []float32
	Shape     []int // Box: (H, W, C) of an image observation, or nil
}

// Size is the number of floats a value of the space takes in a vector: one
// for a discrete action, Dim for a box.
func (s Space) Size() int {
	if s.Kind == Discrete {
		return 1
	}
	return s.Dim
}

// Clip returns actions (rows of Size values) as an environment of the
// space takes them: a box's clipped to its bounds, in scratch (a Gaussian
// policy samples beyond them; the rollout keeps and scores the unclipped
// sample, as CleanRL's ClipAction wrapper does), others as they are.
func (s Space) Clip(actions, scratch []float32) []float32 {
	if s.Kind != Box || len(s.Low) < s.Dim || len(s.High) < s.Dim {
		return actions
	}
	for i, a := range actions {
		j := i % s.Dim
		scratch[i] = min(max(a, s.Low[j]), s.High[j])
	}
	return scratch[:len(actions)]
}

func (s Space) String() string {
	if s.Kind == Discrete {
		return fmt.Sprintf("Discrete(%d)", s.N)
	}
	return fmt.Sprintf("Box(%d)", s.Dim)
}

// NoSeed asks Reset to go on with the environment's own random stream
// instead of re-seeding it (Gymnasium's reset(seed=None)).
const NoSeed int64 = -1

// Env is one environment with Gymnasium semantics. Observations are written
// into caller-owned buffers so that stepping allocates nothing. A discrete
// action is passed as action[0] holding the integer index.
type Env interface {
	ObservationSpace() Space
	ActionSpace() Space
	// Reset starts an episode, re-seeding the environment's random stream
	// first unless seed is NoSeed, and writes the first observation.
	Reset(seed int64, obs []float32)
	// Step applies action, writes the next observation, and reports the
	// reward and whether the episode terminated (a terminal state) or was
	// truncated (a time limit or other cut that is not a terminal state).
	Step(action []float32, obs []float32) (reward float64, terminated, truncated bool)
}

// Renderer is implemented by environments that can draw themselves as text.
type Renderer interface {
	Render() string
}

// Picturer is implemented by Renderers that can hand over their drawing and
// its caption (numbers, a legend) apart, so a viewer can scale the drawing
// and leave the caption as text. Render is the drawing followed by the
// caption; the drawing ends in a newline.
type Picturer interface {
	Picture() (drawing, caption string)
}

// Colourer is implemented by Renderers whose drawing is cells of a few
// kinds (MinAtar's channels): the xterm-256 colour of each kind's letter, for
// viewers that can colour them (the legend in the caption uses the same
// letters).
type Colourer interface {
	Colours() map[rune]int
}

// Colours are e's cell colours (unwrapping wrappers), or nil.
func Colours(e Env) map[rune]int {
	if c, ok := unwrapTo[Colourer](e); ok {
		return c.Colours()
	}
	return nil
}

// unwrapTo finds the first of e and the environments it wraps (TimeLimit's
// Unwrap) that is a T.
func unwrapTo[T any](e Env) (T, bool) {
	for {
		if t, ok := e.(T); ok {
			return t, true
		}
		u, ok := e.(interface{ Unwrap() Env })
		if !ok {
			var zero T
			return zero, false
		}
		e = u.Unwrap()
	}
}

// Paint colours the letters of text that colours names with paint (an
// ANSI escape, a lipgloss style); in a caption (legend) only a letter that
// starts an item ("= paddle  o ball") is painted.
func Paint(text string, colours map[rune]int, legend bool, paint func(s string, colour int) string) string {
	if len(colours) == 0 {
		return text
	}
	var b strings.Builder
	rs := []rune(text)
	for i, r := range rs {
		c, ok := colours[r]
		if ok && legend {
			ok = (i == 0 || rs[i-1] == '\n' || (i >= 2 && rs[i-1] == ' ' && rs[i-2] == ' ')) && i+1 < len(rs) && rs[i+1] == ' '
		}
		if ok {
			b.WriteString(paint(string(r), c))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Picture splits e's rendering into drawing and caption; a Renderer that is
// no Picturer is all drawing. ok is false when e cannot draw itself.
func Picture(e Env) (drawing, caption string, ok bool) {
	if p, is := e.(Picturer); is {
		d, c := p.Picture()
		return d, c, d != "" || c != ""
	}
	if r, is := e.(Renderer); is {
		d := r.Render()
		return d, "", d != ""
	}
	return "", "", false
}

// SuccessReporter is implemented by environments whose episodes can succeed
// or fail (FrozenLake reaching the goal, say); it is asked when an episode ends.
type SuccessReporter interface {
	Succeeded() bool
}

// StatsReporter is implemented by environments that report figures of their
// own when an episode ends (PufferLib's infos: a score, a distance, …); it
// is asked before the episode's automatic reset. The trainer averages each
// figure over an iteration's episodes and records it as env/<name> in every
// sink of the metric registry: metrics.jsonl, TensorBoard, the CSV export,
// the progress line and the app. A name is letters, digits, '_', '.', '-'
// and '/'.
type StatsReporter interface {
	EpisodeStats(report func(name string, value float64))
}

// Stateful is implemented by environments whose internal state can be read
// and set; the golden tests replay recorded Gymnasium trajectories with it.
type Stateful interface {
	State() []float64
	SetState(state []float64)
}

// Params are free-form constructor arguments (`env.args` in the config, or
// a dataset row).
type Params map[string]any

// Spec describes a registered environment.
type Spec struct {
	ID              string
	Description     string // one line, shown by `agenttrainer list` and the picker
	MaxEpisodeSteps int    // 0: no time limit
	// New builds one instance from its arguments.
	New func(args Params) (Env, error)
	// NewBatch, when set, builds all n sub-environments together as one
	// vector (a remote server steps them with one message); users of the
	// registry call it instead of New n times. New then says why the
	// environment cannot be built one at a time.
	NewBatch func(n int, args Params) (*Vector, error)
}

// ArgsError says that an environment's arguments (env.args, a task row)
// are wrong, as opposed to a failure of the world itself (a server that
// cannot be reached): callers report the first as a configuration mistake.
type ArgsError struct{ Err error }

func (e *ArgsError) Error() string { return e.Err.Error() }
func (e *ArgsError) Unwrap() error { return e.Err }

var registry = map[string]Spec{}

// Register adds an environment to the registry; it panics on a duplicate or
// empty ID since that is a programming error.
func Register(s Spec) {
	if s.ID == "" || s.New == nil {
		panic("envs: Register needs an ID and a constructor")
	}
	if _, dup := registry[s.ID]; dup {
		panic("envs: duplicate registration of " + s.ID)
	}
	registry[s.ID] = s
}

// Lookup returns the spec of a registered environment.
func Lookup(id string) (Spec, bool) {
	s, ok := registry[id]
	return s, ok
}

// IDs returns the registered environment IDs in sorted order.
func IDs() []string {
	ids := make([]string, 0, len(registry))
	for id := range registry {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Make builds a registered environment, wrapped in its time limit.
func Make(id string, args Params) (Env, error) {
	s, ok := registry[id]
	if !ok {
		return nil, fmt.Errorf("unknown environment %q (registered: %s)", id, strings.Join(IDs(), ", "))
	}
	e, err := s.New(args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	if s.MaxEpisodeSteps > 0 {
		e = NewTimeLimit(e, s.MaxEpisodeSteps)
	}
	return e, nil
}
