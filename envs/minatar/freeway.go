package minatar

import "github.com/agenttrainer/agenttrainer/internal/nprand"

var freewayInfo = gameInfo{
	name: "freeway", title: "Freeway",
	channels: []string{"chicken", "car", "speed1", "speed2", "speed3", "speed4", "speed5"},
	letters:  "CX12345",
	minimal:  []int{actNoop, actUp, actDown},
	newGame: func(rng *nprand.RandomState, _ bool) game {
		g := &freeway{rng: rng}
		g.reset()
		return g
	},
}

const (
	freewayPlayerSpeed = 3
	freewayTimeLimit   = 2500
)

// freewayCar drives along row Y; it moves one cell every |Speed|+1 frames,
// right when Speed > 0.
type freewayCar struct {
	X, Y, Timer, Speed int
}

// freeway is MinAtar's freeway.py: the chicken crosses eight lanes of
// cars from row 9 to row 0 (reward 1, cars re-randomised); a car sends it
// back to row 9. The game ends after 2500 frames.
type freeway struct {
	rng            *nprand.RandomState
	Cars           [8]freewayCar
	Pos            int
	MoveTimer      int
	TerminateTimer int
	Terminal       bool
}

// randomizeCars draws speeds randint(1, 6, 8) and directions
// sign(rand(8) − 0.5); initialize also puts every car at column 0.
func (g *freeway) randomizeCars(initialize bool) {
	var speeds [8]int64
	g.rng.RandIntN(1, 6, speeds[:])
	var u [8]float64
	g.rng.Rand(u[:])
	for i := range g.Cars {
		s := int(speeds[i])
		switch d := u[i] - 0.5; {
		case d < 0:
			s = -s
		case d == 0:
			s = 0
		}
		if initialize {
			g.Cars[i] = freewayCar{X: 0, Y: i + 1}
		}
		g.Cars[i].Timer, g.Cars[i].Speed = abs(s), s
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func (g *freeway) reset() {
	g.randomizeCars(true)
	g.Pos = 9
	g.MoveTimer = freewayPlayerSpeed
	g.TerminateTimer = freewayTimeLimit
	g.Terminal = false
}

func (g *freeway) act(a int) (float64, bool) {
	r := 0.0
	if g.Terminal {
		return r, true
	}
	if a == actUp && g.MoveTimer == 0 {
		g.MoveTimer = freewayPlayerSpeed
		g.Pos = max(0, g.Pos-1)
	} else if a == actDown && g.MoveTimer == 0 {
		g.MoveTimer = freewayPlayerSpeed
		g.Pos = min(9, g.Pos+1)
	}
	if g.Pos == 0 {
		r++
		g.randomizeCars(false)
		g.Pos = 9
	}
	for i := range g.Cars {
		car := &g.Cars[i]
		if car.X == 4 && car.Y == g.Pos {
			g.Pos = 9
		}
		if car.Timer != 0 {
			car.Timer--
			continue
		}
		car.Timer = abs(car.Speed)
		if car.Speed > 0 {
			car.X++
		} else {
			car.X--
		}
		if car.X < 0 {
			car.X = 9
		} else if car.X > 9 {
			car.X = 0
		}
		if car.X == 4 && car.Y == g.Pos {
			g.Pos = 9
		}
	}
	if g.MoveTimer > 0 {
		g.MoveTimer--
	}
	g.TerminateTimer--
	if g.TerminateTimer < 0 {
		g.Terminal = true
	}
	return r, g.Terminal
}

func (g *freeway) state(set func(y, x, c int)) {
	set(g.Pos, 4, 0)
	for _, car := range g.Cars {
		set(car.Y, car.X, 1)
		back := car.X + 1
		if car.Speed > 0 {
			back = car.X - 1
		}
		if back < 0 {
			back = 9
		} else if back > 9 {
			back = 0
		}
		if s := abs(car.Speed); s >= 1 && s <= 5 {
			set(car.Y, back, 1+s)
		}
	}
}

func (g *freeway) snapshot() ([]byte, error) { return jsonSnapshot(g) }
func (g *freeway) restore(b []byte) error    { return jsonRestore(b, g) }
