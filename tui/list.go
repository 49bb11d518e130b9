package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// choice is one row of a choiceList.
type choice struct {
	id   string // what choosing it selects
	kind string // a short second column (action type)
	desc string
}

// choiceList is a filterable, scrolling list of choices: the picker has one
// for environments and one for agents.
type choiceList struct {
	th         *theme
	keys       *keyMap
	title      string
	items      []choice
	shown      []int // indices into items that pass the filter
	listCursor       // over shown
	chosen     string
	filter     textinput.Model
	typing     bool // the filter has the keyboard
	w, h       int
}

func newChoiceList(th *theme, keys *keyMap, title string) choiceList {
	f := th.newInput("/", "type to filter")
	l := choiceList{th: th, keys: keys, title: title, filter: f}
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

func (l *choiceList) refilter() {
	q := strings.ToLower(strings.TrimSpace(l.filter.Value()))
	l.shown = l.shown[:0]
	for i, it := range l.items {
		if q == "" || strings.Contains(strings.ToLower(it.id+" "+it.kind+" "+it.desc), q) {
			l.shown = append(l.shown, i)
		}
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
	k := l.keys
	switch {
	case l.move(k, msg, len(l.shown), l.rows()):
	case key.Matches(msg, k.Filter):
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

// View draws the list; focused lists show their cursor.
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
		idW, kindW = max(idW, len([]rune(it.id))), max(kindW, len([]rune(it.kind)))
	}
	idW = min(idW, max(l.w/2, 8))
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
		line := mark + " " + fitLine(cut(it.id, idW), idW)
		if kindW > 0 {
			line += "  " + fitLine(it.kind, kindW)
		}
		rest := max(l.w-len([]rune(line))-2, 0)
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
