package minatar

import "github.com/agenttrainer/agenttrainer/internal/nprand"

var breakoutInfo = gameInfo{
	name: "breakout", title: "Breakout",
	channels: []string{"paddle", "ball", "trail", "brick"},
	letters:  "=o+#",
	minimal:  []int{actNoop, actLeft, actRight},
	newGame: func(rng *nprand.RandomState, _ bool) game {
		g := &breakout{rng: rng}
		g.reset()
		return g
	},
}

// breakout is MinAtar's breakout.py: a paddle in the bottom row, a ball
// moving diagonally (directions 0 up-left, 1 up-right, 2 down-right,
// 3 down-left) and three rows of bricks, refilled when all are gone.
type breakout struct {
	rng          *nprand.RandomState
	BallX, BallY int
	BallDir      int
	Pos          int // the paddle's column
	LastX, LastY int
	Bricks       [10][10]bool
	Strike       bool
	Terminal     bool
}

func (g *breakout) reset() {
	g.BallY = 3
	if g.rng.RandInt(0, 2) == 0 {
		g.BallX, g.BallDir = 0, 2
	} else {
		g.BallX, g.BallDir = 9, 3
	}
	g.Pos = 4
	g.Bricks = [10][10]bool{}
	g.fillBricks()
	g.Strike = false
	g.LastX, g.LastY = g.BallX, g.BallY
	g.Terminal = false
}

func (g *breakout) fillBricks() {
	for y := 1; y < 4; y++ {
		for x := range 10 {
			g.Bricks[y][x] = true
		}
	}
}

var (
	breakoutFlipX  = [4]int{1, 0, 3, 2}
	breakoutFlipY  = [4]int{3, 2, 1, 0}
	breakoutFlipXY = [4]int{2, 3, 0, 1}
)

func (g *breakout) act(a int) (float64, bool) {
	r := 0.0
	if g.Terminal {
		return r, true
	}
	switch a {
	case actLeft:
		g.Pos = max(0, g.Pos-1)
	case actRight:
		g.Pos = min(9, g.Pos+1)
	}
	g.LastX, g.LastY = g.BallX, g.BallY
	var nx, ny int
	switch g.BallDir {
	case 0:
		nx, ny = g.BallX-1, g.BallY-1
	case 1:
		nx, ny = g.BallX+1, g.BallY-1
	case 2:
		nx, ny = g.BallX+1, g.BallY+1
	case 3:
		nx, ny = g.BallX-1, g.BallY+1
	}
	strike := false
	if nx < 0 || nx > 9 {
		nx = max(0, min(9, nx))
		g.BallDir = breakoutFlipX[g.BallDir]
	}
	switch {
	case ny < 0:
		ny = 0
		g.BallDir = breakoutFlipY[g.BallDir]
	case g.Bricks[ny][nx]:
		strike = true
		if !g.Strike {
			r++
			g.Strike = true
			g.Bricks[ny][nx] = false
			ny = g.LastY
			g.BallDir = breakoutFlipY[g.BallDir]
		}
	case ny == 9:
		if g.bricksLeft() == 0 {
			g.fillBricks()
		}
		switch {
		case g.BallX == g.Pos:
			g.BallDir = breakoutFlipY[g.BallDir]
			ny = g.LastY
		case nx == g.Pos:
			g.BallDir = breakoutFlipXY[g.BallDir]
			ny = g.LastY
		default:
			g.Terminal = true
		}
	}
	if !strike {
		g.Strike = false
	}
	g.BallX, g.BallY = nx, ny
	return r, g.Terminal
}

func (g *breakout) bricksLeft() int {
	n := 0
	for _, row := range g.Bricks {
		for _, b := range row {
			if b {
				n++
			}
		}
	}
	return n
}

func (g *breakout) state(set func(y, x, c int)) {
	set(g.BallY, g.BallX, 1)
	set(9, g.Pos, 0)
	set(g.LastY, g.LastX, 2)
	for y, row := range g.Bricks {
		for x, b := range row {
			if b {
				set(y, x, 3)
			}
		}
	}
}

func (g *breakout) snapshot() ([]byte, error) { return jsonSnapshot(g) }
func (g *breakout) restore(b []byte) error    { return jsonRestore(b, g) }
