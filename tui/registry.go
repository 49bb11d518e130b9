package tui

import (
	"fmt"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
)

// EnvChoice is an environment as the picker lists it.
type EnvChoice struct {
	ID          string
	Description string
	Action      string // "discrete(2)", "continuous(1)", or "?" when it cannot be built without arguments
	Observation string // "continuous(4)", "10×10×4 image"
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

// spaceName says what a space holds: discrete(3), continuous(4), or an
// image's height × width × channels.
func spaceName(s envs.Space) string {
	switch {
	case s.Kind == envs.Discrete:
		return fmt.Sprintf("discrete(%d)", s.N)
	case len(s.Shape) == 3:
		dims := make([]string, len(s.Shape))
		for i, d := range s.Shape {
			dims[i] = strconv.Itoa(d)
		}
		return strings.Join(dims, "×") + " image"
	}
	return fmt.Sprintf("continuous(%d)", s.Dim)
}

// registry is what the app knows of the registries, once listed.
type registry struct {
	envs   []EnvChoice
	agents []AgentChoice
	ready  bool
}

func (r *registry) envIDs() []string {
	ids := make([]string, len(r.envs))
	for i, e := range r.envs {
		ids[i] = e.ID
	}
	return ids
}

// registryMsg carries the registries, listed in a tea.Cmd: the app keeps
// them in the shared context and tells every screen.
type registryMsg struct {
	envs   []EnvChoice
	agents []AgentChoice
}

func (r registryMsg) apply(m *Model) tea.Cmd {
	*m.sh.reg = registry{envs: r.envs, agents: r.agents, ready: true}
	m.sh.draft.envIDs = m.sh.reg.envIDs()
	return broadcastMsg{r}.apply(m)
}
