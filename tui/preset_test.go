package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// Picking an environment brings in its preset; picking it again keeps the
// edits made since.
func TestPickAppliesThePreset(t *testing.T) {
	m := New(Options{Config: config.Default()})
	m.Update(pickedMsg{env: "Pendulum-v1", agent: "mlp"})
	if m.cfg.Env.ID != "Pendulum-v1" || m.cfg.PPO.Gamma != 0.9 || !m.cfg.Env.NormalizeObs {
		t.Fatalf("after picking Pendulum-v1: env %s gamma %v normalize_obs %v", m.cfg.Env.ID, m.cfg.PPO.Gamma, m.cfg.Env.NormalizeObs)
	}
	m.cfg.PPO.Gamma = 0.95
	m.Update(pickedMsg{env: "Pendulum-v1", agent: "mlp"})
	if m.cfg.PPO.Gamma != 0.95 {
		t.Fatal("picking the same env again threw away an edit")
	}
	m.Update(pickedMsg{env: "CartPole-v1", agent: "mlp"})
	if m.cfg.Env.NormalizeObs || m.cfg.PPO.NumSteps != 128 {
		t.Fatalf("back on CartPole-v1 the Pendulum preset lingers: normalize_obs %v, num_steps %d", m.cfg.Env.NormalizeObs, m.cfg.PPO.NumSteps)
	}
	// The user's own change goes along, and the app says so.
	if m.cfg.PPO.Gamma != 0.95 || !strings.Contains(m.note, "kept your changes: ppo.gamma") {
		t.Fatalf("the edit of gamma was not kept: gamma %v, note %q", m.cfg.PPO.Gamma, m.note)
	}
}

// d in the editor goes back to the environment's preset, and preset values
// do not count as the user's changes.
func TestEditorDefaultsAreThePreset(t *testing.T) {
	m := New(Options{Config: config.Default()})
	m.Update(pickedMsg{env: "Pendulum-v1", agent: "mlp"})
	e := m.screens[scrEditor].(*editor)
	if n := e.changedCount(); n != 0 {
		t.Fatalf("%d keys count as changed right after picking Pendulum-v1", n)
	}
	k, _ := config.Lookup("ppo.gamma")
	if got := e.baseValue(k); got != "0.9" {
		t.Fatalf("gamma's default on Pendulum-v1 is %s, want the preset's 0.9", got)
	}
}

// Coming back from the editor, the picker's keys move through the
// environments again, so s starts the environment under the cursor.
func TestPickerRefocusesEnvironmentsAfterTheEditor(t *testing.T) {
	m := New(Options{Config: config.Default()})
	m.Update(pickedMsg{env: "Pendulum-v1", agent: "mlp"})
	m.Update(closeEditorMsg{})
	if m.active != scrPicker || m.pk().focusAgents {
		t.Fatalf("screen %v, agents focused %v", m.active, m.pk().focusAgents)
	}
}

// w in the runs browser plays a run's checkpoint; esc comes back.
func TestWatchOpensAndCloses(t *testing.T) {
	m := New(Options{Config: config.Default()})
	m.Update(watchRunMsg{dir: t.TempDir()}) // not a run: the view says so
	if m.active != scrWatch {
		t.Fatalf("screen %v after watchRunMsg", m.active)
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEsc})
	m.Update(cmd())
	if m.active != scrRuns {
		t.Fatalf("esc left the screen at %v", m.active)
	}
}
