// Package frozenlake is rLLM's FrozenLake environment and the generator of its task sets.
package frozenlake

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
)

func init() {
	envs.Register(envs.Spec{
		ID:          "FrozenLake-v1",
		Description: "walk a random frozen lake from S to G without falling in a hole (rLLM's FrozenLake tasks)",
		// The step limit is a task's max_steps, enforced by the environment.
		MaxEpisodeSteps: 0,
		New:             func(args envs.Params) (envs.Env, error) { return NewFrozenLake(args) },
	})
}

// FrozenLake is one task of rLLM's FrozenLake family: a size×size lake
// generated from (size, p, seed), where every tile is frozen with
// probability p and a hole otherwise, the start S and the goal G are placed
// at random (distinct) tiles, and maps are regenerated until G can be
// reached from S. Moves follow Gymnasium's FrozenLake-v1: actions 0 left,
// 1 down, 2 right, 3 up; walking into the edge leaves the agent in place;
// on a slippery lake the agent goes the intended way with probability 1/3
// and each perpendicular way with probability 1/3. Reaching G pays 1 and
// terminates, a hole terminates with 0, and an episode is truncated after
// max_steps steps.
//
// Arguments (Params), with their defaults:
//
//	size        4      the lake's side, 2…max_size
//	p           0.8    probability that a tile is frozen, in (0, 1]
//	seed        0      the map's seed (any integer)
//	map                a given lake instead of a generated one: "4x4" or "8x8"
//	                   (Gymnasium's maps) or rows such as "SFFF/FHFH/FFFH/HFFG";
//	                   not with size, p and seed. With none of the four,
//	                   FrozenLake-v1 plays Gymnasium's "4x4".
//	is_slippery false  Gymnasium's slippery moves (true/false or 1/0)
//	max_steps   100    steps before an episode is truncated (> 0)
//	max_size    8      the largest lake the observation holds (2…16)
//	obs         "egocentric" or "grid" (see below)
//	generator   "pcg" (this package's stream) or "rllm": the very map rLLM's
//	            text FrozenLake draws from the same size, p and seed
//	            (RLLMMap, NumPy's stream, rLLM's depth-5 validity search)
//
// uid, index and question (rLLM's dataset bookkeeping) are accepted and
// ignored; any other key is an error. max_size and obs fix the observation's
// length, so every task a policy sees must share them.
//
// Observations are fixed-size vectors of 0/1 floats, so that one policy works
// across maps of every size up to max_size (M below):
//
//   - "egocentric" (the default): a (2M−1)×(2M−1) window centred on the
//     agent, which covers the whole lake wherever the agent stands, in three
//     planes: hole, goal, and off the lake (the edge). Frozen tiles, S
//     included, are zero in all three. Index: plane·W² + row·W + col with
//     W = 2M−1, the agent at row = col = M−1. Its length is 3·(2M−1)²
//     (675 for M = 8). What the agent must learn (go toward the goal, round
//     the holes) looks the same wherever it stands on whichever map.
//   - "grid": the lake in the top-left corner of an M×M grid, in four planes:
//     frozen (S included), hole, goal, agent. Tiles beyond the lake are zero in
//     every plane. Index: plane·M² + row·M + col; length 4·M² (256 for M = 8).
type FrozenLake struct {
	cfg      frozenLakeConfig
	desc     []byte // size² tiles, row-major: 'S', 'F', 'H' or 'G'
	start    int
	shortest int // steps on the shortest path from S to G

	pos     int
	steps   int
	done    bool // the episode ended in a hole or at the goal
	success bool
	last    int8 // the action last chosen, −1 before the first step
	moved   int8 // the way the agent actually went
	rng     envs.PCGRand
}

// FrozenLake actions, as Gymnasium numbers them.
const (
	flLeft = iota
	flDown
	flRight
	flUp
)

var flActionNames = [4]string{"left", "down", "right", "up"}

const (
	flDefaultSize     = 4
	flDefaultP        = 0.8
	flDefaultMaxSteps = 100
	flDefaultMaxSize  = 8
	flMaxMaxSize      = 16
	flMaxTries        = 100_000 // map draws before giving up (never reached: see generateFrozenLakeMap)
)

