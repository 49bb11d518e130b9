package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/runs/runplot"
)

// zooms are the shares of the X axis a chart shows, in turn.
var zooms = []int{100, 50, 25, 10}

// smoothings are the weights m and M step through: TensorBoard's slider as
// a value (0 is the raw curve).
var smoothings = []float64{0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.99}

// defaultSmoothing is TensorBoard's default weight.
const defaultSmoothing = 2

// chartOpts are the viewer's choices of what the charts show; the app
// holds one set, so the dashboard and the runs browser show runs the same
// way.
type chartOpts struct {
	metric string         // the big chart's metric (a metricDefs name)
	smooth int            // index into smoothings
	band   bool           // return: the min/max band
	grid   bool           // a grid of small charts instead of one
	wall   bool           // X in wall-clock time instead of env steps
	logY   bool           //
	zoom   int            // index into zooms
	xr     *runplot.Range // a typed part of the X axis; overrides zoom
}

func defaultChartOpts() chartOpts {
	return chartOpts{metric: "ep_return_mean", smooth: defaultSmoothing, band: true}
}

// weight is the smoothing weight (0: none).
func (o *chartOpts) weight() float64 { return smoothings[o.smooth] }

// newRun forgets the zoom: a range into one run's steps would show nothing
// of a run that has just begun.
func (o *chartOpts) newRun() { o.zoom, o.xr = 0, nil }

// xRange is the part of an axis that ends at full (the runs' extent, the
// training's total) and whose data end at last to show: all of it, the
// last share, or the typed range.
func (o *chartOpts) xRange(last, full float64) (float64, float64) {
	switch {
	case o.xr != nil:
		return o.xr.Resolve(0, full)
	case zooms[o.zoom] < 100:
		hi := math.Max(last, 1)
		return hi * (1 - float64(zooms[o.zoom])/100), hi
	}
	return 0, full
}

// zoomTitle is what the title says of the zoom: "", " · last 25%",
// " · 100k-300k".
func (o *chartOpts) zoomTitle() string {
	switch {
	case o.xr != nil:
		return " · " + o.xr.Text
	case zooms[o.zoom] < 100:
		return fmt.Sprintf(" · last %d%%", zooms[o.zoom])
	}
	return ""
}

// smoothTitle is what the title says of the smoothing.
func (o *chartOpts) smoothTitle() string {
	if o.weight() == 0 {
		return ""
	}
	return " · smoothing " + strconv.FormatFloat(o.weight(), 'f', -1, 64)
}

// chartKeys are the bindings every chart view shares (the dashboard's,
// one run's curves, runs overlaid).
type chartKeys struct {
	Metric, Grid, XAxis, LogY, Zoom, Range key.Binding
	Smooth, SmoothLess, Band               key.Binding
	CursorLeft, CursorRight                key.Binding
}

func newChartKeys() chartKeys {
	return chartKeys{
		Metric:      bind("c", "chart metric", "c"),
		Grid:        bind("g", "grid", "g"),
		XAxis:       bind("t", "x: steps/time", "t"),
		LogY:        bind("l", "log y", "l"),
		Zoom:        bind("z", "zoom", "z"),
		Range:       bind("Z", "x range", "Z"),
		Smooth:      bind("m", "smooth more", "m"),
		SmoothLess:  bind("M", "smooth less", "M"),
		Band:        bind("b", "min/max", "b"),
		CursorLeft:  bind("←", "cursor left", "left"),
		CursorRight: bind("→", "cursor right (reads values)", "right"),
	}
}

func (k chartKeys) group() []key.Binding {
	return []key.Binding{k.Metric, k.Grid, k.XAxis, k.LogY, k.Zoom, k.Range, k.Smooth, k.SmoothLess, k.Band, k.CursorLeft, k.CursorRight}
}

// pickerKeys of the metric picker and the range prompt.
var (
	metricPickKeys = newTextKeys("chart it", "cancel")
	rangeKeys      = newTextKeys("zoom (empty: all)", "cancel")
)

// chartControls are what every chart view shares: pick a metric from a
// filtered list, grid, X in steps or time, log Y, zoom to the last share
// or a typed range, smoothing, band, and a cursor that reads values.
type chartControls struct {
	sh   *shared
	opts *chartOpts
	keys chartKeys

	picking bool // the metric picker has the keyboard
	filter  textinput.Model
	choices []string
	listCursor

	ranging  bool // the range prompt has the keyboard
	rangeIn  promptInput
	rangeErr string

	col int // the value cursor's column in the graph; -1 hidden
}

func newChartControls(sh *shared) chartControls {
	in := newPromptInput(sh.th, "x range: ", "100k-300k, 20%-60%, 5m-12m (time) or 250k- (to the end)")
	in.CharLimit = 40
	return chartControls{sh: sh, opts: sh.chart, keys: newChartKeys(), filter: sh.th.newInput("/", "filter metrics (fuzzy)"), rangeIn: in, col: -1}
}

