package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// listCursor is the selected row of a list shown through a window that
// scrolls to keep it in view: the movement keys and scrolling that every
// list screen (the picker's lists, the config editor, the runs browser)
// shares.
type listCursor struct {
	cursor int // index of the selected row
	offset int // first row on screen
}

// move applies a movement key to a list of n rows of which page fit on
// screen; it reports whether msg was one.
func (c *listCursor) move(k navKeys, msg tea.KeyMsg, n, page int) bool {
	last := max(n-1, 0)
	switch {
	case key.Matches(msg, k.Up):
		c.cursor = max(c.cursor-1, 0)
	case key.Matches(msg, k.Down):
		c.cursor = min(c.cursor+1, last)
	case key.Matches(msg, k.PageUp):
		c.cursor = max(c.cursor-page, 0)
	case key.Matches(msg, k.PageDown):
		c.cursor = min(c.cursor+page, last)
	case key.Matches(msg, k.Top):
		c.cursor = 0
	case key.Matches(msg, k.Bottom):
		c.cursor = last
	default:
		return false
	}
	return true
}

// follow moves the window of page rows over n rows so that the cursor is
// in it.
func (c *listCursor) follow(n, page int) {
	if c.cursor < c.offset {
		c.offset = c.cursor
	}
	if c.cursor >= c.offset+page {
		c.offset = c.cursor - page + 1
	}
	c.offset = max(0, min(c.offset, n-page))
}
