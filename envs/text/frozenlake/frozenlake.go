// Package frozenlake is rLLM's text FrozenLake (rllm-org/rllm
// rllm/environments/frozenlake/frozenlake.py at commit 7982c508, on
// Gymnasium 0.29.1): the map a task row {seed, size, p} draws with NumPy's
// stream, the text observation its render writes, actions 0–4 with the
// invalid action 0, Gymnasium's moves and rewards, and action_is_effective.
// Registered as TextFrozenLake-v0; rLLM's FrozenLake agent
// (agents/lm/textagent) plays it.
package frozenlake

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	numeric "github.com/agenttrainer/agenttrainer/envs/frozenlake"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/internal/nprand"
)

// ID is the registered name.
const ID = "TextFrozenLake-v0"

func init() {
	text.Register(text.Spec{
		ID:          ID,
		Description: "rLLM's FrozenLake in words: the grid as text, the move in ``` ``` (rLLM's maps, bit for bit)",
		New:         func(task envs.Params) (text.Env, error) { return New(task) },
		Agent:       "frozenlake",
		MaxTurns:    DefaultMaxTurns,
		Columns:     Columns,
		Generate:    Generate,
		Key:         Key,
	})
}

// Columns are the columns of a task file, as rLLM's prepare_frozenlake_data
// writes them plus max_steps.
var Columns = []string{"seed", "size", "p", "max_steps", "is_slippery"}

// DefaultMaxTurns is the turn limit without a task's max_steps (rLLM's
// MultiTurnWorkflow max_steps default).
const DefaultMaxTurns = 5

// Actions as rLLM numbers them.
const (
	Invalid = iota // the agent's answer named no move
	Left
	Down
	Right
	Up
)

// ActionNames are the words rLLM's agent reads in ``` ```, by action.
var ActionNames = [5]string{"None", "Left", "Down", "Right", "Up"}

// maxSize bounds a lake: a 64×64 text grid is 16 kB, beyond any prompt a
// model is trained on.
const maxSize = 64

// Env is one task. rLLM's quirks are kept: the map is drawn with the
// validity search bounded by 5 steps whatever the row's max_steps (its
// reset rebuilds the environment without max_steps, resetting the module's
// MAX_STEPS to 5); a step on the goal pays 1 again and says done; an
// invalid action pays 0 and is never done, even in a hole.
type Env struct {
	size     int
	p        float64
	seed     int64
	slippery bool
	maxSteps int // the task's turn limit (0: none given)

	desc  []byte // size² tiles, row-major: 'S', 'F', 'H', 'G'
	pos   int
	rng   *nprand.Generator // Gymnasium's np_random after reset(seed)
	ready bool
}

// New builds the environment of a task row (rLLM's from_dict): seed, size
// and p are required (from_dict reads them without defaults); max_steps
// (the episode's turn limit) and is_slippery are optional; uid, index and
// question are accepted and ignored.
func New(task envs.Params) (*Env, error) {
	e := &Env{}
	if err := e.configure(task, true); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Env) configure(task envs.Params, first bool) error {
	if err := task.CheckArgs(Columns...); err != nil {
		return err
	}
	if first {
		for _, k := range []string{"seed", "size", "p"} {
			if _, ok := task[k]; !ok {
				return &envs.ArgsError{Err: fmt.Errorf("a FrozenLake task needs seed, size and p (rLLM's columns); %s is missing", k)}
			}
		}
	}
	size, err := task.Int("size", int64(e.size))
	if err != nil {
		return err
	}
	if size < 2 || size > maxSize {
		return fmt.Errorf("size must be an integer from 2 to %d, got %d", maxSize, size)
	}
	p, err := task.Float("p", e.p)
	if err != nil {
		return err
	}
	if !(p >= 0) { // NaN too
		return fmt.Errorf("p must be a probability in [0, 1] (of a frozen tile), got %s", envs.DescribeArg(p))
	}
	seed, err := task.Int("seed", e.seed)
	if err != nil {
		return err
	}
	if seed < 0 {
		return fmt.Errorf("seed must be a non-negative integer (Gymnasium's seeding refuses others), got %d", seed)
	}
	slippery, err := task.Bool("is_slippery", e.slippery)
	if err != nil {
		return err
	}
	maxSteps, err := task.Int("max_steps", int64(e.maxSteps))
	if err != nil {
		return err
	}
	if maxSteps < 0 || maxSteps > 1<<20 {
		return fmt.Errorf("max_steps must be a positive integer (the episode's turn limit), got %d", maxSteps)
	}
	rows, _, _, err := numeric.RLLMMap(int(size), p, seed, numeric.RLLMDefaultMaxSteps)
	if err != nil {
		return err
	}
	e.size, e.p, e.seed, e.slippery, e.maxSteps = int(size), p, seed, slippery, int(maxSteps)
	e.desc = []byte(strings.Join(rows, ""))
	e.pos = strings.IndexByte(string(e.desc), 'S')
	e.ready = false
	return nil
}

