package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap is every key binding of the app. Screens pick the bindings they
// use; each screen's help is a helpKeys value (help.KeyMap) built from them,
// so the help line always shows what the keys do on the screen at hand.
type keyMap struct {
	Help, Quit, ForceQuit key.Binding

	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Filter, Choose, Back, Tab               key.Binding

	StartNow, Runs key.Binding // picker

	Edit, Reset, Start key.Binding // editor

	Pause, Save, LiveEdit, Smooth, Band, NewRun, StopRun, LogUp, LogDown key.Binding // dashboard

	Mark, Compare, Refresh, Attach, Watch key.Binding // runs browser

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

		Up:       b([]string{"up", "k"}, "↑/k", "up"),
		Down:     b([]string{"down", "j"}, "↓/j", "down"),
		PageUp:   b([]string{"pgup", "ctrl+u"}, "pgup", "page up"),
		PageDown: b([]string{"pgdown", "ctrl+d"}, "pgdn", "page down"),
		Top:      b([]string{"home", "g"}, "g/home", "first"),
		Bottom:   b([]string{"end", "G"}, "G/end", "last"),
		Filter:   b([]string{"/"}, "/", "filter"),
		Choose:   b([]string{"enter"}, "enter", "choose"),
		Back:     b([]string{"esc"}, "esc", "back"),
		Tab:      b([]string{"tab", "shift+tab", "left", "right", "h", "l"}, "tab", "switch list"),

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

		Mark:    b([]string{" ", "space"}, "space", "mark"),
		Compare: b([]string{"c"}, "c", "compare marked"),
		Refresh: b([]string{"r"}, "r", "refresh"),
		Attach:  b([]string{"a"}, "a", "attach"),
		Watch:   b([]string{"w"}, "w", "watch"),

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
