package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// keyMap is every key binding of the app. Screens pick the bindings they
// use; each screen's help is a helpKeys value (help.KeyMap) built from them,
// so the help line always shows what the keys do on the screen at hand.
type keyMap struct {
	Help, Quit, ForceQuit key.Binding

	Screens, NextTab, PrevTab key.Binding // the tab bar, everywhere

	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Filter, Choose, Back, Tab               key.Binding

	StartNow, Runs key.Binding // picker

	Edit, Reset, Start key.Binding // editor

	Pause, Save, LiveEdit, Smooth, Band, NewRun, StopRun, LogUp, LogDown key.Binding // dashboard
	NextRun, PrevRun, Metric, Grid, XAxis, LogY, Zoom, Range             key.Binding // dashboard: runs and charts
	Export                                                               key.Binding // runs browser: the chart as a picture

	Mark, Compare, Refresh, Attach, Watch key.Binding // runs browser
	Sort, SortReverse, Details            key.Binding // runs browser: order, one run
	Rename, Tag, Note, Delete             key.Binding // runs browser: managing runs
	UseConfig                             key.Binding // sweeps: a trial's config into the editor

	PlayPause, StepFrame, Faster, Slower, NextEpisode, Replay key.Binding // watching an agent play

	Yes, No key.Binding // confirmation

	Detach key.Binding // leave a training that runs in its own process
}

func defaultKeys() keyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return keyMap{
		Help:      b([]string{"?"}, "?", "help"),
		Quit:      b([]string{"q", "ctrl+c"}, "q", "quit"),
		ForceQuit: b([]string{"ctrl+c"}, "ctrl+c", "quit now"),
		Screens:   b([]string{"1", "2", "3", "4", "5"}, "1-5/tab", "screens"),
		NextTab:   b([]string{"tab"}, "tab", "next screen"),
		PrevTab:   b([]string{"shift+tab"}, "shift+tab", "previous screen"),

		Up:       b([]string{"up", "k"}, "↑/k", "up"),
		Down:     b([]string{"down", "j"}, "↓/j", "down"),
		PageUp:   b([]string{"pgup", "ctrl+u"}, "pgup", "page up"),
		PageDown: b([]string{"pgdown", "ctrl+d"}, "pgdn", "page down"),
		Top:      b([]string{"home", "g"}, "g/home", "first"),
		Bottom:   b([]string{"end", "G"}, "G/end", "last"),
		Filter:   b([]string{"/"}, "/", "filter"),
		Choose:   b([]string{"enter"}, "enter", "choose"),
		Back:     b([]string{"esc"}, "esc", "back"),
		Tab:      b([]string{"left", "right", "h", "l"}, "←/→", "switch list"),

		StartNow: b([]string{"s"}, "s", "start now"),
		Runs:     b([]string{"R"}, "R", "runs"),

		Edit:  b([]string{"enter"}, "enter", "edit"),
		Reset: b([]string{"d"}, "d", "default"),
		Start: b([]string{"s"}, "s", "start training"),

		Pause:    b([]string{"p"}, "p", "pause"),
		Save:     b([]string{"s"}, "s", "checkpoint"),
		LiveEdit: b([]string{"e"}, "e", "edit live"),
		Smooth:   b([]string{"m"}, "m", "smooth"),
		Band:     b([]string{"b"}, "b", "min/max"),
		NewRun:   b([]string{"n"}, "n", "new run"),
		StopRun:  b([]string{"x"}, "x", "stop run"),
		LogUp:    b([]string{"pgup", "ctrl+u"}, "pgup/pgdn", "scroll log"),
		LogDown:  b([]string{"pgdown", "ctrl+d"}, "pgdn", "scroll log"),
		NextRun:  b([]string{"]"}, "[/]", "switch run"),
		PrevRun:  b([]string{"["}, "[", "previous run"),
		Metric:   b([]string{"c"}, "c", "chart metric"),
		Grid:     b([]string{"g"}, "g", "grid"),
		XAxis:    b([]string{"t"}, "t", "x: steps/time"),
		LogY:     b([]string{"l"}, "l", "log y"),
		Zoom:     b([]string{"z"}, "z", "zoom"),
		Range:    b([]string{"Z"}, "Z", "x range"),
		Export:   b([]string{"p"}, "p", "save as PNG"),

		Mark:    b([]string{" ", "space"}, "space", "mark"),
		Compare: b([]string{"c"}, "c", "compare marked"),
		Refresh: b([]string{"r"}, "r", "refresh"),
		Attach:  b([]string{"a"}, "a", "attach"),
		Watch:   b([]string{"w"}, "w", "watch"),

		Sort:        b([]string{"s"}, "s", "sort"),
		SortReverse: b([]string{"S"}, "S", "reverse order"),
		Details:     b([]string{"i"}, "i", "details"),
		Rename:      b([]string{"n"}, "n", "rename"),
		Tag:         b([]string{"t"}, "t", "tags"),
		Note:        b([]string{"e"}, "e", "note"),
		Delete:      b([]string{"d", "delete"}, "d", "delete"),
		UseConfig:   b([]string{"e"}, "e", "config → editor"),

		PlayPause:   b([]string{" ", "space"}, "space", "pause/play"),
		StepFrame:   b([]string{".", "right"}, ".", "one step"),
		Faster:      b([]string{"+", "="}, "+/-", "speed"),
		Slower:      b([]string{"-", "_"}, "-", "slower"),
		NextEpisode: b([]string{"n"}, "n", "next episode"),
		Replay:      b([]string{"r"}, "r", "replay"),

		Detach: b([]string{"D"}, "D", "detach"),
		Yes:    b([]string{"y", "Y", "enter"}, "y", "yes"),
		No:     b([]string{"n", "N", "esc"}, "n", "no"),
	}
}