type frozenLakeConfig struct {
	size     int
	p        float64
	seed     int64
	slippery bool
	maxSteps int
	maxSize  int
	grid     bool   // the "grid" observation instead of "egocentric"
	fixed    string // a given map's rows, "/"-separated; "" to generate one
	rllm     bool   // draw the map as rLLM does (generator = "rllm")
}

var (
	frozenLakeArgNames = []string{"size", "p", "seed", "map", "is_slippery", "max_steps", "max_size", "obs", "generator"}

	// gymnasiumMaps are Gymnasium's named FrozenLake maps; "4x4" is what
	// FrozenLake-v1 plays when nothing says which lake (a generated default
	// lake can put the goal next to the start).
	gymnasiumMaps = map[string]string{
		"4x4": "SFFF/FHFH/FFFH/HFFG",
		"8x8": "SFFFFFFF/FFFFFFFF/FFFHFFFF/FFFFFHFF/FFFHFFFF/FHHFFFHF/FHFFHFHF/FFFHFFFG",
	}
)

// NewFrozenLake builds one FrozenLake task from its arguments (see
// FrozenLake); nil args give the defaults.
func NewFrozenLake(args envs.Params) (*FrozenLake, error) {
	cfg, err := parseFrozenLakeArgs(args)
	if err != nil {
		return nil, err
	}
	return newFrozenLake(cfg)
}

