package minatar

import "github.com/agenttrainer/agenttrainer/internal/nprand"

var spaceInvadersInfo = gameInfo{
	name: "space_invaders", title: "SpaceInvaders",
	channels: []string{"cannon", "alien", "alien_left", "alien_right", "friendly_bullet", "enemy_bullet"},
	letters:  "AM<>|!",
	minimal:  []int{actNoop, actLeft, actRight, actFire},
	newGame: func(_ *nprand.RandomState, ramping bool) game {
		g := &spaceInvaders{Ramping: ramping}
		g.reset()
		return g
	},
}

const (
	siShotCoolDown       = 5
	siEnemyMoveInterval  = 12
	siEnemyShotInterval  = 10
	siFastestMoveInterva = 6
)

// grid is a 10×10 boolean map, row-major, as MinAtar's NumPy maps.
type grid [10][10]bool

// rollRows is np.roll(m, k, axis=0) for k = ±1: row y moves to y+k, wrapping.
func (m grid) rollRows(k int) grid {
	var out grid
	for y := range 10 {
		out[(y+k+10)%10] = m[y]
	}
	return out
}

// rollCols is np.roll(m, k, axis=1) for k = ±1.
func (m grid) rollCols(k int) grid {
	var out grid
	for y := range 10 {
		for x := range 10 {
			out[y][(x+k+10)%10] = m[y][x]
		}
	}
	return out
}

func (m *grid) count() int {
	n := 0
	for _, row := range m {
		for _, b := range row {
			if b {
				n++
			}
		}
	}
	return n
}

func (m *grid) colAny(x int) bool {
	for y := range 10 {
		if m[y][x] {
			return true
		}
	}
	return false
}

func (m *grid) rowAny(y int) bool {
	for _, b := range m[y] {
		if b {
			return true
		}
	}
	return false
}

// spaceInvaders is MinAtar's space_invaders.py: a cannon in the bottom row
// shoots up at a block of aliens that marches sideways and down and shoots
// back from the alien nearest the cannon. It draws no random numbers (only
// the sticky actions do).
type spaceInvaders struct {
	Ramping           bool
	Pos               int
	FBullets          grid
	EBullets          grid
	Aliens            grid
	AlienDir          int
	EnemyMoveInterval int
	AlienMoveTimer    int
	AlienShotTimer    int
	RampIndex         int
	ShotTimer         int
	Terminal          bool
}

func (g *spaceInvaders) fillAliens() {
	for y := 0; y < 4; y++ {
		for x := 2; x < 8; x++ {
			g.Aliens[y][x] = true
		}
	}
}

func (g *spaceInvaders) reset() {
	g.Pos = 5
	g.FBullets, g.EBullets, g.Aliens = grid{}, grid{}, grid{}
	g.fillAliens()
	g.AlienDir = -1
	g.EnemyMoveInterval = siEnemyMoveInterval
	g.AlienMoveTimer = g.EnemyMoveInterval
	g.AlienShotTimer = siEnemyShotInterval
	g.RampIndex = 0
	g.ShotTimer = 0
	g.Terminal = false
}

func (g *spaceInvaders) act(a int) (float64, bool) {
	r := 0.0
	if g.Terminal {
		return r, true
	}
	switch {
	case a == actFire && g.ShotTimer == 0:
		g.FBullets[9][g.Pos] = true
		g.ShotTimer = siShotCoolDown
	case a == actLeft:
		g.Pos = max(0, g.Pos-1)
	case a == actRight:
		g.Pos = min(9, g.Pos+1)
	}
	g.FBullets = g.FBullets.rollRows(-1)
	g.FBullets[9] = [10]bool{}
	g.EBullets = g.EBullets.rollRows(1)
	g.EBullets[0] = [10]bool{}
	if g.EBullets[9][g.Pos] {
		g.Terminal = true
	}
	if g.Aliens[9][g.Pos] {
		g.Terminal = true
	}
	if g.AlienMoveTimer == 0 {
		g.AlienMoveTimer = min(g.Aliens.count(), g.EnemyMoveInterval)
		if (g.Aliens.colAny(0) && g.AlienDir < 0) || (g.Aliens.colAny(9) && g.AlienDir > 0) {
			g.AlienDir = -g.AlienDir
			if g.Aliens.rowAny(9) {
				g.Terminal = true
			}
			g.Aliens = g.Aliens.rollRows(1)
		} else {
			g.Aliens = g.Aliens.rollCols(g.AlienDir)
		}
		if g.Aliens[9][g.Pos] {
			g.Terminal = true
		}
	}
	if g.AlienShotTimer == 0 {
		g.AlienShotTimer = siEnemyShotInterval
		if y, x, ok := g.nearestAlien(); ok {
			g.EBullets[y][x] = true
		}
	}
	for y := range 10 {
		for x := range 10 {
			if g.Aliens[y][x] && g.FBullets[y][x] {
				r++
				g.Aliens[y][x], g.FBullets[y][x] = false, false
			}
		}
	}
	if g.ShotTimer > 0 {
		g.ShotTimer--
	}
	g.AlienMoveTimer--
	g.AlienShotTimer--
	if g.Aliens.count() == 0 {
		if g.EnemyMoveInterval > siFastestMoveInterva && g.Ramping {
			g.EnemyMoveInterval--
			g.RampIndex++
		}
		g.fillAliens()
	}
	return r, g.Terminal
}

// nearestAlien is the lowest alien of the column nearest the cannon
// (ties to the left, as Python's stable sort orders them).
func (g *spaceInvaders) nearestAlien() (y, x int, ok bool) {
	for d := 0; d < 10; d++ {
		for _, x := range []int{g.Pos - d, g.Pos + d} {
			if x < 0 || x > 9 || (d == 0 && x != g.Pos) {
				continue
			}
			for y := 9; y >= 0; y-- {
				if g.Aliens[y][x] {
					return y, x, true
				}
			}
			if d == 0 {
				break
			}
		}
	}
	return 0, 0, false
}

func (g *spaceInvaders) state(set func(y, x, c int)) {
	set(9, g.Pos, 0)
	dirCh := 3
	if g.AlienDir < 0 {
		dirCh = 2
	}
	for y := range 10 {
		for x := range 10 {
			if g.Aliens[y][x] {
				set(y, x, 1)
				set(y, x, dirCh)
			}
			if g.FBullets[y][x] {
				set(y, x, 4)
			}
			if g.EBullets[y][x] {
				set(y, x, 5)
			}
		}
	}
}

func (g *spaceInvaders) snapshot() ([]byte, error) { return jsonSnapshot(g) }
func (g *spaceInvaders) restore(b []byte) error    { return jsonRestore(b, g) }
