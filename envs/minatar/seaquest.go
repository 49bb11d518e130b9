package minatar

import (
	"fmt"

	"github.com/agenttrainer/agenttrainer/internal/nprand"
)

var seaquestInfo = gameInfo{
	name: "seaquest", title: "Seaquest",
	channels: []string{"sub_front", "sub_back", "friendly_bullet", "trail", "enemy_bullet",
		"enemy_fish", "enemy_sub", "oxygen_guage", "diver_guage", "diver"},
	letters: "Ss*-!FUODd",
	minimal: []int{actNoop, actLeft, actUp, actRight, actDown, actFire},
	newGame: func(rng *nprand.RandomState, ramping bool) game {
		g := &seaquest{rng: rng, Ramping: ramping}
		g.reset()
		return g
	},
}

const (
	sqMaxOxygen        = 200
	sqInitSpawnSpeed   = 20
	sqDiverSpawnSpeed  = 30
	sqInitMoveInterval = 5
	sqShotCoolDown     = 5
	sqEnemyShotInt     = 10
	sqDiverMoveInt     = 5
	sqSubThreshold     = 1.0 / 3
)

// The moving things of Seaquest. MinAtar keeps each as a Python list in a
// Python list and removes them with list.remove, which deletes the first
// element EQUAL to the one given (not necessarily that object) while the
// loops walk the lists backwards by index. To follow it exactly the
// objects here are pointers in slices, removed by value with
// removeEqual, and walked with Python's reversed-iterator rule.
type (
	sqBullet struct {
		X, Y  int
		Right bool
	}
	sqFish struct {
		X, Y  int
		Right bool
		Timer int
	}
	sqSub struct {
		X, Y      int
		Right     bool
		Timer     int
		ShotTimer int
	}
	sqDiver struct {
		X, Y  int
		Right bool
		Timer int
	}
)