func parseFrozenLakeArgs(args envs.Params) (frozenLakeConfig, error) {
	cfg := frozenLakeConfig{size: flDefaultSize, p: flDefaultP, maxSteps: flDefaultMaxSteps, maxSize: flDefaultMaxSize}
	if err := args.CheckArgs(frozenLakeArgNames...); err != nil {
		return cfg, err
	}
	maxSize, err := args.Int("max_size", flDefaultMaxSize)
	if err != nil {
		return cfg, err
	}
	if maxSize < 2 || maxSize > flMaxMaxSize {
		return cfg, fmt.Errorf("max_size must be an integer from 2 to %d, got %d", flMaxMaxSize, maxSize)
	}
	cfg.maxSize = int(maxSize)
	_, hasMap := args["map"]
	_, hasSize := args["size"]
	_, hasP := args["p"]
	_, hasSeed := args["seed"]
	if !hasMap && !hasSize && !hasP && !hasSeed {
		args = maps.Clone(args)
		if args == nil {
			args = envs.Params{}
		}
		args["map"] = "4x4" // Gymnasium's FrozenLake-v1
		hasMap = true
	}
	if hasMap {
		if hasSize || hasP || hasSeed {
			return cfg, errors.New("map gives the lake itself, so it goes without size, p and seed (those generate one)")
		}
		m, err := args.String("map", "")
		if err != nil {
			return cfg, err
		}
		if named, ok := gymnasiumMaps[m]; ok {
			m = named
		}
		if cfg.size, err = checkMap(m, cfg.maxSize); err != nil {
			return cfg, err
		}
		cfg.fixed = strings.ReplaceAll(m, ",", "/")
	}
	size, err := args.Int("size", int64(max(cfg.size, flDefaultSize)))
	if err != nil {
		return cfg, err
	}
	if (size < 2 || size > maxSize) && !hasMap {
		return cfg, fmt.Errorf("size must be an integer from 2 to %d (max_size), got %d", maxSize, size)
	}
	if !hasMap {
		cfg.size = int(size)
	}
	if cfg.p, err = args.Float("p", flDefaultP); err != nil {
		return cfg, err
	}
	if !(cfg.p > 0 && cfg.p <= 1) {
		return cfg, fmt.Errorf("p must be a number in (0, 1], the probability that a tile is frozen, got %s", envs.DescribeArg(cfg.p))
	}
	if cfg.seed, err = args.Int("seed", 0); err != nil {
		return cfg, err
	}
	if cfg.slippery, err = args.Bool("is_slippery", false); err != nil {
		return cfg, err
	}
	maxSteps, err := args.Int("max_steps", flDefaultMaxSteps)
	if err != nil {
		return cfg, err
	}
	if maxSteps < 1 || maxSteps > math.MaxInt32 {
		return cfg, fmt.Errorf("max_steps must be a positive integer, got %d", maxSteps)
	}
	cfg.maxSteps = int(maxSteps)
	obs, err := args.String("obs", "egocentric")
	if err != nil {
		return cfg, err
	}
	switch obs {
	case "egocentric":
	case "grid":
		cfg.grid = true
	default:
		return cfg, fmt.Errorf("obs must be \"egocentric\" or \"grid\", got %q", obs)
	}
	if cfg.rllm, err = parseGenerator(args); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func newFrozenLake(cfg frozenLakeConfig) (*FrozenLake, error) {
	desc, start, shortest, err := drawMap(cfg)
	if cfg.fixed != "" {
		desc = []byte(strings.ReplaceAll(cfg.fixed, "/", ""))
		start = strings.IndexByte(string(desc), 'S')
		shortest, err = frozenLakeShortestPath(desc, cfg.size, start), nil
	}
	if err != nil {
		return nil, err
	}
	return &FrozenLake{cfg: cfg, desc: desc, start: start, shortest: shortest, pos: start, last: -1, moved: -1, rng: envs.NewPCGRand(0)}, nil
}

// flMapStream is the PCG stream of map generation, apart from the one the
// slippery moves draw from (newPCGRand), so that a map seed and a reset seed
// that happen to be equal do not share draws.
const flMapStream = 0x6a09e667f3bcc909

// generateFrozenLakeMap draws a lake as rLLM's generate_random_map does, from
// our PCG stream: each tile frozen with probability p, then a start and a
// distinct goal at random tiles, redrawn until the goal can be reached. The
// redraws end quickly for every p: whenever S and G fall side by side the map
// is valid, which happens with probability about 4/size² (1.5% at size 16).
// Unlike rLLM, whose depth-first check also bounds the path by max_steps,
// the map depends on (size, p, seed) only; GenerateFrozenLakeTasks skips
// maps that need more than max_steps steps.
// It returns the tiles, the start and the shortest path's length.
func generateFrozenLakeMap(size int, p float64, seed int64) ([]byte, int, int, error) {
	r := rand.New(rand.NewPCG(uint64(seed), flMapStream))
	n := size * size
	desc := make([]byte, n)
	for try := 0; try < flMaxTries; try++ {
		for i := range desc {
			// np_random.choice(["F", "H"], p=[p, 1−p]): frozen below p.
			if r.Float64() < p {
				desc[i] = 'F'
			} else {
				desc[i] = 'H'
			}
		}
		var sr, sc, gr, gc int
		for {
			sr, sc, gr, gc = r.IntN(size), r.IntN(size), r.IntN(size), r.IntN(size)
			if sr != gr || sc != gc {
				break
			}
		}
		start, goal := sr*size+sc, gr*size+gc
		desc[start], desc[goal] = 'S', 'G'
		if d := frozenLakeShortestPath(desc, size, start); d > 0 {
			return desc, start, d, nil
		}
	}
	return nil, 0, 0, fmt.Errorf("no %d×%d map with a path from start to goal in %d tries (p=%g, seed %d)", size, size, flMaxTries, p, seed)
}

// checkMap checks a given lake: square rows of S, F, H and G separated by
// "/" (or ","), one S, one G reachable from it, at most maxSize a side. It
// returns the side.
func checkMap(m string, maxSize int) (int, error) {
	rows := strings.FieldsFunc(m, func(r rune) bool { return r == '/' || r == ',' })
	size := len(rows)
	if size < 2 || size > maxSize {
		return 0, fmt.Errorf("map %q: want 2 to %d (max_size) rows of S, F, H and G separated by \"/\", or \"4x4\" or \"8x8\"", m, maxSize)
	}
	desc := strings.Join(rows, "")
	for i, row := range rows {
		if len(row) != size {
			return 0, fmt.Errorf("map %q: row %d has %d tiles, the lake is %d×%d", m, i+1, len(row), size, size)
		}
	}
	if strings.Trim(desc, "SFHG") != "" {
		return 0, fmt.Errorf("map %q: tiles are S (start), F (frozen), H (hole) and G (goal)", m)
	}
	if strings.Count(desc, "S") != 1 || strings.Count(desc, "G") != 1 {
		return 0, fmt.Errorf("map %q: needs exactly one S and one G", m)
	}
	if frozenLakeShortestPath([]byte(desc), size, strings.IndexByte(desc, 'S')) < 0 {
		return 0, fmt.Errorf("map %q: the goal cannot be reached from the start", m)
	}
	return size, nil
}

// frozenLakeShortestPath is the number of moves from start to the goal over
// tiles that are not holes (breadth-first), or −1 if there is no way.
func frozenLakeShortestPath(desc []byte, size, start int) int {
	dist := make([]int, len(desc))
	for i := range dist {
		dist[i] = -1
	}
	dist[start] = 0
	queue := []int{start}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if desc[s] == 'G' {
			return dist[s]
		}
		for a := range 4 {
			t := flMove(s, a, size)
			if dist[t] < 0 && desc[t] != 'H' {
				dist[t] = dist[s] + 1
				queue = append(queue, t)
			}
		}
	}
	return -1
}