// Reset implements text.Env: rLLM's reset(task) rebuilds the map from the
// task's size, p, seed and is_slippery (the current ones where it says
// none), then Gymnasium's reset(seed) puts the player on S.
func (e *Env) Reset(task envs.Params) (string, text.Info, error) {
	if task != nil {
		if err := e.configure(task, false); err != nil {
			return "", nil, err
		}
	}
	e.rng = nprand.NewGenerator(uint64(e.seed))
	// Gymnasium draws the start from the initial-state distribution (S
	// alone): one random() that moves the stream the slippery steps use.
	e.rng.Random()
	e.pos = strings.IndexByte(string(e.desc), 'S')
	e.ready = true
	return e.render(), text.Info{}, nil
}

// Step implements text.Env. action is the agent's action string: "0" (or
// "") is the invalid action, "1"–"4" Left, Down, Right, Up; anything else is
// an error, as int() or the action table raise one in rLLM.
func (e *Env) Step(action string) (string, float64, bool, text.Info, error) {
	if !e.ready {
		return "", 0, false, nil, fmt.Errorf("step before reset")
	}
	if e.desc[e.pos] == 'G' {
		return e.render(), 1, true, text.Info{"action_is_effective": false}, nil
	}
	a := Invalid
	if s := strings.TrimSpace(action); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < Invalid || n > Up {
			return "", 0, false, nil, fmt.Errorf("action %q is not 0 (invalid), 1 (Left), 2 (Down), 3 (Right) or 4 (Up)", truncate(action, 40))
		}
		a = n
	}
	if a == Invalid {
		return e.render(), 0, false, text.Info{"action_is_effective": false}, nil
	}
	prev := e.pos
	reward, done := e.gymStep(a - 1)
	return e.render(), reward, done, text.Info{"action_is_effective": prev != e.pos}, nil
}

// gymStep is Gymnasium's FrozenLakeEnv.step for its action (0 left, 1 down,
// 2 right, 3 up): one random() picks the transition; on a slippery lake the
// move goes (a−1, a, a+1) mod 4 with probability 1/3 each; a hole or the
// goal keeps the player and ends the episode again.
func (e *Env) gymStep(a int) (float64, bool) {
	u := e.rng.Random()
	if t := e.desc[e.pos]; t == 'H' || t == 'G' {
		return 0, true
	}
	if e.slippery {
		// np.argmax(np.cumsum([1/3, 1/3, 1/3]) > u)
		third := 1.0 / 3.0
		switch c0, c1 := third, third+third; {
		case c0 > u:
			a = (a + 3) % 4
		case c1 > u:
		default:
			a = (a + 1) % 4
		}
	}
	e.pos = move(e.pos, a, e.size)
	switch e.desc[e.pos] {
	case 'G':
		return 1, true
	case 'H':
		return 0, true
	}
	return 0, false
}

// move is where Gymnasium's action a (0 left, 1 down, 2 right, 3 up) leads
// from tile s; the edge stops the player.
func move(s, a, size int) int {
	r, c := s/size, s%size
	switch a {
	case 0:
		c = max(c-1, 0)
	case 1:
		r = min(r+1, size-1)
	case 2:
		c = min(c+1, size-1)
	case 3:
		r = max(r-1, 0)
	}
	return r*size + c
}

