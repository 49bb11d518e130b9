package tui

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents"
)

// lmRegistry is testRegistry with a text environment and a language-model
// agent, as the registries list them once the lm agent is registered.
func lmRegistry() ([]EnvChoice, []AgentChoice) {
	es, as := testRegistry()
	es = append(es, EnvChoice{ID: "TextFrozenLake-v0", Description: "rLLM's FrozenLake in words", Action: "text", Observation: "text", MaxSteps: 10, Text: true})
	as = append(as, AgentChoice{Name: "lm", Description: "decoder-only language model for text environments", Text: true})
	return es, as
}

var registerTextAgent sync.Once

// The registry says which agents play text: one that refuses numbers of
// every shape, as the lm agent does, and none of the numeric ones.
func TestPlaysText(t *testing.T) {
	registerTextAgent.Do(func() {
		agents.Register(agents.Spec{Name: "tuitest-words", Description: "a test agent that plays text", Observes: agents.Text,
			New: func(agents.Build) (agents.Agent, error) { return nil, errors.New("pick a text env.id") }})
	})
	want := map[string]bool{"mlp": false, "cnn": false, "random": false, "tuitest-words": true}
	for name, text := range want {
		if got := playsText(name); got != text {
			t.Errorf("playsText(%s) = %v, want %v", name, got, text)
		}
	}
	es, as := Registry()
	for _, a := range as {
		if w, ok := want[a.Name]; ok && a.Text != w {
			t.Errorf("Registry lists %s with Text %v", a.Name, a.Text)
		}
	}
	// The convolutional agent plays an image world and no vector one (the
	// picker once lost it for MinAtar when it probed agents by building
	// them on a 4×4 image).
	r := registry{envs: es, agents: as, ready: true}
	if !slices.Contains(r.agentsFor("MinAtar/Breakout-v1"), "cnn") || slices.Contains(r.agentsFor("CartPole-v1"), "cnn") {
		t.Errorf("cnn for MinAtar/Breakout-v1: %v; for CartPole-v1: %v", r.agentsFor("MinAtar/Breakout-v1"), r.agentsFor("CartPole-v1"))
	}
}

// The picker pairs text environments with language-model agents and the
// others with numeric agents; an agent chosen for one kind is swapped for
// one that fits when the environment changes kind, and the picker says so.
func TestPickerPairsTextEnvsWithLMAgents(t *testing.T) {
	hs := newHarnessWith(t, 120, 40, func(o *Options, _ *fakeHost) { o.Registry = lmRegistry })
	hs.press("down", "enter") // CartPole-v1, then the agents
	if v := hs.view(); !strings.Contains(v, "mlp") || strings.Contains(v, "decoder-only") {
		t.Fatalf("a numeric environment lists the lm agent:\n%s", v)
	}
	hs.press("down", "enter") // random: chosen explicitly
	if got := hs.m.sh.draft.cfg.Agent.Name; got != "random" {
		t.Fatalf("agent %q, want random", got)
	}
	hs.press("1")
	for range 5 {
		hs.press("down")
	}
	hs.press("enter")
	v := hs.view()
	if got := hs.m.sh.draft.cfg; got.Env.ID != "TextFrozenLake-v0" || got.Agent.Name != "lm" {
		t.Fatalf("text FrozenLake drafted with %s on %s, want lm:\n%s", got.Agent.Name, got.Env.ID, v)
	}
	if !strings.Contains(v, "random does not play TextFrozenLake-v0: picked lm") {
		t.Errorf("the swap is not explained:\n%s", v)
	}
	if strings.Contains(v, "Uniformly random") || !strings.Contains(v, "decoder-only") {
		t.Errorf("the agents listed for a text environment are not the text ones:\n%s", v)
	}
	golden(t, "picker-text-120x40", hs.screenView())
}

// An agent that takes images alone is not kept for an environment of
// vectors: the editor's agent.name=cnn on CartPole, then Acrobot in the
// picker, trains Acrobot's preset agent, and the picker says so.
func TestPickerSwapsAnImageAgentOnVectors(t *testing.T) {
	if v, i := takes("cnn"); v || !i {
		t.Fatalf("takes(cnn) = %v, %v; want images alone", v, i)
	}
	if v, i := takes("mlp"); !v {
		t.Fatalf("takes(mlp) = %v, %v; want vectors", v, i)
	}
	reg := func() ([]EnvChoice, []AgentChoice) {
		es, as := lmRegistry()
		return es, append(as, AgentChoice{Name: "cnn", Description: "convolutional actor-critic", NoVectors: true})
	}
	hs := newHarnessWith(t, 120, 40, func(o *Options, _ *fakeHost) { o.Registry = reg })
	if _, err := hs.m.sh.draft.set("agent.name", "cnn"); err != nil {
		t.Fatal(err)
	}
	hs.press("1", "home", "enter") // Acrobot-v1
	v := hs.view()
	if got := hs.m.sh.draft.cfg.Agent.Name; got != "mlp" {
		t.Fatalf("Acrobot-v1 drafted with %s, want its preset mlp:\n%s", got, v)
	}
	if !strings.Contains(v, "cnn does not play Acrobot-v1: picked mlp") {
		t.Errorf("the swap is not explained:\n%s", v)
	}
	if strings.Contains(v, "convolutional") {
		t.Errorf("cnn is listed for an environment of vectors:\n%s", v)
	}
}
