package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// EnvChoice is an environment as the picker lists it.
type EnvChoice struct {
	ID          string
	Description string
	Action      string // "discrete(2)", "continuous(1)", or "?" when it cannot be built without arguments
	Observation string // "continuous(4)", "10×10×4 image"
	MaxSteps    int
	// Text marks a text environment (envs/text's registry): a language
	// model plays it, in words.
	Text bool
}

// AgentChoice is an agent as the picker lists it.
type AgentChoice struct {
	Name        string
	Description string
	// Text marks an agent that plays text environments (a language
	// model) and no numeric one; NoVectors one that takes images but not
	// vector observations (a convolutional network).
	Text, NoVectors bool
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
	for _, id := range text.IDs() {
		s, _ := text.Lookup(id)
		es = append(es, EnvChoice{ID: id, Description: s.Description, Action: "text", Observation: "text", MaxSteps: s.MaxTurns, Text: true})
	}
	var as []AgentChoice
	for _, name := range agents.Names() {
		s, _ := agents.Lookup(name)
		vectors, images := takes(name)
		as = append(as, AgentChoice{Name: name, Description: s.Description, Text: !vectors && !images, NoVectors: !vectors && images})
	}
	return es, as
}

// takes reports which numeric observations a registered agent plays, as
// its Spec declares: one that plays neither vectors nor images plays text
// (a language model's agent); one that plays images alone is
// convolutional.
func takes(name string) (vectors, images bool) {
	s, _ := agents.Lookup(name)
	p := s.Plays()
	return p&agents.Vectors != 0, p&agents.Images != 0
}

// playsText reports whether a registered agent plays text and no numbers.
func playsText(name string) bool {
	vectors, images := takes(name)
	return !vectors && !images
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

// fits reports whether agent can play envID: a text agent a text
// environment; any other agent any other environment, except one that
// takes images alone an environment of vectors. Names the registry does
// not list fit (the trainer has the last word), as does an environment
// whose observations are unknown until it is built (remote).
func (r *registry) fits(envID, agent string) bool {
	ei := slices.IndexFunc(r.envs, func(e EnvChoice) bool { return e.ID == envID })
	ai := slices.IndexFunc(r.agents, func(a AgentChoice) bool { return a.Name == agent })
	if ei < 0 || ai < 0 {
		return true
	}
	e, a := r.envs[ei], r.agents[ai]
	if e.Text != a.Text {
		return false
	}
	return !a.NoVectors || e.Text || e.Observation == "?" || strings.HasSuffix(e.Observation, "image")
}

// agentsFor lists the agents that fit envID, in the registry's order.
func (r *registry) agentsFor(envID string) []string {
	var out []string
	for _, a := range r.agents {
		if r.fits(envID, a.Name) {
			out = append(out, a.Name)
		}
	}
	return out
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
	m.sh.draft.reg = m.sh.reg
	return broadcastMsg{r}.apply(m)
}
