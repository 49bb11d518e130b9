package minatar

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/internal/nprand"
	"github.com/agenttrainer/agenttrainer/internal/suggest"
)

// game is one MinAtar game: MinAtar's Env class for that game.
type game interface {
	reset()
	act(a int) (reward float64, terminal bool)
	// state writes the 10×10×C state into obs (zeroed first) through set.
	state(set func(y, x, c int))
	// snapshot and restore save and load the game's own variables.
	snapshot() ([]byte, error)
	restore([]byte) error
}

// gameInfo describes a game for registration, observation and rendering.
type gameInfo struct {
	name     string // MinAtar's module name
	title    string // the Gymnasium id's part: "SpaceInvaders"
	channels []string
	letters  string // one letter per channel, for Render
	minimal  []int  // minimal action set (actions 0..5)
	newGame  func(rng *nprand.RandomState, ramping bool) game
}

// actionNames are MinAtar's six actions.
var actionNames = []string{"noop", "left", "up", "right", "down", "fire"}

const (
	actNoop = iota
	actLeft
	actUp
	actRight
	actDown
	actFire
)

var games = []gameInfo{asterixInfo, breakoutInfo, freewayInfo, seaquestInfo, spaceInvadersInfo}

func init() {
	for _, g := range games {
		for _, v := range []struct {
			suffix  string
			minimal bool
			what    string
		}{{"-v0", false, "all 6 actions"}, {"-v1", true, "minimal action set"}} {
			g, v := g, v
			envs.Register(envs.Spec{
				ID:          "MinAtar/" + g.title + v.suffix,
				Description: fmt.Sprintf("MinAtar %s, 10×10×%d pixels, %s (MinAtar 1.0.15 exact)", g.title, len(g.channels), v.what),
				New: func(args envs.Params) (envs.Env, error) {
					return newFromArgs(g, v.minimal, args)
				},
			})
		}
	}
}

// argKeys are the env args a MinAtar game takes.
var argKeys = []string{"sticky_action_prob", "difficulty_ramping"}

func newFromArgs(g gameInfo, minimal bool, args envs.Params) (envs.Env, error) {
	if err := args.CheckArgs(argKeys...); err != nil {
		return nil, err
	}
	p, err := args.Float("sticky_action_prob", 0.1)
	if err == nil && !(p >= 0 && p <= 1) {
		err = fmt.Errorf("sticky_action_prob must be a probability in [0, 1], got %v", p)
	}
	if err != nil {
		return nil, &envs.ArgsError{Err: err}
	}
	ramp, err := args.Bool("difficulty_ramping", true)
	if err != nil {
		return nil, &envs.ArgsError{Err: err}
	}
	return New(g.title, Options{MinimalActions: minimal, StickyActionProb: p, DifficultyRamping: ramp})
}

// Options configure a game; the zero value is not MinAtar's default (use
// DefaultOptions).
type Options struct {
	MinimalActions    bool    // the -v1 action set instead of all six
	StickyActionProb  float64 // MinAtar's default 0.1
	DifficultyRamping bool    // MinAtar's default true
}

// DefaultOptions are MinAtar's defaults with all six actions (-v0).
func DefaultOptions() Options { return Options{StickyActionProb: 0.1, DifficultyRamping: true} }

// Env is one MinAtar game behind MinAtar's Environment and Gymnasium
// wrapper: sticky actions, the shared random stream, the action set.
type Env struct {
	info       gameInfo
	g          game
	rng        *nprand.RandomState
	sticky     float64
	lastAction int
	actionSet  []int
	obs        []float32 // the last observation, for Render
}

// New builds the game named title ("Breakout", "SpaceInvaders", …) with
// opts. The random stream is RandomState(0) until the first seeded Reset
// (MinAtar starts unseeded).
func New(title string, opts Options) (*Env, error) {
	var titles []string
	for _, g := range games {
		if g.title == title {
			rng := nprand.NewRandomState(0)
			e := &Env{info: g, rng: rng, sticky: opts.StickyActionProb, g: g.newGame(rng, opts.DifficultyRamping)}
			e.actionSet = []int{0, 1, 2, 3, 4, 5}
			if opts.MinimalActions {
				e.actionSet = g.minimal
			}
			e.obs = make([]float32, 100*len(g.channels))
			e.observe(e.obs)
			return e, nil
		}
		titles = append(titles, g.title)
	}
	return nil, fmt.Errorf("no MinAtar game %q (there are %s)%s", title, strings.Join(titles, ", "),
		suggest.DidYouMean(suggest.Names(title, titles)))
}

// ObservationSpace implements envs.Env: 10·10·C values in {0, 1}, laid out
// as the package doc says, with the image shape (10, 10, C).
func (e *Env) ObservationSpace() envs.Space {
	n := 100 * len(e.info.channels)
	lo, hi := make([]float32, n), make([]float32, n)
	for i := range hi {
		hi[i] = 1
	}
	return envs.Space{Kind: envs.Box, Dim: n, Low: lo, High: hi, Shape: []int{10, 10, len(e.info.channels)}}
}

