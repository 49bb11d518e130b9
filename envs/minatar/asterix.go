package minatar

import "github.com/agenttrainer/agenttrainer/internal/nprand"

var asterixInfo = gameInfo{
	name: "asterix", title: "Asterix",
	channels: []string{"player", "enemy", "trail", "gold"},
	letters:  "PE-G",
	minimal:  []int{actNoop, actLeft, actUp, actRight, actDown},
	newGame: func(rng *nprand.RandomState, ramping bool) game {
		g := &asterix{rng: rng, Ramping: ramping}
		g.reset()
		return g
	},
}

const (
	asterixRampInterval  = 100
	asterixSpawnSpeed    = 10
	asterixMoveInterval  = 5
	asterixEntitySlots   = 8
	asterixGoldThreshold = 1.0 / 3
)

// asterixEntity is an enemy or a piece of gold crossing row Y.
type asterixEntity struct {
	X, Y  int
	Right bool // moving right (spawned at the left edge)
	Gold  bool
}

// asterix is MinAtar's asterix.py: the player (P) moves in rows 1–8;
// enemies and gold cross the rows, one entity per row slot; touching gold
// pays 1, touching an enemy ends the game.
type asterix struct {
	rng      *nprand.RandomState
	Ramping  bool
	PlayerX  int
	PlayerY  int
	Entities [asterixEntitySlots]*asterixEntity // nil: the row is free

	SpawnSpeed, SpawnTimer int
	MoveSpeed, MoveTimer   int
	RampTimer, RampIndex   int
	Terminal               bool
}

func (g *asterix) reset() {
	g.PlayerX, g.PlayerY = 5, 5
	g.Entities = [asterixEntitySlots]*asterixEntity{}
	g.SpawnSpeed = asterixSpawnSpeed
	g.SpawnTimer = g.SpawnSpeed
	g.MoveSpeed = asterixMoveInterval
	g.MoveTimer = g.MoveSpeed
	g.RampTimer = asterixRampInterval
	g.RampIndex = 0
	g.Terminal = false
}

// touch resolves entity i meeting the player: gold is taken, an enemy ends
// the game.
func (g *asterix) touch(i int, r *float64) {
	e := g.Entities[i]
	if e == nil || e.X != g.PlayerX || e.Y != g.PlayerY {
		return
	}
	if e.Gold {
		g.Entities[i] = nil
		*r++
	} else {
		g.Terminal = true
	}
}

func (g *asterix) act(a int) (float64, bool) {
	r := 0.0
	if g.Terminal {
		return r, true
	}
	if g.SpawnTimer == 0 {
		g.spawn()
		g.SpawnTimer = g.SpawnSpeed
	}
	switch a {
	case actLeft:
		g.PlayerX = max(0, g.PlayerX-1)
	case actRight:
		g.PlayerX = min(9, g.PlayerX+1)
	case actUp:
		g.PlayerY = max(1, g.PlayerY-1)
	case actDown:
		g.PlayerY = min(8, g.PlayerY+1)
	}
	for i := range g.Entities {
		g.touch(i, &r)
	}
	if g.MoveTimer == 0 {
		g.MoveTimer = g.MoveSpeed
		for i, e := range g.Entities {
			if e == nil {
				continue
			}
			if e.Right {
				e.X++
			} else {
				e.X--
			}
			if e.X < 0 || e.X > 9 {
				g.Entities[i] = nil
				continue // off the board: it cannot meet the player
			}
			g.touch(i, &r)
		}
	}
	g.SpawnTimer--
	g.MoveTimer--
	if g.Ramping && (g.SpawnSpeed > 1 || g.MoveSpeed > 1) {
		if g.RampTimer >= 0 {
			g.RampTimer--
		} else {
			if g.MoveSpeed > 1 && g.RampIndex%2 != 0 {
				g.MoveSpeed--
			}
			if g.SpawnSpeed > 1 {
				g.SpawnSpeed--
			}
			g.RampIndex++
			g.RampTimer = asterixRampInterval
		}
	}
	return r, g.Terminal
}

// spawn puts an enemy or gold at an edge of a random free row; the two
// coin flips are drawn even when every row is taken.
func (g *asterix) spawn() {
	right := g.rng.RandomSample() < 0.5
	gold := g.rng.RandomSample() < asterixGoldThreshold
	x := 9
	if right {
		x = 0
	}
	var free []int
	for i, e := range g.Entities {
		if e == nil {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return
	}
	slot := free[g.rng.RandInt(0, int64(len(free)))]
	g.Entities[slot] = &asterixEntity{X: x, Y: slot + 1, Right: right, Gold: gold}
}

func (g *asterix) state(set func(y, x, c int)) {
	set(g.PlayerY, g.PlayerX, 0)
	for _, e := range g.Entities {
		if e == nil {
			continue
		}
		c := 1
		if e.Gold {
			c = 3
		}
		set(e.Y, e.X, c)
		back := e.X + 1
		if e.Right {
			back = e.X - 1
		}
		if back >= 0 && back <= 9 {
			set(e.Y, back, 2)
		}
	}
}

func (g *asterix) snapshot() ([]byte, error) { return jsonSnapshot(g) }
func (g *asterix) restore(b []byte) error    { return jsonRestore(b, g) }