// removeEqual is Python's list.remove(v): it deletes the first element
// equal to *v.
func removeEqual[T comparable](list []*T, v *T) []*T {
	for i, x := range list {
		if *x == *v {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	panic(fmt.Sprintf("minatar: list.remove(%v): not in list", *v))
}

// step moves x one cell in its direction.
func step(x *int, right bool) {
	if right {
		*x++
	} else {
		*x--
	}
}

// seaquest is MinAtar's seaquest.py: a submarine shoots fish and enemy
// subs, collects divers, and must surface before its oxygen runs out;
// surfacing with six divers pays for the remaining oxygen.
type seaquest struct {
	rng        *nprand.RandomState
	Ramping    bool
	Oxygen     int
	DiverCount int
	SubX, SubY int
	SubOr      bool // facing right
	FBullets   []*sqBullet
	EBullets   []*sqBullet
	EFish      []*sqFish
	ESubs      []*sqSub
	Divers     []*sqDiver

	ESpawnSpeed, ESpawnTimer int
	DSpawnTimer              int
	MoveSpeed                int
	RampIndex                int
	ShotTimer                int
	Surface                  bool
	Terminal                 bool
}

func (g *seaquest) reset() {
	g.Oxygen = sqMaxOxygen
	g.DiverCount = 0
	g.SubX, g.SubY = 5, 0
	g.SubOr = false
	g.FBullets, g.EBullets, g.EFish, g.ESubs, g.Divers = nil, nil, nil, nil, nil
	g.ESpawnSpeed = sqInitSpawnSpeed
	g.ESpawnTimer = g.ESpawnSpeed
	g.DSpawnTimer = sqDiverSpawnSpeed
	g.MoveSpeed = sqInitMoveInterval
	g.RampIndex = 0
	g.ShotTimer = 0
	g.Surface = true
	g.Terminal = false
}

func (g *seaquest) atSub(x, y int) bool { return x == g.SubX && y == g.SubY }

func (g *seaquest) act(a int) (float64, bool) {
	r := 0.0
	if g.Terminal {
		return r, true
	}
	if g.ESpawnTimer == 0 {
		g.spawnEnemy()
		g.ESpawnTimer = g.ESpawnSpeed
	}
	if g.DSpawnTimer == 0 {
		g.spawnDiver()
		g.DSpawnTimer = sqDiverSpawnSpeed
	}
	switch {
	case a == actFire && g.ShotTimer == 0:
		g.FBullets = append(g.FBullets, &sqBullet{g.SubX, g.SubY, g.SubOr})
		g.ShotTimer = sqShotCoolDown
	case a == actLeft:
		g.SubX = max(0, g.SubX-1)
		g.SubOr = false
	case a == actRight:
		g.SubX = min(9, g.SubX+1)
		g.SubOr = true
	case a == actUp:
		g.SubY = max(0, g.SubY-1)
	case a == actDown:
		g.SubY = min(8, g.SubY+1)
	}

	// Friendly bullets. Python's reversed(list) walks indices from the end
	// and stops as soon as an index is past the (shrunk) end.
	for i := len(g.FBullets) - 1; i >= 0 && i < len(g.FBullets); i-- {
		b := g.FBullets[i]
		step(&b.X, b.Right)
		if b.X < 0 || b.X > 9 {
			g.FBullets = removeEqual(g.FBullets, b)
			continue
		}
		removed := false
		for _, f := range g.EFish {
			if b.X == f.X && b.Y == f.Y {
				g.EFish = removeEqual(g.EFish, f)
				g.FBullets = removeEqual(g.FBullets, b)
				r++
				removed = true
				break
			}
		}
		if !removed {
			for _, s := range g.ESubs {
				if b.X == s.X && b.Y == s.Y {
					g.ESubs = removeEqual(g.ESubs, s)
					g.FBullets = removeEqual(g.FBullets, b)
					r++
					break
				}
			}
		}
	}

	// Divers.
	for i := len(g.Divers) - 1; i >= 0 && i < len(g.Divers); i-- {
		d := g.Divers[i]
		if g.atSub(d.X, d.Y) && g.DiverCount < 6 {
			g.Divers = removeEqual(g.Divers, d)
			g.DiverCount++
			continue
		}
		if d.Timer != 0 {
			d.Timer--
			continue
		}
		d.Timer = sqDiverMoveInt
		step(&d.X, d.Right)
		if d.X < 0 || d.X > 9 {
			g.Divers = removeEqual(g.Divers, d)
		} else if g.atSub(d.X, d.Y) && g.DiverCount < 6 {
			g.Divers = removeEqual(g.Divers, d)
			g.DiverCount++
		}
	}

	// Enemy subs.
	for i := len(g.ESubs) - 1; i >= 0 && i < len(g.ESubs); i-- {
		s := g.ESubs[i]
		if g.atSub(s.X, s.Y) {
			g.Terminal = true
		}
		if s.Timer == 0 {
			s.Timer = g.MoveSpeed
			step(&s.X, s.Right)
			if s.X < 0 || s.X > 9 {
				g.ESubs = removeEqual(g.ESubs, s)
			} else if g.atSub(s.X, s.Y) {
				g.Terminal = true
			} else {
				for _, b := range g.FBullets {
					if s.X == b.X && s.Y == b.Y {
						g.ESubs = removeEqual(g.ESubs, s)
						g.FBullets = removeEqual(g.FBullets, b)
						r++
						break
					}
				}
			}
		} else {
			s.Timer--
		}
		// A sub that just left or was shot still fires (MinAtar does).
		if s.ShotTimer == 0 {
			s.ShotTimer = sqEnemyShotInt
			g.EBullets = append(g.EBullets, &sqBullet{s.X, s.Y, s.Right})
		} else {
			s.ShotTimer--
		}
	}

	// Enemy bullets.
	for i := len(g.EBullets) - 1; i >= 0 && i < len(g.EBullets); i-- {
		b := g.EBullets[i]
		if g.atSub(b.X, b.Y) {
			g.Terminal = true
		}
		step(&b.X, b.Right)
		if b.X < 0 || b.X > 9 {
			g.EBullets = removeEqual(g.EBullets, b)
		} else if g.atSub(b.X, b.Y) {
			g.Terminal = true
		}
	}

	// Enemy fish.
	for i := len(g.EFish) - 1; i >= 0 && i < len(g.EFish); i-- {
		f := g.EFish[i]
		if g.atSub(f.X, f.Y) {
			g.Terminal = true
		}
		if f.Timer != 0 {
			f.Timer--
			continue
		}
		f.Timer = g.MoveSpeed
		step(&f.X, f.Right)
		if f.X < 0 || f.X > 9 {
			g.EFish = removeEqual(g.EFish, f)
		} else if g.atSub(f.X, f.Y) {
			g.Terminal = true
		} else {
			for _, b := range g.FBullets {
				if f.X == b.X && f.Y == b.Y {
					g.EFish = removeEqual(g.EFish, f)
					g.FBullets = removeEqual(g.FBullets, b)
					r++
					break
				}
			}
		}
	}

	if g.ESpawnTimer > 0 {
		g.ESpawnTimer--
	}
	if g.DSpawnTimer > 0 {
		g.DSpawnTimer--
	}
	if g.ShotTimer > 0 {
		g.ShotTimer--
	}
	if g.Oxygen <= 0 {
		g.Terminal = true
	}
	if g.SubY > 0 {
		g.Oxygen--
		g.Surface = false
	} else if !g.Surface {
		if g.DiverCount == 0 {
			g.Terminal = true
		} else {
			r += g.surface()
		}
	}
	return r, g.Terminal
}

// surface is MinAtar's _surface: with six divers it pays for the oxygen
// left; it restores the oxygen, uses up a diver (leaving −1 after a full
// six, as MinAtar does) and ramps the difficulty.
func (g *seaquest) surface() float64 {
	g.Surface = true
	r := 0
	if g.DiverCount == 6 {
		g.DiverCount = 0
		r = g.Oxygen * 10 / sqMaxOxygen
	}
	g.Oxygen = sqMaxOxygen
	g.DiverCount--
	if g.Ramping && (g.ESpawnSpeed > 1 || g.MoveSpeed > 2) {
		if g.MoveSpeed > 2 && g.RampIndex%2 != 0 {
			g.MoveSpeed--
		}
		if g.ESpawnSpeed > 1 {
			g.ESpawnSpeed--
		}
		g.RampIndex++
	}
	return float64(r)
}

// spawnEnemy draws a side, a kind and a row (always all three) and adds a
// fish or a sub there, unless something in that row moves the other way.
func (g *seaquest) spawnEnemy() {
	right := g.rng.RandomSample() < 0.5
	isSub := g.rng.RandomSample() < sqSubThreshold
	x := 9
	if right {
		x = 0
	}
	y := int(g.rng.RandInt(1, 9))
	for _, s := range g.ESubs {
		if s.Y == y && s.Right != right {
			return
		}
	}
	for _, f := range g.EFish {
		if f.Y == y && f.Right != right {
			return
		}
	}
	if isSub {
		g.ESubs = append(g.ESubs, &sqSub{x, y, right, g.MoveSpeed, sqEnemyShotInt})
	} else {
		g.EFish = append(g.EFish, &sqFish{x, y, right, g.MoveSpeed})
	}
}

func (g *seaquest) spawnDiver() {
	right := g.rng.RandomSample() < 0.5
	x := 9
	if right {
		x = 0
	}
	y := int(g.rng.RandInt(1, 9))
	g.Divers = append(g.Divers, &sqDiver{x, y, right, sqDiverMoveInt})
}

func (g *seaquest) state(set func(y, x, c int)) {
	set(g.SubY, g.SubX, 0)
	back := g.SubX + 1
	if g.SubOr {
		back = g.SubX - 1
	}
	set(g.SubY, back, 1)
	for x := 0; x < max(0, g.Oxygen)*10/sqMaxOxygen && x < 10; x++ {
		set(9, x, 7)
	}
	for x := max(0, 9-g.DiverCount); x < 9; x++ {
		set(9, x, 8)
	}
	for _, b := range g.FBullets {
		set(b.Y, b.X, 2)
	}
	for _, b := range g.EBullets {
		set(b.Y, b.X, 4)
	}
	trail := func(x, y int, right bool) {
		back := x + 1
		if right {
			back = x - 1
		}
		if back >= 0 && back <= 9 {
			set(y, back, 3)
		}
	}
	for _, f := range g.EFish {
		set(f.Y, f.X, 5)
		trail(f.X, f.Y, f.Right)
	}
	for _, s := range g.ESubs {
		set(s.Y, s.X, 6)
		trail(s.X, s.Y, s.Right)
	}
	for _, d := range g.Divers {
		set(d.Y, d.X, 9)
		trail(d.X, d.Y, d.Right)
	}
}

func (g *seaquest) snapshot() ([]byte, error) { return jsonSnapshot(g) }
func (g *seaquest) restore(b []byte) error    { return jsonRestore(b, g) }
