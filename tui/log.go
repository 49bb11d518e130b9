package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// logKeys are the whole log's bindings.
type logKeys struct {
	navKeys
	Search, Next, Prev, Close key.Binding
}

func newLogKeys() logKeys {
	return logKeys{navKeys: newNavKeys(),
		Search: bind("/", "search", "/"),
		Next:   bind("n", "next match", "n"),
		Prev:   bind("N", "previous match", "N"),
		Close:  bind("esc", "back to the charts", "esc", "L"),
	}
}

func (k logKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Search, k.Next, k.Prev, k.PageUp, k.PageDown, k.Close}
}

func (k logKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.navKeys.group(), {k.Search, k.Next, k.Prev, k.Close}}
}

// logPager is a run's whole log on the full screen: scrolled like less,
// searched with / (matches highlighted, n and N between them).
type logPager struct {
	th         *theme
	keys       logKeys
	searchKeys textKeys
	open       bool
	title      string
	lines      []string // as wrapped to the width
	src        int      // how many log lines lines was made from
	vp         viewport.Model
	searching  bool
	search     textinput.Model
	query      string
	matches    []int // line numbers holding the query
	at         int   // the match shown
	w, h       int
}

func newLogPager(th *theme) logPager {
	return logPager{th: th, keys: newLogKeys(), searchKeys: newTextKeys("find", "cancel"),
		vp: viewport.New(10, 3), search: th.newInput("/", "search the log")}
}

func (l *logPager) capturing() bool { return l.open && l.searching }

func (l *logPager) resize(w, h int) {
	l.w, l.h = w, h
	l.vp.Width, l.vp.Height = max(w, 1), max(h-2, 1)
	l.src = -1 // wrap again
}

// show opens the pager on a run's log, at its end.
func (l *logPager) show(title string, logs []string, w, h int) {
	l.open, l.title, l.query, l.matches = true, title, "", nil
	l.resize(w, h)
	l.update(title, logs)
	l.vp.GotoBottom()
}

// update takes in lines that arrived since, following the end unless the
// reader scrolled up.
func (l *logPager) update(title string, logs []string) {
	if l.src == len(logs) && l.title == title {
		return
	}
	follow := l.vp.AtBottom()
	l.title, l.src = title, len(logs)
	l.lines = wrapLog(logs, l.vp.Width)
	l.find()
	l.render()
	if follow {
		l.vp.GotoBottom()
	}
}

// find lists the lines that hold the query (case aside).
func (l *logPager) find() {
	l.matches = nil
	if l.query == "" {
		return
	}
	q := strings.ToLower(l.query)
	for i, line := range l.lines {
		if strings.Contains(strings.ToLower(line), q) {
			l.matches = append(l.matches, i)
		}
	}
	l.at = min(l.at, max(len(l.matches)-1, 0))
}

// render puts the lines in the viewport, the query's matches marked.
func (l *logPager) render() {
	if l.query == "" {
		l.vp.SetContent(strings.Join(l.lines, "\n"))
		return
	}
	out := make([]string, len(l.lines))
	q := strings.ToLower(l.query)
	for i, line := range l.lines {
		lower := strings.ToLower(line)
		var b strings.Builder
		for {
			j := strings.Index(lower, q)
			if j < 0 || len(lower) != len(line) { // a case change that moves bytes: mark the line
				if j >= 0 {
					b.WriteString(l.th.Selected.Render(line))
					line = ""
				}
				break
			}
			b.WriteString(line[:j] + l.th.Selected.Render(line[j:j+len(q)]))
			line, lower = line[j+len(q):], lower[j+len(q):]
		}
		out[i] = b.String() + line
	}
	l.vp.SetContent(strings.Join(out, "\n"))
}

// jump shows match i.
func (l *logPager) jump(i int) {
	if len(l.matches) == 0 {
		return
	}
	l.at = (i + len(l.matches)) % len(l.matches)
	l.vp.SetYOffset(max(l.matches[l.at]-l.vp.Height/2, 0))
}

func (l *logPager) key(km tea.KeyMsg) tea.Cmd {
	if l.searching {
		switch km.Type {
		case tea.KeyEnter:
			l.searching = false
			l.search.Blur()
			l.query = strings.TrimSpace(l.search.Value())
			l.at = 0
			l.find()
			l.render()
			// the first match at or after what is on screen
			for i, m := range l.matches {
				if m >= l.vp.YOffset {
					l.at = i
					break
				}
			}
			l.jump(l.at)
			return nil
		case tea.KeyEsc:
			l.searching = false
			l.search.Blur()
			return nil
		}
		var cmd tea.Cmd
		l.search, cmd = l.search.Update(km)
		return cmd
	}
	k := l.keys
	switch {
	case key.Matches(km, k.Close):
		l.open = false
	case key.Matches(km, k.Search):
		l.searching = true
		l.search.SetValue("")
		return l.search.Focus()
	case key.Matches(km, k.Next):
		l.jump(l.at + 1)
	case key.Matches(km, k.Prev):
		l.jump(l.at - 1)
	case key.Matches(km, k.Up):
		l.vp.ScrollUp(1)
	case key.Matches(km, k.Down):
		l.vp.ScrollDown(1)
	case key.Matches(km, k.PageUp):
		l.vp.PageUp()
	case key.Matches(km, k.PageDown):
		l.vp.PageDown()
	case key.Matches(km, k.Top):
		l.vp.GotoTop()
	case key.Matches(km, k.Bottom):
		l.vp.GotoBottom()
	}
	return nil
}

// input hands a non-key message (a cursor blink) to the search field.
func (l *logPager) input(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	l.search, cmd = l.search.Update(msg)
	return cmd
}

func (l *logPager) view(w, h int) string {
	th := l.th
	head := th.Title.Render("Log") + " " + l.title + th.Dim.Render(fmt.Sprintf(" · %s", plural(len(l.lines), "line", "lines")))
	switch {
	case l.query != "" && len(l.matches) == 0:
		head += th.Warn.Render(fmt.Sprintf(" · /%s: no match", l.query))
	case l.query != "":
		head += th.Good.Render(fmt.Sprintf(" · /%s: %d of %d", l.query, l.at+1, len(l.matches)))
	}
	foot := th.Dim.Render(fmt.Sprintf("%d%%", int(l.vp.ScrollPercent()*100)))
	if l.searching {
		foot = l.search.View()
	}
	return fit(cut(head, w)+"\n"+l.vp.View()+"\n"+cut(foot, w), w, h)
}

func (l *logPager) help() help.KeyMap {
	if l.searching {
		return l.searchKeys
	}
	return l.keys
}

// wrapLog wraps log lines at spaces to w cells, continuations indented
// under their time stamp (a path, a refusal with its reason) instead of
// cut at the pane's edge.
func wrapLog(logs []string, w int) []string {
	lines := make([]string, 0, len(logs))
	for _, l := range logs {
		wrapped := wrapAtSpaces(l, max(w-9, 20))
		for i := 1; i < len(wrapped); i++ {
			wrapped[i] = "         " + wrapped[i]
		}
		for _, x := range wrapped {
			lines = append(lines, ansi.Truncate(x, max(w, 1), ""))
		}
	}
	return lines
}
