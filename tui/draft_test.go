package tui

import (
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

func newTestDraft(t *testing.T) *draft {
	t.Helper()
	cfg, err := PresetResolve("CartPole-v1", "")
	if err != nil {
		t.Fatal(err)
	}
	return newDraft(cfg, PresetResolve)
}

// Choosing an environment brings in its preset; choosing it again keeps
// the edits made since; another environment keeps only the user's own
// changes, and says so.
func TestDraftAppliesThePreset(t *testing.T) {
	d := newTestDraft(t)
	if _, err := d.setEnv("Pendulum-v1"); err != nil {
		t.Fatal(err)
	}
	if d.cfg.PPO.Gamma != 0.9 || !d.cfg.Env.NormalizeObs || len(d.changedKeys()) != 0 {
		t.Fatalf("after Pendulum-v1: gamma %v normalize_obs %v changed %v", d.cfg.PPO.Gamma, d.cfg.Env.NormalizeObs, d.changedKeys())
	}
	if _, err := d.set("ppo.gamma", "0.95"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.setEnv("Pendulum-v1"); err != nil || d.cfg.PPO.Gamma != 0.95 {
		t.Fatalf("choosing the same environment again threw away an edit (%v)", err)
	}
	note, err := d.setEnv("CartPole-v1")
	if err != nil || d.cfg.Env.NormalizeObs || d.cfg.PPO.NumSteps != 128 {
		t.Fatalf("back on CartPole-v1 the Pendulum preset lingers: normalize_obs %v, num_steps %d (%v)", d.cfg.Env.NormalizeObs, d.cfg.PPO.NumSteps, err)
	}
	if d.cfg.PPO.Gamma != 0.95 || note != "kept your changes: ppo.gamma" {
		t.Fatalf("gamma %v, note %q", d.cfg.PPO.Gamma, note)
	}
	// A key set back to the preset's value is no change any more.
	if _, err := d.set("ppo.gamma", "0.99"); err != nil || len(d.changedKeys()) != 0 {
		t.Errorf("changed %v after typing the preset's value", d.changedKeys())
	}
}

// Defect 3: an environment's preset is not the user's change. Choosing
// MinAtar marks no key as changed, and going back keeps nothing the user
// never touched.
func TestDraftPresetKeysAreNotChanges(t *testing.T) {
	d := newTestDraft(t)
	note, err := d.setEnv("MinAtar/Breakout-v1")
	if err != nil || note != "" || len(d.changedKeys()) != 0 {
		t.Fatalf("MinAtar: note %q, changed %v (%v)", note, d.changedKeys(), err)
	}
	if d.cfg.Agent.Name != "cnn" {
		t.Errorf("MinAtar's preset agent is cnn, the draft has %s", d.cfg.Agent.Name) // defect 4
	}
	note, _ = d.setEnv("CartPole-v1")
	if note != "" || len(d.changedKeys()) != 0 {
		t.Errorf("back on CartPole-v1: note %q, changed %v", note, d.changedKeys())
	}
	if d.cfg.Agent.Name != "mlp" {
		t.Errorf("after a cnn environment, CartPole-v1 keeps agent %s (defect 4)", d.cfg.Agent.Name)
	}
}

// Defect 4: an agent the user chose in the editor goes along to another
// environment; the preset's agent otherwise.
func TestDraftAgentFollowsThePresetUnlessChosen(t *testing.T) {
	d := newTestDraft(t)
	if _, err := d.set("agent.name", "random"); err != nil {
		t.Fatal(err)
	}
	if !d.isChanged("agent.name") || d.title() != "CartPole-v1 · random" {
		t.Fatalf("changed %v, title %q", d.changedKeys(), d.title())
	}
	if _, err := d.setEnv("MinAtar/Breakout-v1"); err != nil || d.cfg.Agent.Name != "random" {
		t.Fatalf("the chosen agent did not go along: %s (%v)", d.cfg.Agent.Name, err)
	}
	if _, err := d.reset("agent.name"); err != nil || d.cfg.Agent.Name != "cnn" || d.isChanged("agent.name") {
		t.Errorf("d on agent.name: %s, changed %v (%v)", d.cfg.Agent.Name, d.changedKeys(), err)
	}
}

// Defect 3: an unknown environment typed in the editor is refused at once,
// with the nearest names.
func TestDraftRefusesAnUnknownEnvironment(t *testing.T) {
	d := newTestDraft(t)
	d.envIDs = []string{"Acrobot-v1", "CartPole-v1", "MountainCar-v0"}
	_, err := d.set("env.id", "CartPol-v1")
	if err == nil || !strings.Contains(err.Error(), `unknown environment "CartPol-v1"; did you mean CartPole-v1?`) {
		t.Fatalf("err = %v", err)
	}
	if d.cfg.Env.ID != "CartPole-v1" {
		t.Errorf("the draft took it: %s", d.cfg.Env.ID)
	}
}

// Defect 27: what the command line set (--runs-dir, a config file) is the
// base, not a change the picker keeps.
func TestDraftCommandLineIsTheBase(t *testing.T) {
	resolve := func(env, agent string) (config.Config, error) {
		cfg, err := PresetResolve(env, agent)
		cfg.Trainer.RunsDir = "/elsewhere"
		return cfg, err
	}
	start, _ := resolve("CartPole-v1", "")
	d := newDraft(start, resolve)
	if note, err := d.setEnv("Acrobot-v1"); note != "" || err != nil {
		t.Errorf("note %q (%v): the runs directory given on the command line counted as a change", note, err)
	}
}

// R puts every key back to the preset; a trial's config counts its
// differences from its preset as changes.
func TestDraftResetAllAndReplace(t *testing.T) {
	d := newTestDraft(t)
	d.set("ppo.ent_coef", "0.05")
	d.set("agent.name", "random")
	if err := d.resetAll(); err != nil || len(d.changedKeys()) != 0 || d.cfg.PPO.EntCoef != 0.01 || d.cfg.Agent.Name != "mlp" {
		t.Fatalf("after R: changed %v, ent_coef %v, agent %s (%v)", d.changedKeys(), d.cfg.PPO.EntCoef, d.cfg.Agent.Name, err)
	}
	trial, _ := PresetResolve("Acrobot-v1", "")
	trial.PPO.LearningRate = 1e-3
	trial.Trainer.RunsDir = "runs/lr-sweep"
	if err := d.replace(trial, "trial-001 of lr-sweep"); err != nil {
		t.Fatal(err)
	}
	if got := d.changedKeys(); !slices.Equal(got, []string{"ppo.learning_rate"}) || d.cfg.Trainer.RunsDir != "runs" {
		t.Errorf("changed %v, runs_dir %s", got, d.cfg.Trainer.RunsDir)
	}
	if d.title() != "Acrobot-v1 · mlp · from trial-001 of lr-sweep" {
		t.Errorf("title %q", d.title())
	}
}

// Defect 2: the picker, the editor's title and s read the same pending
// config: agent.name set in the editor trains that agent from the picker's
// s, and d on it puts the title back.
func TestOneSourceOfTruth(t *testing.T) {
	hs := newHarness(t, 120, 40)
	hs.press(append(editKey("agent.name", "random"), "1")...)
	m := hs.m
	if m.pk().agentList.chosen != "random" || !strings.Contains(hs.view(), "✓ random") {
		t.Errorf("the picker does not tick random:\n%s", hs.view())
	}
	hs.press("2")
	if !strings.Contains(hs.view(), "Config CartPole-v1 · random") {
		t.Errorf("the editor's title is stale:\n%s", hs.view())
	}
	hs.press("d")
	if !strings.Contains(hs.view(), "Config CartPole-v1 · mlp") {
		t.Errorf("d on agent.name left the title stale:\n%s", hs.view())
	}
	hs.press(append([]string{"/", "type:agent.name", "enter", "enter", "ctrl+u", "type:random", "enter"}, "1", "s")...)
	if hs.launchs != 1 || hs.host.started[0].Agent.Name != "random" {
		t.Fatalf("s on the picker trained %v", hs.host.started)
	}
}

// Defect 4 in the picker: choosing MinAtar ticks its preset agent, and
// going back to a vector environment ticks mlp again.
func TestPickerTicksThePresetAgent(t *testing.T) {
	hs := newHarnessWith(t, 120, 40, func(o *Options, _ *fakeHost) {
		o.Registry = func() ([]EnvChoice, []AgentChoice) {
			es, _ := testRegistry()
			es = append(es, EnvChoice{ID: "MinAtar/Breakout-v1", Action: "discrete(3)", Observation: "10×10×4 image"})
			return es, []AgentChoice{{Name: "cnn"}, {Name: "mlp"}, {Name: "random"}}
		}
	})
	hs.press("/", "type:breakout", "enter", "enter")
	if got := hs.m.pk().agentList.chosen; got != "cnn" || hs.m.draft().cfg.Agent.Name != "cnn" {
		t.Fatalf("MinAtar ticks %s", got)
	}
	hs.press("esc", "left", "/", "type:acrobot", "enter", "s")
	if hs.launchs != 1 || hs.host.started[0].Agent.Name != "mlp" || hs.host.started[0].Env.ID != "Acrobot-v1" {
		t.Fatalf("started %v", hs.host.started)
	}
}

// w in the runs browser plays a run's checkpoint; esc comes back.
func TestWatchOpensAndCloses(t *testing.T) {
	m := New(Options{Config: config.Default(), Host: Local{}})
	m.Update(gotoMsg{to: scrRuns})
	_, cmd := m.Update(gotoMsg{to: scrWatch, msg: watchRunMsg{dir: t.TempDir()}}) // not a run: the view says so
	_ = cmd
	if m.active != scrWatch {
		t.Fatalf("screen %v after watchRunMsg", m.active)
	}
	w := m.screens[scrWatch].(*watcher)
	gen := w.gen
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyEsc})
	m.Update(cmd())
	if m.active != scrRuns {
		t.Fatalf("esc left the screen at %v", m.active)
	}
	if w.Update(watchTickMsg{gen: gen}) != nil {
		t.Error("the watch still ticks (and redraws the app) after it was left")
	}
}

// The environment changed in the editor changes the picker's agents too:
// MinAtar chosen by env.id lists (and ticks) cnn back in the picker, which
// the list made for CartPole left out (scripts/tui-third.sh saw it).
func TestPickerAgentsFollowTheEditorsEnvironment(t *testing.T) {
	hs := newHarnessWith(t, 120, 40, func(o *Options, _ *fakeHost) {
		o.Registry = func() ([]EnvChoice, []AgentChoice) {
			es, _ := testRegistry()
			es = append(es, EnvChoice{ID: "MinAtar/Breakout-v1", Action: "discrete(3)", Observation: "10×10×4 image"})
			return es, []AgentChoice{{Name: "cnn", NoVectors: true}, {Name: "mlp"}, {Name: "random"}}
		}
	})
	if strings.Contains(hs.view(), "cnn") {
		t.Fatalf("CartPole's agents list cnn:\n%s", hs.view())
	}
	hs.press(append(editKey("env.id", "MinAtar/Breakout-v1"), "1")...)
	if v := hs.view(); !strings.Contains(v, "✓ cnn") {
		t.Fatalf("back in the picker after env.id = MinAtar/Breakout-v1, cnn is not ticked:\n%s", v)
	}
}
