package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// Key maps: every screen declares its own bindings next to it (gh-dash's
// internal/tui/keys/), one struct per view it has; the app's own keys
// (globalKeys) work on every screen and no screen binds them. A test holds
// that no view binds a key twice and that its help shows every binding.

// bind makes a binding: the keys that trigger it, and how help names it.
func bind(help, desc string, keys ...string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
}

// navKeys move through a list; the list views embed them.
type navKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
}

func newNavKeys() navKeys {
	return navKeys{
		Up:       bind("↑/k", "up", "up", "k"),
		Down:     bind("↓/j", "down", "down", "j"),
		PageUp:   bind("pgup", "page up", "pgup", "ctrl+u"),
		PageDown: bind("pgdn", "page down", "pgdown", "ctrl+d"),
		Top:      bind("g/home", "first", "home", "g"),
		Bottom:   bind("G/end", "last", "end", "G"),
	}
}

func (k navKeys) group() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}
}

// textKeys are a text field's: apply (or keep) and cancel.
type textKeys struct{ Apply, Cancel key.Binding }

func newTextKeys(apply, cancel string) textKeys {
	return textKeys{Apply: bind("enter", apply, "enter"), Cancel: bind("esc", cancel, "esc")}
}

func (k textKeys) ShortHelp() []key.Binding  { return []key.Binding{k.Apply, k.Cancel} }
func (k textKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// confirmKeys answer a question.
type confirmKeys struct{ Yes, No key.Binding }

func newConfirmKeys(yes, no string) confirmKeys {
	return confirmKeys{Yes: bind("y", yes, "y", "Y"), No: bind("n", no, "n", "N", "esc")}
}

func (k confirmKeys) ShortHelp() []key.Binding  { return []key.Binding{k.Yes, k.No} }
func (k confirmKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// globalKeys work on every screen (unless a text field has the keyboard):
// the tab bar, help and quitting.
type globalKeys struct {
	Screens, NextTab, PrevTab key.Binding
	Help, Quit, ForceQuit     key.Binding
	Detach                    key.Binding
}

// newGlobalKeys binds 1…tabs to the tab bar's screens.
func newGlobalKeys(tabs int) globalKeys {
	digits := make([]string, 0, tabs)
	for i := 1; i <= min(tabs, 9); i++ {
		digits = append(digits, strconv.Itoa(i))
	}
	return globalKeys{
		Screens:   bind("1…", "the tab bar's screens", digits...),
		NextTab:   bind("tab", "next screen", "tab"),
		PrevTab:   bind("shift+tab", "previous screen", "shift+tab"),
		Help:      bind("?", "help", "?"),
		Quit:      bind("q", "quit", "q"),
		ForceQuit: bind("ctrl+c", "quit now", "ctrl+c"),
		Detach:    bind("D", "detach", "D"),
	}
}

func (k globalKeys) group() []key.Binding {
	return []key.Binding{k.Screens, k.NextTab, k.PrevTab, k.Help, k.Quit, k.ForceQuit, k.Detach}
}

// helpKeys is a view's help built on the spot (a mode with a few keys).
type helpKeys struct {
	short []key.Binding
	full  [][]key.Binding
}

func (h helpKeys) ShortHelp() []key.Binding { return h.short }
func (h helpKeys) FullHelp() [][]key.Binding {
	if h.full == nil {
		return [][]key.Binding{h.short}
	}
	return h.full
}

// renamed is a binding with other help text (the same keys).
func renamed(b key.Binding, desc string) key.Binding {
	b.SetHelp(b.Help().Key, desc)
	return b
}

// helpItem is one "key desc" pair of a help line.
func helpItem(th *theme, b key.Binding) string {
	st := th.helpStyles()
	return st.ShortKey.Render(b.Help().Key) + " " + st.ShortDesc.Render(b.Help().Desc)
}

// footerLine is a view's short help in at most lines lines of w cells,
// ending with tail (the app's own keys, never cut): the screen's items fill
// what is left in order, and those that do not fit give way to "…" (?
// lists them all).
func footerLine(th *theme, km help.KeyMap, tail []key.Binding, w, lines int) string {
	const sep = " · "
	sepW := len([]rune(sep))
	type item struct {
		text string
		w    int
	}
	mk := func(b key.Binding) item {
		t := helpItem(th, b)
		return item{t, lipgloss.Width(t)}
	}
	var items []item
	for _, b := range km.ShortHelp() {
		if b.Enabled() && b.Help().Key != "" {
			items = append(items, mk(b))
		}
	}
	var end []item
	endW := -sepW
	for _, b := range tail {
		end = append(end, mk(b))
		endW += end[len(end)-1].w + sepW
	}
	more := item{"…", 1}
	// widthOf is the width of a line of items, and what it would take
	// with another of width extra after it.
	widthOf := func(line []item) int {
		n := -sepW
		for _, it := range line {
			n += it.w + sepW
		}
		return max(n, 0)
	}
	plus := func(line []item, extra int) int {
		if len(line) == 0 {
			return extra
		}
		return widthOf(line) + sepW + extra
	}
	out := [][]item{nil}
	short := false
	for _, it := range items {
		for {
			line := &out[len(out)-1]
			need := it.w
			if len(out) == lines && len(end) > 0 {
				need += sepW + endW // the last line keeps the app's keys
			}
			if plus(*line, need) <= w {
				*line = append(*line, it)
				break
			}
			if len(*line) == 0 || len(out) == lines {
				short = true
				break
			}
			out = append(out, nil)
		}
		if short {
			break
		}
	}
	last := &out[len(out)-1]
	if short {
		for len(*last) > 0 && plus(*last, more.w+sepW+endW) > w {
			*last = (*last)[:len(*last)-1]
		}
		*last = append(*last, more)
	}
	if plus(*last, endW) <= w {
		*last = append(*last, end...)
	} else {
		out = append(out, end)
	}
	lines = min(lines, len(out))
	text := make([]string, 0, lines)
	for _, l := range out[len(out)-lines:] {
		parts := make([]string, len(l))
		for i, it := range l {
			parts[i] = it.text
		}
		text = append(text, cut(strings.Join(parts, sep), w))
	}
	return strings.Join(text, "\n")
}

// helpView is the full help (?): every binding of the view on show and the
// app's own, in columns that wrap to the width, scrolled when it is
// taller than the screen.
type helpView struct {
	open   bool
	offset int
	nav    navKeys
	close  key.Binding
}

func newHelpView() helpView {
	return helpView{nav: newNavKeys(), close: bind("esc/?", "close help", "esc", "?", "q")}
}

// lines lays the groups out in columns of w cells.
func (hv *helpView) lines(th *theme, groups [][]key.Binding, w int) []string {
	st := th.helpStyles()
	var blocks [][]string
	var widths []int
	for _, g := range groups {
		var col []string
		kw := 0
		for _, b := range g {
			if b.Help().Key != "" {
				kw = max(kw, ansi.StringWidth(b.Help().Key))
			}
		}
		width := 0
		for _, b := range g {
			if b.Help().Key == "" {
				continue
			}
			l := st.FullKey.Render(fitLine(b.Help().Key, kw)) + "  " + st.FullDesc.Render(b.Help().Desc)
			col = append(col, l)
			width = max(width, lipgloss.Width(l))
		}
		if len(col) > 0 {
			blocks, widths = append(blocks, col), append(widths, min(width, w))
		}
	}
	var out []string
	for i := 0; i < len(blocks); {
		j, used := i, 0
		for j < len(blocks) && (j == i || used+3+widths[j] <= w) {
			if j > i {
				used += 3
			}
			used += widths[j]
			j++
		}
		rows := 0
		for _, b := range blocks[i:j] {
			rows = max(rows, len(b))
		}
		for r := range rows {
			line := ""
			for c := i; c < j; c++ {
				cell := ""
				if r < len(blocks[c]) {
					cell = blocks[c][r]
				}
				if c > i {
					line += "   "
				}
				line += fitLine(cut(cell, widths[c]), widths[c])
			}
			out = append(out, strings.TrimRight(line, " "))
		}
		out = append(out, "")
		i = j
	}
	return out
}

// view draws the help in w×h, scrolled to its offset.
func (hv *helpView) view(th *theme, title string, groups [][]key.Binding, w, h int) string {
	lines := hv.lines(th, groups, w)
	rows := max(h-1, 1)
	hv.offset = max(0, min(hv.offset, len(lines)-rows))
	head := th.Title.Render("Keys: "+title) + th.Dim.Render("  esc or ? closes")
	if len(lines) > rows {
		head += th.Dim.Render(" · ↑/↓ pgup/pgdn scroll")
	}
	end := min(hv.offset+rows, len(lines))
	return fit(cut(head, w)+"\n"+strings.Join(lines[hv.offset:end], "\n"), w, h)
}
