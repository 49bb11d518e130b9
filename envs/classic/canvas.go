package classic

import (
	"math"
	"strings"
)

// canvas is a small character grid for Render pictures: world coordinates
// with y up, mapped onto cells around an origin cell. Terminal cells are
// about twice as tall as wide, so pictures use twice as many cells per unit
// across as down.
type canvas struct {
	cells  [][]rune
	ox, oy int     // the origin's cell
	sx, sy float64 // cells per world unit
}

func newCanvas(width, height, ox, oy int, sx, sy float64) *canvas {
	c := &canvas{cells: make([][]rune, height), ox: ox, oy: oy, sx: sx, sy: sy}
	for i := range c.cells {
		c.cells[i] = []rune(strings.Repeat(" ", width))
	}
	return c
}

// plot marks the cell holding (x, y); points off the grid (or NaN) are
// dropped.
func (c *canvas) plot(x, y float64, ch rune) {
	fx, fy := math.Round(x*c.sx), math.Round(y*c.sy)
	if !(math.Abs(fx) < 1e6 && math.Abs(fy) < 1e6) {
		return
	}
	col, row := c.ox+int(fx), c.oy-int(fy)
	if row >= 0 && row < len(c.cells) && col >= 0 && col < len(c.cells[row]) {
		c.cells[row][col] = ch
	}
}

// line marks cells along the segment from (x0, y0) to (x1, y1).
func (c *canvas) line(x0, y0, x1, y1 float64, ch rune) {
	const n = 16
	for i := 0; i <= n; i++ {
		f := float64(i) / n
		c.plot(x0+f*(x1-x0), y0+f*(y1-y0), ch)
	}
}

// hline marks a whole row at height y.
func (c *canvas) hline(y float64, ch rune) {
	row := c.oy - int(math.Round(y*c.sy))
	if row >= 0 && row < len(c.cells) {
		for i := range c.cells[row] {
			c.cells[row][i] = ch
		}
	}
}

// String returns the rows, trailing blanks trimmed, each ending in a newline.
func (c *canvas) String() string {
	var b strings.Builder
	for _, row := range c.cells {
		b.WriteString(strings.TrimRight(string(row), " "))
		b.WriteByte('\n')
	}
	return b.String()
}
