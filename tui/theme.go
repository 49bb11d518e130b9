package tui

import (
	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/lipgloss"
)

// theme holds every style the app draws with, so that a screen never picks
// a colour of its own. Meaning must never rest on colour alone: with colours
// off (golden tests, NO_COLOR, dumb terminals) marks like "▸", "*" and "!"
// still say what is selected, changed or wrong.
type theme struct {
	// r renders every style: the process's terminal by default, an SSH
	// session's own terminal (its colour profile and background) when the
	// app is served over SSH.
	r *lipgloss.Renderer

	Title    lipgloss.Style // screen titles and the app name
	Heading  lipgloss.Style // column headings, panel titles
	Dim      lipgloss.Style // secondary text
	Border   lipgloss.Style // panel borders
	Selected lipgloss.Style // the row under the cursor
	Changed  lipgloss.Style // config values that differ from the default
	Locked   lipgloss.Style // restart-only keys while training
	Good     lipgloss.Style
	Warn     lipgloss.Style
	Bad      lipgloss.Style

	Axis, Label       lipgloss.Style   // chart axes and tick labels
	Curve, Smooth     lipgloss.Style   // raw and smoothed mean return
	Band, Marker      lipgloss.Style   // min/max lines and live-edit markers
	Cursor            lipgloss.Style   // the chart's value cursor
	Faint             lipgloss.Style   // curves in the background while one is highlighted
	Palette           []lipgloss.Style // overlaid runs: sixteen colours apart, then again
	BarFull, BarEmpty string           // progress bar colours
}

// defaultTheme builds the styles for r; nil means lipgloss's default
// renderer (this process's standard output).
func defaultTheme(r *lipgloss.Renderer) theme {
	if r == nil {
		r = lipgloss.DefaultRenderer()
	}
	c := func(light, dark string) lipgloss.AdaptiveColor {
		return lipgloss.AdaptiveColor{Light: light, Dark: dark}
	}
	fg := func(light, dark string) lipgloss.Style { return r.NewStyle().Foreground(c(light, dark)) }
	return theme{
		r:        r,
		Title:    fg("#5A3FC0", "#B79CFF").Bold(true),
		Heading:  fg("#444444", "#CCCCCC").Bold(true),
		Dim:      fg("#8A8A8A", "#6C6C6C"),
		Border:   fg("#B0B0B0", "#4E4E4E"),
		Selected: fg("#000000", "#FFFFFF").Background(c("#E4DCFF", "#3B2F6B")).Bold(true),
		Changed:  fg("#B05A00", "#FFB454"),
		Locked:   fg("#A0A0A0", "#5C5C5C"),
		Good:     fg("#1E8A3C", "#5FD68A"),
		Warn:     fg("#B05A00", "#FFB454"),
		Bad:      fg("#C62828", "#FF6B6B").Bold(true),
		Axis:     fg("#9E9E9E", "#5C5C5C"),
		Label:    fg("#6C6C6C", "#9E9E9E"),
		Curve:    fg("#1F6FEB", "#58A6FF"),
		Smooth:   fg("#D6336C", "#FF7EB6"),
		Band:     fg("#B0C4DE", "#3A4F6B"),
		Marker:   fg("#B05A00", "#FFB454"),
		Cursor:   fg("#444444", "#E0E0E0"),
		Faint:    fg("#D0D0D0", "#3A3A3A"),
		Palette: []lipgloss.Style{
			fg("#1F6FEB", "#58A6FF"), fg("#D6336C", "#FF7EB6"), fg("#1E8A3C", "#5FD68A"),
			fg("#B05A00", "#FFB454"), fg("#7048E8", "#B197FC"), fg("#0B7285", "#66D9E8"),
			fg("#C92A2A", "#FF8787"), fg("#5C940D", "#A9E34B"), fg("#862E9C", "#E599F7"),
			fg("#E67700", "#FFD43B"), fg("#364FC7", "#91A7FF"), fg("#087F5B", "#63E6BE"),
			fg("#A61E4D", "#F783AC"), fg("#495057", "#CED4DA"), fg("#D9480F", "#FFA94D"),
			fg("#1864AB", "#74C0FC"),
		},
		BarFull:  "#7D56F4",
		BarEmpty: "#3C3C3C",
	}
}

// helpStyles are the help line's styles (bubbles' defaults) on the theme's
// renderer.
func (th *theme) helpStyles() help.Styles {
	key := th.r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "#909090", Dark: "#626262"})
	desc := th.r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "#B2B2B2", Dark: "#4A4A4A"})
	sep := th.r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "#DDDADA", Dark: "#3C3C3C"})
	return help.Styles{
		ShortKey: key, ShortDesc: desc, ShortSeparator: sep, Ellipsis: sep,
		FullKey: key, FullDesc: desc, FullSeparator: sep,
	}
}

// newInput is a text input with a steady cursor and its styles on the
// theme's renderer, so that the cursor shows on the terminal it is drawn
// on.
func (th *theme) newInput(prompt, placeholder string) textinput.Model {
	in := textinput.New()
	in.Prompt, in.Placeholder = prompt, placeholder
	in.Cursor.SetMode(cursor.CursorStatic)
	th.input(&in)
	return in
}

func (th *theme) input(in *textinput.Model) {
	in.PromptStyle = th.r.NewStyle()
	in.TextStyle = th.r.NewStyle()
	in.PlaceholderStyle = th.r.NewStyle().Foreground(lipgloss.Color("240"))
	in.CompletionStyle = th.r.NewStyle().Foreground(lipgloss.Color("240"))
	in.Cursor.Style = th.r.NewStyle()
	in.Cursor.TextStyle = th.r.NewStyle()
}
