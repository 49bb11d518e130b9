package tui

import tea "github.com/charmbracelet/bubbletea"

// How messages find their way (soft-serve's ui.go forwards to the active
// page; gh-dash's MakeSectionCmd addresses a section's async results): the
// root handles the window size and the keys that work everywhere, runs
// appMsgs, delivers addressed messages to their screen, and forwards
// everything else to the screen on show. It names none of the screens'
// own messages.

// addressed is a screen's async result on its way back to the screen, shown
// or not.
type addressed struct {
	to  screenID
	msg tea.Msg
}

// appMsg is a message for the app itself (start a run, show a screen,
// quit): it carries its own handling, so the root needs no list of them.
type appMsg interface{ apply(m *Model) tea.Cmd }

// address makes cmd's result come back to screen id: an appMsg goes to the
// app as it is, a batch is addressed command by command, anything else is
// wrapped for the screen.
func address(id screenID, cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		switch msg := cmd().(type) {
		case nil:
			return nil
		case appMsg, addressed, tea.QuitMsg:
			return msg
		case tea.BatchMsg:
			out := make(tea.BatchMsg, len(msg))
			for i, c := range msg {
				out[i] = address(id, c)
			}
			return out
		default:
			return addressed{to: id, msg: msg}
		}
	}
}

// send is a command that delivers msg.
func send(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }

// gotoMsg shows a screen and then hands it msg (nil: nothing); esc there
// comes back (backMsg).
type gotoMsg struct {
	to  screenID
	msg tea.Msg
}

func (g gotoMsg) apply(m *Model) tea.Cmd {
	if g.to != m.active {
		m.history = append(m.history, m.active)
	}
	show := m.show(g.to)
	if g.msg == nil {
		return show
	}
	return tea.Batch(show, m.deliver(g.to, g.msg))
}

// backMsg leaves the screen for the one it was reached from, else for
// fallback.
type backMsg struct{ fallback screenID }

func (b backMsg) apply(m *Model) tea.Cmd {
	to := b.fallback
	if n := len(m.history); n > 0 {
		to, m.history = m.history[n-1], m.history[:n-1]
	}
	if to == "" {
		to = m.order[0]
	}
	return m.show(to)
}

// broadcastMsg hands msg to every screen (the registries, once listed).
type broadcastMsg struct{ msg tea.Msg }

func (b broadcastMsg) apply(m *Model) tea.Cmd {
	var cmds []tea.Cmd
	for _, id := range m.order {
		cmds = append(cmds, m.deliver(id, b.msg))
	}
	return tea.Batch(cmds...)
}
