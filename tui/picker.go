package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

const scrPicker screenID = "pick"

// pickerKeys are the picker's bindings.
type pickerKeys struct {
	navKeys
	Choose, StartNow, SwitchList, Filter key.Binding
}

func newPickerKeys() pickerKeys {
	return pickerKeys{navKeys: newNavKeys(),
		Choose:     bind("enter", "choose", "enter"),
		StartNow:   bind("s", "start now", "s"),
		SwitchList: bind("←/→", "switch list", "left", "right", "h", "l"),
		Filter:     bind("/", "filter", "/"),
	}
}

func (k pickerKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Choose, k.StartNow, k.SwitchList, k.Filter}
}

func (k pickerKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.navKeys.group(), {k.Choose, k.StartNow, k.SwitchList, k.Filter}}
}

// picker is the first screen: environments and agents side by side. What
// it ticks is the pending config's (the draft's) environment and agent;
// choosing puts them there.
type picker struct {
	sh          *shared
	th          *theme
	keys        pickerKeys
	filterKeys  textKeys
	envList     choiceList
	agentList   choiceList
	focusAgents bool
	note        string // what choosing the environment kept of the user's changes
	w, h        int
}

func newPicker(sh *shared) Screen {
	k := newPickerKeys()
	p := &picker{sh: sh, th: sh.th, keys: k, filterKeys: newTextKeys("keep filter", "clear filter"),
		envList:   newChoiceList(sh.th, k.navKeys, k.Filter),
		agentList: newChoiceList(sh.th, k.navKeys, k.Filter)}
	p.sync()
	return p
}

// sync ticks the draft's environment and agent.
func (p *picker) sync() {
	cfg := &p.sh.draft.cfg
	p.envList.chosen, p.agentList.chosen = cfg.Env.ID, cfg.Agent.Name
}

func (p *picker) setRegistry() {
	reg := p.sh.reg
	items := make([]choice, len(reg.envs))
	for i, e := range reg.envs {
		items[i] = choice{id: e.ID, kind: e.Action, desc: e.Description}
	}
	p.envList.setItems(items)
	p.setAgents()
	p.sync()
	p.envList.selectID(p.envList.chosen)
	p.agentList.selectID(p.agentList.chosen)
	p.SetSize(p.w, p.h) // the lists are as tall as what they hold
}

// setAgents lists the agents that can play the draft's environment: text
// agents for a text environment, the others for the rest.
func (p *picker) setAgents() {
	reg, env := p.sh.reg, p.sh.draft.cfg.Env.ID
	var items []choice
	for _, a := range reg.agents {
		if reg.fits(env, a.Name) {
			items = append(items, choice{id: a.Name, desc: a.Description})
		}
	}
	p.agentList.setItems(items)
}

func (p *picker) Init() tea.Cmd { return nil }
func (p *picker) Title() string { return "pick" }

// Capturing reports whether typed keys belong to a filter.
func (p *picker) Capturing() bool { return p.envList.typing || p.agentList.typing }

// Focus shows the draft's choices, the environment list first.
func (p *picker) Focus() tea.Cmd {
	p.setAgents() // the editor may have changed the environment
	p.sync()
	p.envList.selectID(p.envList.chosen)
	p.agentList.selectID(p.agentList.chosen)
	p.focusAgents = false
	return nil
}

func (p *picker) focused() *choiceList {
	if p.focusAgents {
		return &p.agentList
	}
	return &p.envList
}

func (p *picker) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case registryMsg:
		p.setRegistry()
		return nil
	case tea.KeyMsg:
		return p.key(msg)
	}
	return nil
}

func (p *picker) key(km tea.KeyMsg) tea.Cmd {
	l := p.focused()
	if used, cmd := l.Update(km); used {
		return cmd
	}
	k := p.keys
	switch {
	case key.Matches(km, k.SwitchList):
		p.focusAgents = !p.focusAgents
	case key.Matches(km, k.Choose):
		c := l.current()
		if c.id == "" {
			return nil
		}
		if !p.focusAgents {
			if !p.chooseEnv(c.id) {
				return nil
			}
			p.focusAgents = true // an environment first, then the agent
			return nil
		}
		if !p.chooseAgent(c.id) {
			return nil
		}
		return send(gotoMsg{to: scrEditor, msg: openEditorMsg{}})
	case key.Matches(km, k.StartNow):
		if c := l.current(); c.id != "" {
			ok := p.chooseEnv(c.id)
			if p.focusAgents {
				ok = p.chooseAgent(c.id)
			}
			if !ok {
				return nil
			}
		}
		return send(startMsg{cfg: p.sh.draft.config()})
	}
	return nil
}

// chooseEnv puts env in the draft: its preset and preset agent, with the
// user's changes kept.
func (p *picker) chooseEnv(env string) bool {
	if p.focusAgents {
		return true
	}
	note, err := p.sh.draft.setEnv(env)
	if err != nil {
		p.note = err.Error()
		return false
	}
	p.note = note
	p.setAgents()
	p.sync()
	p.agentList.selectID(p.agentList.chosen)
	p.SetSize(p.w, p.h)
	return true
}