// flMove is where a step in direction a leads from tile s; the edge stops
// the agent.
func flMove(s, a, size int) int {
	r, c := s/size, s%size
	switch a {
	case flLeft:
		c = max(c-1, 0)
	case flDown:
		r = min(r+1, size-1)
	case flRight:
		c = min(c+1, size-1)
	case flUp:
		r = max(r-1, 0)
	}
	return r*size + c
}

// ObservationSpace implements Env (see FrozenLake for the layout).
func (f *FrozenLake) ObservationSpace() envs.Space {
	n := f.obsDim()
	lo, hi := make([]float32, n), make([]float32, n)
	for i := range hi {
		hi[i] = 1
	}
	return envs.Space{Kind: envs.Box, Dim: n, Low: lo, High: hi}
}

func (f *FrozenLake) obsDim() int {
	m := f.cfg.maxSize
	if f.cfg.grid {
		return 4 * m * m
	}
	w := 2*m - 1
	return 3 * w * w
}

// ActionSpace implements Env: 0 left, 1 down, 2 right, 3 up.
func (f *FrozenLake) ActionSpace() envs.Space { return envs.Space{Kind: envs.Discrete, N: 4} }

// Reset implements Env: the agent goes back to S on the same map; seed
// re-seeds the stream slippery moves draw from.
func (f *FrozenLake) Reset(seed int64, obs []float32) {
	if seed != envs.NoSeed {
		f.rng = envs.NewPCGRand(seed)
	}
	f.pos, f.steps, f.done, f.success, f.last, f.moved = f.start, 0, false, false, -1, -1
	f.observe(obs)
}

// Step implements Env. A step after the episode ended in a hole or at the
// goal stays there, pays 0 and terminates again (Gymnasium's absorbing
// states).
func (f *FrozenLake) Step(action, obs []float32) (float64, bool, bool) {
	if f.done {
		f.observe(obs)
		return 0, true, f.steps >= f.cfg.maxSteps
	}
	a := envs.DiscreteAction(action[0], 4)
	dir := a
	if f.cfg.slippery {
		// Gymnasium: the transitions for (a−1, a, a+1) mod 4, each with
		// probability 1/3, picked by one uniform draw against their
		// cumulative sums.
		switch u := f.rng.Float64(); {
		case u < 1.0/3:
			dir = (a + 3) % 4
		case u < 2.0/3:
		default:
			dir = (a + 1) % 4
		}
	}
	f.pos = flMove(f.pos, dir, f.cfg.size)
	f.steps++
	f.last, f.moved = int8(a), int8(dir)
	reward := 0.0
	switch f.desc[f.pos] {
	case 'G':
		reward, f.done, f.success = 1, true, true
	case 'H':
		f.done = true
	}
	f.observe(obs)
	return reward, f.done, f.steps >= f.cfg.maxSteps
}

func (f *FrozenLake) observe(obs []float32) {
	obs = obs[:f.obsDim()]
	clear(obs)
	n, m := f.cfg.size, f.cfg.maxSize
	if f.cfg.grid {
		mm := m * m
		for r := range n {
			for c := range n {
				i := r*m + c
				switch f.desc[r*n+c] {
				case 'H':
					obs[mm+i] = 1
				case 'G':
					obs[2*mm+i] = 1
				default:
					obs[i] = 1
				}
			}
		}
		obs[3*mm+(f.pos/n)*m+f.pos%n] = 1
		return
	}
	w := 2*m - 1
	ww := w * w
	holes, goal, edge := obs[:ww], obs[ww:2*ww], obs[2*ww:3*ww]
	for i := range edge {
		edge[i] = 1
	}
	// Lake tile (r, c) is window cell (r−ar+m−1, c−ac+m−1).
	off := (m-1-f.pos/n)*w + (m - 1 - f.pos%n)
	for r := range n {
		for c := range n {
			k := off + r*w + c
			edge[k] = 0
			switch f.desc[r*n+c] {
			case 'H':
				holes[k] = 1
			case 'G':
				goal[k] = 1
			}
		}
	}
}

