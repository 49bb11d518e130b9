package tui

import (
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// promptInput is a text field that may open holding a value (a run's name,
// the zoom range, a config value): the value shows selected, and the first
// letter typed replaces it, as in a dialog's field; any other key (an
// arrow, backspace) keeps it for editing.
type promptInput struct {
	textinput.Model
	th    *theme
	fresh bool // filled in and not touched yet
}

func newPromptInput(th *theme, prompt, placeholder string) promptInput {
	return promptInput{Model: th.newInput(prompt, placeholder), th: th}
}

// fill opens the field on v, the cursor at its end.
func (p *promptInput) fill(v string) {
	p.SetValue(v)
	p.CursorEnd()
	p.fresh = v != ""
	p.style()
}

// update takes a key (or a cursor blink) into the field.
func (p *promptInput) update(msg tea.Msg) tea.Cmd {
	if km, ok := msg.(tea.KeyMsg); ok && p.fresh {
		p.fresh = false
		if km.Type == tea.KeyRunes || km.Type == tea.KeySpace {
			p.SetValue("")
		}
		p.style()
	}
	var cmd tea.Cmd
	p.Model, cmd = p.Model.Update(msg)
	return cmd
}

// style shows a value that typing would replace as selected.
func (p *promptInput) style() {
	if p.fresh {
		p.TextStyle = p.th.Selected
	} else {
		p.TextStyle = p.th.r.NewStyle()
	}
}