func (p *picker) chooseAgent(agent string) bool {
	note, err := p.sh.draft.setAgent(agent)
	if err != nil {
		p.note = err.Error()
		return false
	}
	if note != "" {
		p.note = note
	}
	p.sync()
	return true
}

func (p *picker) SetSize(w, h int) {
	p.w, p.h = w, h
	lw, aw, lh := p.layout()
	p.envList.SetSize(lw-2, lh-2)
	p.agentList.SetSize(aw-2, lh-2)
}

// layout returns the widths of the two panels (side by side when they fit,
// else one at a time at full width) and their height: as tall as the
// longer list needs, leaving the rest to the details below.
func (p *picker) layout() (lw, aw, lh int) {
	rows := max(len(p.envList.items), len(p.agentList.items), 4) + 3 // filter line and borders
	lh = max(min(p.h-3, rows), 3)
	if p.w < 72 {
		return p.w, p.w, lh
	}
	aw = max(p.w*2/5, 30)
	return p.w - aw, aw, lh
}

func (p *picker) View() string {
	th := p.th
	p.sync()
	title := th.Title.Render("Pick an environment and an agent") +
		th.Dim.Render("  enter chooses, s starts right away")
	if n := p.sh.runs.active(); n > 0 {
		title = th.Title.Render("Pick an environment and an agent") + "  " + th.Good.Render(p.trainingNote(n))
	}
	lw, aw, lh := p.layout()
	envBox := box(th, "Environment", p.envList.View(!p.focusAgents), lw, lh)
	agentBox := box(th, "Agent", p.agentList.View(p.focusAgents), aw, lh)
	var body string
	switch {
	case p.w >= 72:
		body = columns(envBox, agentBox)
	case p.focusAgents:
		body = agentBox
	default:
		body = envBox
	}
	rest := p.h - 1 - lh
	details := p.details(p.w - 2)
	if rest >= 4 {
		return fit(title+"\n"+body+"\n"+box(th, "Details", strings.Join(details, "\n"), p.w, min(rest, len(details)+2)), p.w, p.h)
	}
	return fit(title+"\n"+body+"\n"+cut(details[0], p.w), p.w, p.h)
}

// trainingNote says which runs train now, those found in the background
// at start-up first.
func (p *picker) trainingNote(n int) string {
	bg := p.sh.runs.count(func(r *run) bool { return r.background && r.active() })
	them := "them"
	if n == 1 {
		them = "it"
	}
	switch { // short: it shares the title line, 80 columns at the least
	case bg == n && n == 1:
		return "1 run training in the background · 3 shows it"
	case bg == n:
		return fmt.Sprintf("%d runs training in the background · 3 shows them", n)
	case bg > 0:
		return fmt.Sprintf("%d training, %d from before · 3 shows them", n, bg)
	}
	return fmt.Sprintf("%d training · 3 shows %s", n, them)
}

// details describes the highlighted environment and agent, most telling
// line first (narrow layouts show only that one), then what choosing kept.
func (p *picker) details(w int) []string {
	th := p.th
	env := p.envList.current().id
	if p.focusAgents {
		env = p.envList.chosen
	}
	agent := p.agentList.chosen
	if p.focusAgents {
		agent = p.agentList.current().id
	}
	var lines []string
	for _, e := range p.sh.reg.envs {
		if e.ID != env {
			continue
		}
		s := fmt.Sprintf("%s: actions %s, observations %s", e.ID, e.Action, e.Observation)
		switch {
		case e.Text:
			s = fmt.Sprintf("%s: a text environment for language-model agents, up to %s an episode", e.ID, plural(e.MaxSteps, "turn", "turns"))
		case e.MaxSteps > 0:
			s += fmt.Sprintf(", episodes of up to %d steps", e.MaxSteps)
		}
		lines = append(lines, th.Heading.Render(cut(s, w)))
		if e.Description != "" {
			lines = append(lines, cut(e.Description, w))
		}
	}
	for _, it := range p.agentList.items {
		if it.id == agent {
			lines = append(lines, cut(th.Heading.Render("agent "+it.id)+": "+it.desc, w))
		}
	}
	if len(lines) == 0 {
		lines = append(lines, th.Dim.Render("reading the registries…"))
	}
	if p.note != "" {
		lines = append(lines, th.Warn.Render(cut(p.note, w)))
	}
	lines = append(lines, "", th.Dim.Render(cut("enter: environment, then agent → config editor → s starts training", w)))
	return lines
}

func (p *picker) Help() help.KeyMap {
	if p.Capturing() {
		return p.filterKeys
	}
	return p.keys
}

func (p *picker) KeyMaps() []help.KeyMap { return []help.KeyMap{p.keys, p.filterKeys} }
