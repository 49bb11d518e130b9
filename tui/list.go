package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// choice is one row of a choiceList.
type choice struct {
	id   string // what choosing it selects
	kind string // a short second column (action type)
	desc string
}

// choiceList is a fuzzy-filtered, scrolling list of choices: the picker
// has one for environments and one for agents.
type choiceList struct {
	th         *theme
	nav        navKeys
	filterKey  key.Binding
	items      []choice
	shown      []int // indices into items that pass the filter, best match first
	listCursor       // over shown
	chosen     string
	filter     textinput.Model
	typing     bool // the filter has the keyboard
	w, h       int
}

func newChoiceList(th *theme, nav navKeys, filterKey key.Binding) choiceList {
	f := th.newInput("/", "type to filter (fuzzy)")
	l := choiceList{th: th, nav: nav, filterKey: filterKey, filter: f}
	l.refilter()
	return l
}

func (l *choiceList) setItems(items []choice) {
	cur := l.current().id
	l.items = items
	l.refilter()
	l.selectID(cur)
}

// selectID moves the cursor to the item with id, if it is shown.
func (l *choiceList) selectID(id string) {
	for i, idx := range l.shown {
		if l.items[idx].id == id {
			l.cursor = i
			l.scroll()
			return
		}
	}
}

func (l *choiceList) current() choice {
	if l.cursor < 0 || l.cursor >= len(l.shown) {
		return choice{}
	}
	return l.items[l.shown[l.cursor]]
}

// refilter matches the ids fuzzily (mntcr finds MountainCar-v0) and the
// other columns as plain text, best matches first.
func (l *choiceList) refilter() {
	l.shown = fuzzyFilter(l.filter.Value(), len(l.items),
		func(i int) string { return l.items[i].id },
		func(i int) string { return l.items[i].kind + " " + l.items[i].desc })
	if strings.TrimSpace(l.filter.Value()) != "" {
		l.cursor = 0 // the best match
	}
	l.cursor = min(max(l.cursor, 0), max(len(l.shown)-1, 0))
	l.scroll()
}

func (l *choiceList) SetSize(w, h int) {
	l.w, l.h = w, h
	l.filter.Width = max(w-4, 1)
	l.scroll()
}

// rows is how many items fit: the filter line takes one row.
func (l *choiceList) rows() int { return max(l.h-1, 1) }

func (l *choiceList) scroll() { l.follow(len(l.shown), l.rows()) }

// Update handles a key; it reports whether the list used it.
func (l *choiceList) Update(msg tea.KeyMsg) (bool, tea.Cmd) {
	if l.typing {
		switch msg.Type {
		case tea.KeyEnter:
			l.typing = false
			l.filter.Blur()
			return true, nil
		case tea.KeyEsc:
			l.typing = false
			l.filter.Blur()
			l.filter.SetValue("")
			l.refilter()
			return true, nil
		case tea.KeyUp, tea.KeyDown:
			// fall through to moving the cursor while filtering
		default:
			var cmd tea.Cmd
			l.filter, cmd = l.filter.Update(msg)
			l.refilter()
			return true, cmd
		}
	}
	switch {
	case l.move(l.nav, msg, len(l.shown), l.rows()):
	case key.Matches(msg, l.filterKey):
		l.typing = true // a new filter each time
		l.filter.SetValue("")
		l.refilter()
		return true, l.filter.Focus()
	case msg.Type == tea.KeyEsc && l.filter.Value() != "":
		l.filter.SetValue("")
		l.refilter()
	default:
		return false, nil
	}
	l.scroll()
	return true, nil
}

// View draws the list; focused lists show their cursor. Ids take the
// room they need (cut in the middle when they cannot, so MinAtar's -v0
// and -v1 stay apart); descriptions get what is left.
func (l *choiceList) View(focused bool) string {
	var b strings.Builder
	switch {
	case l.typing || l.filter.Value() != "":
		b.WriteString(l.filter.View())
	default:
		b.WriteString(l.th.Dim.Render("/ to filter"))
	}
	idW, kindW := 0, 0
	for _, it := range l.items {
		idW, kindW = max(idW, ansi.StringWidth(it.id)), max(kindW, ansi.StringWidth(it.kind))
	}
	if kindW > 0 && 3+idW+2+kindW > l.w {
		kindW = 0 // the ids come first
	}
	idW = max(min(idW, l.w-3-kindW-2), 4)
	if len(l.shown) == 0 {
		b.WriteString("\n" + l.th.Dim.Render("  nothing matches"))
	}
	for i := l.offset; i < len(l.shown) && i < l.offset+l.rows(); i++ {
		it := l.items[l.shown[i]]
		mark := "  "
		if it.id == l.chosen {
			mark = " ✓"
		}
		if i == l.cursor && focused {
			mark = "▸" + mark[1:]
		}
		line := mark + " " + fitLine(cutMiddle(it.id, idW), idW)
		if kindW > 0 {
			line += "  " + fitLine(it.kind, kindW)
		}
		rest := l.w - ansi.StringWidth(line) - 2
		desc := ""
		if rest > 8 {
			desc = "  " + cut(it.desc, rest)
		}
		switch {
		case i == l.cursor && focused:
			line = l.th.Selected.Render(fitLine(line+desc, l.w))
		case it.id == l.chosen:
			line = l.th.Good.Render(line) + l.th.Dim.Render(desc)
		default:
			line += l.th.Dim.Render(desc)
		}
		b.WriteString("\n" + line)
	}
	return fit(b.String(), l.w, l.h)
}
