package tui

import (
	"path/filepath"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// Screen is one page of the app (as soft-serve's common.Component): the
// root sizes it, shows its key help, hands it the keys while it is shown,
// and every message it does not own itself. A screen's commands are
// addressed to it (see address), so their results come back to it
// whichever screen is shown then; it talks to the app and to other screens
// only through appMsgs and the shared context, never through their fields.
type Screen interface {
	Init() tea.Cmd
	Update(msg tea.Msg) tea.Cmd
	View() string
	SetSize(w, h int)
	// Help is the key map of what the screen shows now: the short line
	// and, for ?, every binding.
	Help() help.KeyMap
	// KeyMaps are the key maps of all its views (a test holds that none
	// binds a key twice, or one of the app's own, and that each one's
	// help shows all its bindings).
	KeyMaps() []help.KeyMap
	// Capturing reports whether typed keys belong to a text field (a
	// filter, a value being edited): the app's own keys (1–9, tab, q, ?)
	// are typed into it instead.
	Capturing() bool
	// Title names the screen in the tab bar.
	Title() string
}

// screenID addresses a screen: the registry's key, and where its
// commands' results are delivered.
type screenID string

// focuser is a screen that does something each time it is shown (the runs
// browser reads the runs directory again, the sweeps screen starts
// looking).
type focuser interface{ Focus() tea.Cmd }

// blurrer is a screen that stops something when another is shown (its
// ticks, a playing episode).
type blurrer interface{ Blur() }

// shared is what every screen may read and, for the pending config and the
// run set, change: the root owns it and keeps its size-independent parts
// current.
type shared struct {
	th      *theme
	host    Host
	runs    *runSet
	chart   *chartOpts // what the charts show, on every screen
	draft   *draft     // the config the next run starts from
	reg     *registry  // environments and agents, once listed
	runsDir string
	now     func() time.Time
	redraw  time.Duration
	refresh time.Duration // the runs browser's and sweeps screen's look again; <0 never
}

func cleanPath(p string) string { return filepath.Clean(p) }

// timeS turns a record's seconds into a duration.
func timeS(s trainer.Float) time.Duration { return time.Duration(float64(s) * float64(time.Second)) }