// ActionSpace implements envs.Env: 6 actions (-v0) or the minimal set (-v1).
func (e *Env) ActionSpace() envs.Space { return envs.Space{Kind: envs.Discrete, N: len(e.actionSet)} }

// cellColours are the channels' colours in order (xterm-256): distinct on
// dark and light terminals; trails and speeds in quieter tones.
var cellColours = []int{214, 196, 244, 226, 45, 201, 46, 33, 208, 99}

// Colours implements envs.Colourer: a colour for each channel's letter.
func (e *Env) Colours() map[rune]int {
	out := make(map[rune]int, len(e.info.letters))
	for k, l := range e.info.letters {
		out[l] = cellColours[k%len(cellColours)]
	}
	return out
}

// Channels names the observation's channels in order.
func (e *Env) Channels() []string { return slices.Clone(e.info.channels) }

// Reset implements envs.Env: a seed makes a new RandomState(seed) (seeds
// are taken modulo 2^32; NumPy refuses others), then the game resets.
func (e *Env) Reset(seed int64, obs []float32) {
	if seed != envs.NoSeed {
		e.rng.Seed(uint32(seed))
	}
	e.g.reset()
	e.observe(obs)
}

// Step implements envs.Env. MinAtar has no truncation of its own.
func (e *Env) Step(action, obs []float32) (float64, bool, bool) {
	i := int(action[0])
	if i < 0 || i >= len(e.actionSet) {
		i = 0 // outside the action space: the agent's bug, played as noop
	}
	a := e.actionSet[i]
	if e.rng.RandomSample() < e.sticky {
		a = e.lastAction
	}
	e.lastAction = a
	r, term := e.g.act(a)
	e.observe(obs)
	return r, term, false
}

func (e *Env) observe(obs []float32) {
	c := len(e.info.channels)
	clear(obs)
	e.g.state(func(y, x, ch int) {
		if x < 0 { // Python's negative index
			x += 10
		}
		obs[(y*10+x)*c+ch] = 1
	})
	if &obs[0] != &e.obs[0] {
		copy(e.obs, obs)
	}
}

// Render implements envs.Renderer: the grid, one letter per cell (the
// highest channel set there, '.' for none), and a legend.
func (e *Env) Render() string {
	d, caption := e.Picture()
	return d + caption
}

// Picture implements envs.Picturer: the grid, and the legend as caption.
func (e *Env) Picture() (drawing, caption string) {
	c := len(e.info.channels)
	var b strings.Builder
	for y := range 10 {
		for x := range 10 {
			ch := byte('.')
			for k := c - 1; k >= 0; k-- {
				if e.obs[(y*10+x)*c+k] != 0 {
					ch = e.info.letters[k]
					break
				}
			}
			if x > 0 {
				b.WriteByte(' ')
			}
			b.WriteByte(ch)
		}
		b.WriteByte('\n')
	}
	drawing = b.String()
	b.Reset()
	line := 0
	for k, name := range e.info.channels {
		item := fmt.Sprintf("%c %s", e.info.letters[k], name)
		if line > 0 && line+2+len(item) > 60 {
			b.WriteByte('\n')
			line = 0
		} else if line > 0 {
			b.WriteString("  ")
			line += 2
		}
		b.WriteString(item)
		line += len(item)
	}
	return drawing, b.String()
}

type envSnapshot struct {
	Game       json.RawMessage `json:"game"`
	RNG        []byte          `json:"rng"`
	LastAction int             `json:"last_action"`
}

// Snapshot implements envs.Snapshotter: the game, the random stream and
// the previous action.
func (e *Env) Snapshot() ([]byte, error) {
	g, err := e.g.snapshot()
	if err != nil {
		return nil, err
	}
	r, err := e.rng.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return json.Marshal(envSnapshot{Game: g, RNG: r, LastAction: e.lastAction})
}

// Restore implements envs.Snapshotter.
func (e *Env) Restore(b []byte) error {
	var s envSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("bad MinAtar snapshot: %v", err)
	}
	if len(s.Game) == 0 {
		return errors.New("MinAtar snapshot has no game state: was it taken from another environment?")
	}
	if err := e.rng.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("MinAtar snapshot: %w", err)
	}
	if err := e.g.restore(s.Game); err != nil {
		return fmt.Errorf("MinAtar %s snapshot: %v", e.info.title, err)
	}
	e.lastAction = s.LastAction
	e.observe(e.obs)
	return nil
}

// jsonSnapshot and jsonRestore serve games whose variables are exported
// fields (the random stream is not one of them).
func jsonSnapshot(g any) ([]byte, error) { return json.Marshal(g) }

func jsonRestore(b []byte, g any) error {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	return d.Decode(g)
}
