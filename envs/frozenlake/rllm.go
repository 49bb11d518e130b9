package frozenlake

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/internal/nprand"
)

// RLLMDefaultMaxSteps is rLLM's module-level MAX_STEPS, the depth bound of
// its validity search: rLLM's FrozenLakeEnv.reset rebuilds the map without
// passing max_steps, so every map an rLLM agent plays was accepted with 5.
const RLLMDefaultMaxSteps = 5

// rllmMaxTries bounds the redraws of RLLMMap. rLLM loops until a map is
// valid; a map whose start and goal are side by side is always valid, which
// happens with probability about 4/size², so real draws end after a few
// dozen tries.
const rllmMaxTries = 1_000_000

// RLLMMap draws the lake rLLM's generate_random_map(size, p, seed) draws
// (rllm/environments/frozenlake/frozenlake.py), with NumPy's stream bit for
// bit: Generator(PCG64(SeedSequence(seed))), choice(["F", "H"], (size,
// size), p=[p, 1−p]) with p capped at 1, then integers(0, size) four times
// for the start and goal rows and columns (redrawn while equal), the whole
// map redrawn until rLLM's depth-first search (isValid) finds the goal
// with the depth bound maxSteps. It returns the rows ('S', 'F', 'H', 'G')
// and the goal's position.
func RLLMMap(size int, p float64, seed int64, maxSteps int) (rows []string, goalRow, goalCol int, err error) {
	if size < 2 || size > 1<<10 {
		return nil, 0, 0, fmt.Errorf("size must be an integer from 2 to 1024, got %d (a 1×1 lake has no room for a goal apart from the start)", size)
	}
	if seed < 0 {
		return nil, 0, 0, fmt.Errorf("seed must be greater or equal to zero, got %d (Gymnasium's seeding refuses negative seeds)", seed)
	}
	p = min(1, p)
	g := nprand.NewGenerator(uint64(seed))
	board := make([][]byte, size)
	for try := 0; try < rllmMaxTries; try++ {
		tiles, err := g.ChoiceP([]float64{p, 1 - p}, size*size)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("p = %g: %v (p is the probability that a tile is frozen, in [0, 1])", p, err)
		}
		for r := range board {
			board[r] = make([]byte, size)
			for c := range board[r] {
				board[r][c] = "FH"[tiles[r*size+c]]
			}
		}
		var sr, sc int
		for {
			sr, sc = int(g.Integers(0, int64(size))), int(g.Integers(0, int64(size)))
			goalRow, goalCol = int(g.Integers(0, int64(size))), int(g.Integers(0, int64(size)))
			if sr != goalRow || sc != goalCol {
				break
			}
		}
		board[sr][sc] = 'S'
		board[goalRow][goalCol] = 'G'
		if rllmIsValid(board, sr, sc, maxSteps) {
			rows = make([]string, size)
			for r := range rows {
				rows[r] = string(board[r])
			}
			return rows, goalRow, goalCol, nil
		}
	}
	return nil, 0, 0, fmt.Errorf("no valid %d×%d map in %d draws (p=%g, seed %d)", size, size, rllmMaxTries, p, seed)
}

// rllmIsValid is rLLM's is_valid: a depth-first search from the start that
// marks a tile when it is popped, skips entries deeper than maxSteps, and
// succeeds as soon as a neighbour of a popped tile is the goal. It is not a
// shortest-path search: a tile first reached by a long way is not revisited
// by a shorter one, so the answer depends on the order, which is kept.
func rllmIsValid(board [][]byte, sr, sc, maxSteps int) bool {
	size := len(board)
	type entry struct{ r, c, steps int }
	frontier := []entry{{sr, sc, 0}}
	discovered := make([]bool, size*size)
	dirs := [4][2]int{{1, 0}, {0, 1}, {-1, 0}, {0, -1}}
	for len(frontier) > 0 {
		e := frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		if e.steps > maxSteps || discovered[e.r*size+e.c] {
			continue
		}
		discovered[e.r*size+e.c] = true
		for _, d := range dirs {
			r, c := e.r+d[0], e.c+d[1]
			if r < 0 || r >= size || c < 0 || c >= size {
				continue
			}
			switch board[r][c] {
			case 'G':
				return true
			case 'H':
			default:
				frontier = append(frontier, entry{r, c, e.steps + 1})
			}
		}
	}
	return false
}

// parseGenerator reads the generator argument: false for "pcg" (the
// default), true for "rllm".
func parseGenerator(args envs.Params) (bool, error) {
	g, err := args.String("generator", "pcg")
	if err != nil {
		return false, err
	}
	switch g {
	case "pcg":
		return false, nil
	case "rllm":
		return true, nil
	}
	return false, fmt.Errorf("generator must be \"pcg\" or \"rllm\" (rLLM's very maps), got %q", g)
}

// drawMap draws cfg's generated lake with the chosen generator: its tiles,
// start and shortest path.
func drawMap(cfg frozenLakeConfig) ([]byte, int, int, error) {
	if !cfg.rllm {
		return generateFrozenLakeMap(cfg.size, cfg.p, cfg.seed)
	}
	rows, _, _, err := RLLMMap(cfg.size, cfg.p, cfg.seed, RLLMDefaultMaxSteps)
	if err != nil {
		return nil, 0, 0, err
	}
	desc := []byte(strings.Join(rows, ""))
	start := bytes.IndexByte(desc, 'S')
	return desc, start, frozenLakeShortestPath(desc, cfg.size, start), nil
}