// capturing: the picker's filter or the range prompt takes typed keys.
func (c *chartControls) capturing() bool { return c.picking || c.ranging }

// key handles a chart key; has says which channels the runs on screen have
// (val_* metrics are offered only then). It reports whether km was one.
func (c *chartControls) key(km tea.KeyMsg, has func(channel) bool) (bool, tea.Cmd) {
	switch {
	case c.picking:
		return true, c.updatePicker(km, has)
	case c.ranging:
		return true, c.updateRange(km)
	}
	k, o := c.keys, c.opts
	switch {
	case key.Matches(km, k.Metric):
		c.openPicker(has)
		return true, c.filter.Focus()
	case key.Matches(km, k.Range):
		c.ranging, c.rangeErr = true, ""
		c.rangeIn.fill("")
		if o.xr != nil {
			c.rangeIn.fill(o.xr.Text)
		}
		return true, c.rangeIn.Focus()
	case key.Matches(km, k.Grid):
		o.grid = !o.grid
		c.col = -1
	case key.Matches(km, k.XAxis):
		o.wall = !o.wall
		o.xr = nil // a range is in the units of the axis it was typed for
	case key.Matches(km, k.LogY):
		o.logY = !o.logY
	case key.Matches(km, k.Zoom):
		if o.xr != nil {
			o.xr, o.zoom = nil, 0
		} else {
			o.zoom = (o.zoom + 1) % len(zooms)
		}
	case key.Matches(km, k.Smooth):
		o.smooth = min(o.smooth+1, len(smoothings)-1)
	case key.Matches(km, k.SmoothLess):
		o.smooth = max(o.smooth-1, 0)
	case key.Matches(km, k.Band):
		o.band = !o.band
	case key.Matches(km, k.CursorLeft) && !o.grid:
		if c.col < 0 {
			c.col = 1 << 20 // appears at the right end, on the latest values
		} else {
			c.col = max(c.col-1, 0)
		}
	case key.Matches(km, k.CursorRight) && !o.grid:
		if c.col < 0 {
			c.col = 1 << 20
		} else {
			c.col++
		}
	case km.Type == tea.KeyEsc && c.col >= 0:
		c.col = -1
	default:
		return false, nil
	}
	return true, nil
}

// openPicker lists the metrics (val_* only when present).
func (c *chartControls) openPicker(has func(channel) bool) {
	c.picking = true
	c.filter.SetValue("")
	c.refilter(has)
	for i, name := range c.choices {
		if name == c.opts.metric {
			c.cursor = i
		}
	}
}

func (c *chartControls) refilter(has func(channel) bool) {
	var names []string
	for _, m := range metricDefs {
		if (m.ch == chValReturn || m.ch == chValSuccess) && !has(m.ch) {
			continue
		}
		names = append(names, m.name)
	}
	c.choices = c.choices[:0]
	for _, i := range fuzzyFilter(c.filter.Value(), len(names), func(i int) string { return names[i] }, nil) {
		c.choices = append(c.choices, names[i])
	}
	if strings.TrimSpace(c.filter.Value()) != "" {
		c.listCursor.cursor = 0
	}
	c.listCursor.cursor = min(c.listCursor.cursor, max(len(c.choices)-1, 0))
}

func (c *chartControls) updatePicker(km tea.KeyMsg, has func(channel) bool) tea.Cmd {
	lc := &c.listCursor
	switch km.Type {
	case tea.KeyEsc:
		c.picking = false
		c.filter.Blur()
		return nil
	case tea.KeyEnter:
		if lc.cursor < len(c.choices) {
			c.opts.metric = c.choices[lc.cursor]
			c.opts.grid = false
		}
		c.picking = false
		c.filter.Blur()
		return nil
	case tea.KeyUp:
		lc.cursor = max(lc.cursor-1, 0)
		return nil
	case tea.KeyDown:
		lc.cursor = min(lc.cursor+1, max(len(c.choices)-1, 0))
		return nil
	}
	var cmd tea.Cmd
	c.filter, cmd = c.filter.Update(km)
	c.refilter(has)
	return cmd
}