// render is rLLM's render("tiny_rgb_array"): each tile as " P \t" (the
// player), " _ \t" (frozen, S included), " O \t" (hole), " G \t" (goal),
// " X \t" (the player in a hole) or " √ \t" (the player on the goal), rows
// joined by newlines.
func (e *Env) render() string {
	var b strings.Builder
	b.Grow(e.size * (e.size*5 + 1))
	for i, t := range e.desc {
		if i > 0 && i%e.size == 0 {
			b.WriteByte('\n')
		}
		switch {
		case i == e.pos && t == 'H':
			b.WriteString(" X \t")
		case i == e.pos && t == 'G':
			b.WriteString(" √ \t")
		case i == e.pos:
			b.WriteString(" P \t")
		case t == 'H':
			b.WriteString(" O \t")
		case t == 'G':
			b.WriteString(" G \t")
		default:
			b.WriteString(" _ \t")
		}
	}
	return b.String()
}

// Lake is a rendered lake read back (ReadLake): rows of tiles ("P", "G",
// "O", "_" as render writes them).
type Lake [][]string

// ReadLake reads the lake in obs. Lines without a tab (a prompt's words
// around the grid) are not rows.
func ReadLake(obs string) Lake {
	var rows Lake
	for _, line := range strings.Split(obs, "\n") {
		if !strings.Contains(line, "\t") {
			continue
		}
		var row []string
		for _, t := range strings.Split(strings.TrimSuffix(line, "\t"), "\t") {
			row = append(row, strings.TrimSpace(t))
		}
		rows = append(rows, row)
	}
	return rows
}

// Find is where tile stands, row and column from 1; ok is false when the
// lake has none.
func (l Lake) Find(tile string) (row, col int, ok bool) {
	for r, tiles := range l {
		for c, t := range tiles {
			if t == tile {
				return r + 1, c + 1, true
			}
		}
	}
	return 0, 0, false
}

// At is the tile at row and column (from 1); ok is false off the lake.
func (l Lake) At(row, col int) (tile string, ok bool) {
	if row < 1 || row > len(l) || col < 1 || col > len(l[row-1]) {
		return "", false
	}
	return l[row-1][col-1], true
}

// Succeeded implements text.Succeeder: the player stands on the goal.
func (e *Env) Succeeded() bool { return e.ready && e.desc[e.pos] == 'G' }

// MaxTurns implements text.TurnLimiter: the task's max_steps (0: none).
func (e *Env) MaxTurns() int { return e.maxSteps }

// Map is the lake's rows ('S', 'F', 'H', 'G').
func (e *Env) Map() []string {
	rows := make([]string, e.size)
	for r := range rows {
		rows[r] = string(e.desc[r*e.size : (r+1)*e.size])
	}
	return rows
}

// ShortestPath is the number of moves from the player to the goal over
// tiles that are not holes, or −1 when the goal cannot be reached.
func (e *Env) ShortestPath() int {
	d := e.distances()
	return d[e.pos]
}

// distances are the moves from each tile to the goal (−1: no way), by a
// breadth-first search back from the goal.
func (e *Env) distances() []int {
	n := len(e.desc)
	dist := make([]int, n)
	for i := range dist {
		dist[i] = -1
	}
	goal := strings.IndexByte(string(e.desc), 'G')
	dist[goal] = 0
	queue := []int{goal}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for a := range 4 {
			// Moves are reversible between non-edge tiles: t reaches s by
			// the opposite move when s is t's neighbour.
			t := move(s, a, e.size)
			if t == s || dist[t] >= 0 || e.desc[t] == 'H' {
				continue
			}
			dist[t] = dist[s] + 1
			queue = append(queue, t)
		}
	}
	return dist
}

// Solution implements text.Oracle: the first move of a shortest path to the
// goal, as rLLM's agent reads it ("```Down```"; ties go to the first of
// Left, Down, Right, Up). None on the goal, in a hole or where the goal
// cannot be reached.
func (e *Env) Solution() (string, bool) {
	a, ok := e.BestAction()
	if !ok {
		return "", false
	}
	return "```" + ActionNames[a] + "```", true
}

// BestAction is the first move (1–4) of a shortest path to the goal.
func (e *Env) BestAction() (int, bool) {
	if !e.ready || e.desc[e.pos] == 'G' || e.desc[e.pos] == 'H' {
		return 0, false
	}
	d := e.distances()
	if d[e.pos] < 0 {
		return 0, false
	}
	for a := range 4 {
		if t := move(e.pos, a, e.size); t != e.pos && d[t] == d[e.pos]-1 {
			return a + 1, true
		}
	}
	return 0, false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
