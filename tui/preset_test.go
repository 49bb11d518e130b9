package tui

import (
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
	if m.cfg.PPO.Gamma != 0.99 || m.cfg.Env.NormalizeObs {
		t.Fatalf("back on CartPole-v1 the Pendulum preset lingers: gamma %v", m.cfg.PPO.Gamma)
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