// helpKeys is one screen's help: the short line and the full columns.
type helpKeys struct {
	short []key.Binding
	full  [][]key.Binding
}

func (h helpKeys) ShortHelp() []key.Binding  { return h.short }
func (h helpKeys) FullHelp() [][]key.Binding { return h.full }

// helpLine is a short help line: "key desc" pairs joined by " · ", wrapped
// onto at most lines lines instead of cut (the last one is cut).
func helpLine(th *theme, km help.KeyMap, w, lines int) string {
	var items []string
	st := th.helpStyles()
	for _, b := range km.ShortHelp() {
		if !b.Enabled() || b.Help().Key == "" {
			continue
		}
		items = append(items, st.ShortKey.Render(b.Help().Key)+" "+st.ShortDesc.Render(b.Help().Desc))
	}
	return wrapItems(items, " · ", w, lines)
}

// wrapWords wraps text at spaces onto at most lines lines of w cells.
func wrapWords(s string, w, lines int) string { return wrapItems(strings.Fields(s), " ", w, lines) }

// wrapAtSpaces breaks text into lines of at most w cells at its spaces
// (never inside a file name at its hyphens), splitting only a word longer
// than a line.
func wrapAtSpaces(s string, w int) []string {
	var out []string
	cur := ""
	for _, word := range strings.Fields(s) {
		for ansi.StringWidth(word) > w { // a path longer than the pane
			if cur != "" {
				out, cur = append(out, cur), ""
			}
			out = append(out, ansi.Truncate(word, w, ""))
			word = ansi.TruncateLeft(word, w, "")
		}
		switch {
		case cur == "":
			cur = word
		case ansi.StringWidth(cur)+1+ansi.StringWidth(word) <= w:
			cur += " " + word
		default:
			out, cur = append(out, cur), word
		}
	}
	if cur != "" || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

// wrapItems joins items with sep, starting a new line where the next item
// would not fit; past lines lines, the rest is cut.
func wrapItems(items []string, sep string, w, lines int) string {
	var out []string
	cur := ""
	for _, it := range items {
		switch {
		case cur == "":
			cur = it
		case lipgloss.Width(cur+sep+it) <= w:
			cur += sep + it
		default:
			out = append(out, cur)
			cur = it
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	if len(out) > lines {
		last := strings.Join(out[lines-1:], sep)
		out = append(out[:lines-1], cut(last, w))
	}
	for i := range out {
		out[i] = cut(out[i], w)
	}
	return strings.Join(out, "\n")
}
