package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
)

// EnvChoice is an environment as the picker lists it.
type EnvChoice struct {
	ID          string
	Description string
	Action      string // "discrete(2)", "continuous(1)", or "?" when it cannot be built without arguments
	Observation string
	MaxSteps    int
}

// AgentChoice is an agent as the picker lists it.
type AgentChoice struct {
	Name        string
	Description string
}

// Registry lists the registered environments and agents, custom ones
// included. Building an environment to learn its spaces may be slow (a
// remote environment starts a process), so the app calls it from a tea.Cmd.
func Registry() ([]EnvChoice, []AgentChoice) {
	var es []EnvChoice
	for _, id := range envs.IDs() {
		s, _ := envs.Lookup(id)
		c := EnvChoice{ID: id, Description: s.Description, Action: "?", Observation: "?", MaxSteps: s.MaxEpisodeSteps}
		if e, err := s.New(nil); err == nil {
			c.Action, c.Observation = spaceName(e.ActionSpace()), spaceName(e.ObservationSpace())
		}
		es = append(es, c)
	}
	var as []AgentChoice
	for _, name := range agents.Names() {
		s, _ := agents.Lookup(name)
		as = append(as, AgentChoice{Name: name, Description: s.Description})
	}
	return es, as
}

func spaceName(s envs.Space) string {
	if s.Kind == envs.Discrete {
		return fmt.Sprintf("discrete(%d)", s.N)
	}
	return fmt.Sprintf("continuous(%d)", s.Dim)
}

// registryMsg carries the registries, listed in a tea.Cmd.
type registryMsg struct {
	envs   []EnvChoice
	agents []AgentChoice
}

// pickedMsg says the user chose an environment and an agent; start skips the
// config editor.
type pickedMsg struct {
	env, agent string
	start      bool
}

// pickerResetMsg puts the picker back on choosing an environment, with
// env and agent chosen.
type pickerResetMsg struct{ env, agent string }

// picker is the first screen: environments and agents side by side.
type picker struct {
	sh          *shared
	th          *theme
	keys        *keyMap
	envs        []EnvChoice
	envList     choiceList
	agentList   choiceList
	focusAgents bool
	w, h        int
}

func newPicker(sh *shared, env, agent string) *picker {
	th, keys := sh.th, sh.keys
	p := &picker{sh: sh, th: th, keys: keys,
		envList:   newChoiceList(th, keys, "Environment"),
		agentList: newChoiceList(th, keys, "Agent")}
	p.envList.chosen, p.agentList.chosen = env, agent
	return p
}

func (p *picker) setRegistry(es []EnvChoice, as []AgentChoice) {
	p.envs = es
	items := make([]choice, len(es))
	for i, e := range es {
		items[i] = choice{id: e.ID, kind: e.Action, desc: e.Description}
	}
	p.envList.setItems(items)
	p.envList.selectID(p.envList.chosen)
	items = make([]choice, len(as))
	for i, a := range as {
		items[i] = choice{id: a.Name, desc: a.Description}
	}
	p.agentList.setItems(items)
	p.agentList.selectID(p.agentList.chosen)
	p.SetSize(p.w, p.h) // the lists are as tall as what they hold
}

func (p *picker) Init() tea.Cmd { return nil }
func (p *picker) Title() string { return "pick" }

// Capturing reports whether typed keys belong to a filter.
func (p *picker) Capturing() bool { return p.capturing() }

// capturing reports whether typed keys belong to a text field.
func (p *picker) capturing() bool { return p.envList.typing || p.agentList.typing }

func (p *picker) focused() *choiceList {
	if p.focusAgents {
		return &p.agentList
	}
	return &p.envList
}

func (p *picker) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case registryMsg:
		p.setRegistry(msg.envs, msg.agents)
		return nil
	case pickerResetMsg:
		p.envList.chosen, p.agentList.chosen = msg.env, msg.agent
		p.envList.selectID(msg.env)
		p.agentList.selectID(msg.agent)
		p.focusAgents = false
		return nil
	}
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	l := p.focused()
	if used, cmd := l.Update(km); used {
		return cmd
	}
	k := p.keys
	switch {
	case key.Matches(km, k.Tab):
		p.focusAgents = !p.focusAgents
	case key.Matches(km, k.Choose):
		c := l.current()
		if c.id == "" {
			return nil
		}
		l.chosen = c.id
		if !p.focusAgents {
			p.focusAgents = true // an environment first, then the agent
			return nil
		}
		return p.pick(false)
	case key.Matches(km, k.StartNow):
		if c := l.current(); c.id != "" {
			l.chosen = c.id
		}
		return p.pick(true)
	}
	return nil
}

func (p *picker) pick(start bool) tea.Cmd {
	msg := pickedMsg{env: p.envList.chosen, agent: p.agentList.chosen, start: start}
	if msg.env == "" || msg.agent == "" {
		return nil
	}
	return func() tea.Msg { return msg }
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
	bg := 0
	for _, r := range p.sh.runs.runs {
		if r.background && r.active() {
			bg++
		}
	}
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
// line first (narrow layouts show only that one).
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
	for _, e := range p.envs {
		if e.ID != env {
			continue
		}
		s := fmt.Sprintf("%s: actions %s, observations %s", e.ID, e.Action, e.Observation)
		if e.MaxSteps > 0 {
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
	lines = append(lines, "", th.Dim.Render(cut("enter: environment, then agent → config editor → s starts training", w)))
	return lines
}

func (p *picker) Help() help.KeyMap {
	k := p.keys
	if p.capturing() {
		return helpKeys{short: []key.Binding{
			key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep filter")),
			key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		}}
	}
	return helpKeys{
		short: []key.Binding{k.Choose, k.StartNow, k.Tab, k.Filter, k.Screens, k.Quit, k.Help},
		full: [][]key.Binding{
			{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
			{k.Choose, k.StartNow, k.Tab, k.Filter},
			{k.Screens, k.Runs, k.Help, k.Quit},
		},
	}
}