// Succeeded implements SuccessReporter: the agent stands on the goal.
func (f *FrozenLake) Succeeded() bool { return f.success }

// Map returns the lake's rows, as Gymnasium's desc: 'S', 'F', 'H', 'G'.
func (f *FrozenLake) Map() []string {
	n := f.cfg.size
	rows := make([]string, n)
	for r := range rows {
		rows[r] = string(f.desc[r*n : (r+1)*n])
	}
	return rows
}

// MapString is the lake on one line, its rows separated by '/'
// ("SFFF/FHFH/FFFH/HFFG"); two tasks with the same string are the same map.
func (f *FrozenLake) MapString() string { return strings.Join(f.Map(), "/") }

// ShortestPath is the number of steps of the shortest way from S to G.
func (f *FrozenLake) ShortestPath() int { return f.shortest }

// MaxSteps is the task's step limit.
func (f *FrozenLake) MaxSteps() int { return f.cfg.maxSteps }

// Render implements Renderer: the lake, one tile per column, the agent's
// tile in brackets, then the step count, the last move and the outcome.
func (f *FrozenLake) Render() string {
	d, caption := f.Picture()
	return d + caption
}

// Picture implements envs.Picturer.
func (f *FrozenLake) Picture() (drawing, caption string) {
	var b strings.Builder
	n := f.cfg.size
	for r := range n {
		line := make([]byte, 0, 3*n)
		for c := range n {
			t := f.desc[r*n+c]
			if r*n+c == f.pos {
				line = append(line, '[', t, ']')
			} else {
				line = append(line, ' ', t, ' ')
			}
		}
		b.WriteString(strings.TrimRight(string(line), " "))
		b.WriteByte('\n')
	}
	drawing = b.String()
	b.Reset()
	fmt.Fprintf(&b, "step %d/%d", f.steps, f.cfg.maxSteps)
	if f.last >= 0 {
		fmt.Fprintf(&b, ", went %s", flActionNames[f.moved])
		if f.moved != f.last {
			fmt.Fprintf(&b, " (slid; chose %s)", flActionNames[f.last])
		}
	}
	switch {
	case f.success:
		b.WriteString(": reached the goal")
	case f.done:
		b.WriteString(": fell in a hole")
	case f.steps >= f.cfg.maxSteps:
		b.WriteString(": out of steps")
	}
	return drawing, b.String()
}

type frozenLakeSnapshot struct {
	Map     string `json:"map"`
	Pos     int    `json:"pos"`
	Steps   int    `json:"steps"`
	Done    bool   `json:"done"`
	Success bool   `json:"success"`
	Last    int8   `json:"last"`
	Moved   int8   `json:"moved"`
	RNG     []byte `json:"rng"`
}

// Snapshot implements Snapshotter: the map (to check the restore is of the
// same task), the agent, the step count and the random stream.
func (f *FrozenLake) Snapshot() ([]byte, error) {
	rb, err := f.rng.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return json.Marshal(frozenLakeSnapshot{Map: f.MapString(), Pos: f.pos, Steps: f.steps,
		Done: f.done, Success: f.success, Last: f.last, Moved: f.moved, RNG: rb})
}

// Restore implements Snapshotter. The snapshot must be of the same map: the
// environment is rebuilt from its task before it is restored.
func (f *FrozenLake) Restore(b []byte) error {
	var s frozenLakeSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("bad FrozenLake snapshot: %v", err)
	}
	if want := f.MapString(); s.Map != want {
		return fmt.Errorf("FrozenLake snapshot is of map %s, this task's map is %s", s.Map, want)
	}
	if s.Pos < 0 || s.Pos >= len(f.desc) || s.Steps < 0 || s.Last < -1 || s.Last > 3 || s.Moved < -1 || s.Moved > 3 {
		return fmt.Errorf("bad FrozenLake snapshot: position %d, step %d, actions %d/%d", s.Pos, s.Steps, s.Last, s.Moved)
	}
	r := envs.NewPCGRand(0)
	if err := r.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("bad random-stream snapshot: %v", err)
	}
	f.pos, f.steps, f.done, f.success, f.last, f.moved, f.rng = s.Pos, s.Steps, s.Done, s.Success, s.Last, s.Moved, r
	return nil
}
