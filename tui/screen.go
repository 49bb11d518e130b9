package tui

import (
	"path/filepath"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// Screen is one page of the app behind the tab bar (as soft-serve's
// common.Component): the root routes messages to the active screen, sizes
// it, and shows its key help. Screens talk to the root and to each other
// only through messages and the shared context, never through fields.
type Screen interface {
	Init() tea.Cmd
	// Update handles a message routed to the screen (keys when it is
	// active, its own messages whenever they arrive).
	Update(msg tea.Msg) tea.Cmd
	View() string
	SetSize(w, h int)
	// Help is the screen's key help, for the footer.
	Help() help.KeyMap
	// Capturing reports whether typed keys belong to a text field (a
	// filter, a value being edited): then the root's own keys (1–5, tab,
	// q, ?) are typed into it instead.
	Capturing() bool
	// Title names the screen in the tab bar.
	Title() string
}

// focuser is a screen that does something when it is shown (the runs
// browser reads the runs directory again).
type focuser interface{ Focus() tea.Cmd }

// shared is what every screen may read: the theme, the keys, the live runs
// and where runs are kept. The root owns it and keeps it current.
type shared struct {
	th      *theme
	keys    *keyMap
	runs    *runSet
	chart   *chartOpts // what the charts show, on every screen
	runsDir string
	now     func() time.Time
	// detachable reports whether quitting may leave the runs training.
	detachable func() bool
}

// The screens, in tab-bar order; watch is part of the runs browser.
const (
	scrPicker = iota
	scrEditor
	scrDashboard
	scrRuns
	scrSweeps
	scrWatch
	numScreens
)

// tabs are the screens the tab bar lists (1–5).
const tabs = 5

func cleanPath(p string) string { return filepath.Clean(p) }

// timeS turns a record's seconds into a duration.
func timeS(s trainer.Float) time.Duration { return time.Duration(float64(s) * float64(time.Second)) }