// updateRange edits the typed range; enter applies it (an empty one shows
// the whole axis), a mistake keeps the prompt open and says what is wrong.
func (c *chartControls) updateRange(km tea.KeyMsg) tea.Cmd {
	switch km.Type {
	case tea.KeyEsc:
		c.ranging, c.rangeErr = false, ""
		c.rangeIn.Blur()
		return nil
	case tea.KeyEnter:
		text := strings.TrimSpace(c.rangeIn.Value())
		if text == "" {
			c.opts.xr, c.opts.zoom = nil, 0
		} else {
			r, err := runplot.ParseRange(text)
			if err != nil {
				c.rangeErr = err.Error()
				return nil
			}
			if (c.opts.wall && strings.ContainsAny(text, "kKMG")) || (!c.opts.wall && strings.ContainsAny(text, "smh")) {
				c.rangeErr = fmt.Sprintf("the X axis is in %s now: type %s (t switches the axis)",
					map[bool]string{true: "wall-clock time", false: "env steps"}[c.opts.wall],
					map[bool]string{true: "a time such as 5m-12m", false: "steps such as 100k-300k"}[c.opts.wall])
				return nil
			}
			c.opts.xr = &r
		}
		c.ranging, c.rangeErr = false, ""
		c.rangeIn.Blur()
		return nil
	}
	c.rangeErr = ""
	return c.rangeIn.update(km)
}

// viewPicker is the metric picker in w×h: a filter and the metrics that
// pass it, each with its latest value.
func (c *chartControls) viewPicker(w, h int, last func(channel) float64) string {
	th := c.sh.th
	var b strings.Builder
	b.WriteString(th.Title.Render("Chart a metric") + th.Dim.Render("  type to filter · ↑/↓ · enter charts it · esc keeps the chart") + "\n")
	b.WriteString(c.filter.View() + "\n")
	rows := max(h-3, 1)
	lc := &c.listCursor
	lc.follow(len(c.choices), rows)
	for i := lc.offset; i < len(c.choices) && i < lc.offset+rows; i++ {
		name := c.choices[i]
		def, _ := metricByName(name)
		v := num(last(def.ch))
		line := fitLine("  "+name, 26) + th.Dim.Render(v)
		if i == lc.cursor {
			line = th.Selected.Render(fitLine("▸ "+name, 26) + v)
		}
		b.WriteString(line + "\n")
	}
	if len(c.choices) == 0 {
		b.WriteString(th.Dim.Render("  no metric matches"))
	}
	return fit(b.String(), w, h)
}

// viewRange is the range prompt's line (and its complaint), w wide.
func (c *chartControls) viewRange(w int) string {
	line := cut(c.rangeIn.View(), w)
	if c.rangeErr != "" {
		line += "\n" + c.sh.th.Bad.Render(wrapWords(c.rangeErr, w, 2))
	}
	return line
}

// rangeLines is how many lines viewRange takes.
func (c *chartControls) rangeLines() int {
	switch {
	case !c.ranging:
		return 0
	case c.rangeErr != "":
		return 3
	}
	return 1
}

// help is the keys while the picker or the prompt is open (nil otherwise).
func (c *chartControls) help() *textKeys {
	switch {
	case c.picking:
		return &metricPickKeys
	case c.ranging:
		return &rangeKeys
	}
	return nil
}

// gridOf lays out small charts of names in w×h: as many columns as 26
// cells allow, rows no shorter than 5 lines (the names that do not fit are
// left out); cell draws one in its size.
func gridOf(names []string, w, h int, cell func(i int, name string, w, h int) string) string {
	cols := max(w/26, 1)
	rows := (len(names) + cols - 1) / cols
	for rows > 1 && h/rows < 5 {
		rows--
	}
	names = names[:min(len(names), rows*cols)]
	cellH := h / max(rows, 1)
	var lines []string
	for row := 0; row < rows; row++ {
		var blocks []string
		ch := cellH
		if row == rows-1 {
			ch = h - cellH*(rows-1)
		}
		for col := 0; col < cols; col++ {
			cw := w / cols
			if col == cols-1 {
				cw = w - (w/cols)*(cols-1)
			}
			i := row*cols + col
			if i >= len(names) {
				blocks = append(blocks, fit("", cw, ch))
				continue
			}
			blocks = append(blocks, cell(i, names[i], cw, ch))
		}
		lines = append(lines, columns(blocks...))
	}
	return strings.Join(lines, "\n")
}

// gridMetrics are the grid's metrics, val_* only where has says so.
func gridMetrics(has func(channel) bool) []string {
	var out []string
	for _, m := range metricDefs {
		if !m.grid || ((m.ch == chValReturn || m.ch == chValSuccess) && !has(m.ch)) {
			continue
		}
		out = append(out, m.name)
	}
	return out
}

// cellTitle is the title of a small chart in a box boxW wide: the metric
// and its latest value, the name shortened rather than the value, with a
// dash of border left on each side.
func cellTitle(name string, v float64, boxW int) string {
	w := boxW - 6 // corners, a dash each side, the title's blanks
	if math.IsNaN(v) {
		return cut(name, w)
	}
	val := " " + num(v)
	room := w - len([]rune(val))
	if room < 4 {
		return cut(name, w)
	}
	return cut(name, room) + val
}
