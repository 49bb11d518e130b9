package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agenttrainer/agenttrainer/internal/suggest"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// draft is the config the next run starts from: the one source of truth
// that the picker's ticks, the editor's rows and title, and every s read.
// It is the environment's preset resolved under the user's config file and
// overrides (base), with the keys the user changed on top; choosing another
// environment or agent resolves a new base and carries over only those
// keys.
type draft struct {
	resolve     func(envID, agent string) (config.Config, error)
	cfg         config.Config
	base        config.Config   // what d and R go back to
	presetAgent string          // the agent base's environment names
	first       string          // the environment the app opened on (d on env.id)
	changed     map[string]bool // keys the user set, in the editor or from a trial
	from        string          // where the config came from ("trial-003 of lr"), until the environment changes
	envIDs      []string        // the registry's environments, once listed (refusing unknown ones)
	reg         *registry       // which agents fit which environments, once listed (nil before)
}

func newDraft(cfg config.Config, resolve func(envID, agent string) (config.Config, error)) *draft {
	return &draft{resolve: resolve, cfg: cfg.Clone(), base: cfg.Clone(), presetAgent: cfg.Agent.Name,
		first: cfg.Env.ID, changed: map[string]bool{}}
}

// config is a copy of the draft's config.
func (d *draft) config() config.Config { return d.cfg.Clone() }

// title names the draft: environment · agent, and where it came from.
func (d *draft) title() string {
	t := d.cfg.Env.ID + " · " + d.cfg.Agent.Name
	if d.from != "" {
		t += " · from " + d.from
	}
	return t
}

// isChanged reports whether the user set key.
func (d *draft) isChanged(key string) bool { return d.changed[key] }

// changedKeys are the keys the user set, in schema order.
func (d *draft) changedKeys() []string {
	var out []string
	for _, k := range config.Schema() {
		if d.changed[k.Name] {
			out = append(out, k.Name)
		}
	}
	return out
}

// baseValue is key's value before the user changed it.
func (d *draft) baseValue(key string) string {
	v, err := d.base.Get(key)
	if err != nil {
		return "?"
	}
	return formatValue(v)
}

func (d *draft) value(key string) string {
	v, err := d.cfg.Get(key)
	if err != nil {
		return "?"
	}
	return formatValue(v)
}

// checkEnv refuses an environment the registry does not list, naming the
// nearest ones.
func (d *draft) checkEnv(id string) error {
	if d.envIDs == nil || slices.Contains(d.envIDs, id) {
		return nil
	}
	msg := fmt.Sprintf("unknown environment %q", id) + suggest.DidYouMean(suggest.Names(id, d.envIDs))
	return &config.Error{Key: "env.id", Msg: msg}
}

// setEnv chooses an environment: its preset applies to every key the user
// did not change, and its preset agent comes with it unless the user chose
// an agent in the editor. It says which of the user's changes it kept.
func (d *draft) setEnv(id string) (string, error) {
	if id == d.cfg.Env.ID {
		return "", nil
	}
	if err := d.checkEnv(id); err != nil {
		return "", err
	}
	agent := ""
	if d.changed["agent.name"] {
		agent = d.cfg.Agent.Name
	}
	delete(d.changed, "env.args") // they belong to the environment they were written for
	d.from = ""
	swap, err := d.fittingAgent(id, agent)
	if err != nil {
		return "", err
	}
	note, err := d.rebase(id, swap)
	if err != nil || swap == agent {
		return note, err
	}
	// The agent the user chose, or the preset's, cannot play id: say
	// which one plays it instead.
	was := agent
	if was == "" {
		was = "the preset's agent"
	}
	d.mark("agent.name", swap != "" && swap != d.presetAgent)
	return joinNotes(fmt.Sprintf("%s does not play %s: picked %s", was, id, d.cfg.Agent.Name), note), nil
}

// fittingAgent is agent ("" the preset's) when it can play envID, else
// the preset's when that can, else the first registered agent that can.
func (d *draft) fittingAgent(envID, agent string) (string, error) {
	if d.reg == nil {
		return agent, nil
	}
	p, err := d.resolve(envID, "")
	if err != nil {
		return "", err
	}
	name := agent
	if name == "" {
		name = p.Agent.Name
	}
	switch {
	case d.reg.fits(envID, name):
		return agent, nil
	case agent != "" && d.reg.fits(envID, p.Agent.Name):
		return "", nil
	}
	if fit := d.reg.agentsFor(envID); len(fit) > 0 {
		return fit[0], nil
	}
	return agent, nil
}

func joinNotes(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// setAgent chooses an agent for the draft's environment.
func (d *draft) setAgent(name string) (string, error) {
	if name == d.cfg.Agent.Name {
		return "", nil
	}
	note, err := d.rebase(d.cfg.Env.ID, name)
	if err == nil {
		d.mark("agent.name", name != d.presetAgent)
	}
	return note, err
}

func (d *draft) mark(key string, changed bool) {
	if changed {
		d.changed[key] = true
	} else {
		delete(d.changed, key)
	}
}

// rebase resolves the base for envID and agent ("": the preset's) and puts
// the user's changes on it.
func (d *draft) rebase(envID, agent string) (string, error) {
	nb, err := d.resolve(envID, agent)
	if err != nil {
		return "", err
	}
	preset := nb.Agent.Name
	if agent != "" {
		if p, err := d.resolve(envID, ""); err == nil {
			preset = p.Agent.Name
		}
	}
	next := nb.Clone()
	var kept, refused []string
	for _, k := range d.changedKeys() {
		if k == "env.id" || k == "agent.name" {
			continue
		}
		v, _ := d.cfg.Get(k)
		trial := next.Clone()
		if err := trial.Set(k, v); err != nil {
			refused = append(refused, k)
			delete(d.changed, k)
			continue
		}
		next = trial
		kept = append(kept, k)
	}
	d.base, d.cfg, d.presetAgent = nb, next, preset
	switch {
	case len(kept) == 0 && len(refused) == 0:
		return "", nil
	case len(refused) == 0:
		return "kept your changes: " + strings.Join(kept, ", "), nil
	case len(kept) == 0:
		return fmt.Sprintf("%s does not take your %s", envID, strings.Join(refused, ", ")), nil
	}
	return fmt.Sprintf("kept your changes: %s; %s does not take %s", strings.Join(kept, ", "), envID, strings.Join(refused, ", ")), nil
}

// set applies a value typed for key (TOML, bare strings allowed), as the
// command line does; env.id and agent.name choose the environment or agent.
func (d *draft) set(key, raw string) (string, error) {
	probe := d.cfg.Clone()
	if err := probe.SetString(key, raw); err != nil {
		return "", err
	}
	switch key {
	case "env.id":
		return d.setEnv(probe.Env.ID)
	case "agent.name":
		return d.setAgent(probe.Agent.Name)
	}
	d.cfg = probe
	d.mark(key, d.value(key) != d.baseValue(key))
	return "", nil
}

// reset puts key back to its preset value (env.id: the environment the app
// opened on).
func (d *draft) reset(key string) (string, error) {
	switch key {
	case "env.id":
		return d.setEnv(d.first)
	case "agent.name":
		note, err := d.setAgent(d.presetAgent)
		delete(d.changed, "agent.name")
		return note, err
	}
	v, _ := d.base.Get(key)
	if err := d.cfg.Set(key, v); err != nil {
		return "", err
	}
	delete(d.changed, key)
	return "", nil
}

// resetAll drops every change: the environment's preset as it is.
func (d *draft) resetAll() error {
	clear(d.changed)
	d.from = ""
	_, err := d.rebase(d.cfg.Env.ID, "")
	return err
}

// replace takes cfg (a trial's) as the draft: the keys where it differs
// from its environment's preset count as the user's changes; where runs go
// and what they are called stay the app's.
func (d *draft) replace(cfg config.Config, from string) error {
	nb, err := d.resolve(cfg.Env.ID, "")
	if err != nil {
		return err
	}
	next := cfg.Clone()
	next.Trainer.RunsDir, next.Trainer.Name = d.base.Trainer.RunsDir, d.base.Trainer.Name
	d.base, d.cfg, d.presetAgent, d.from = nb, next, nb.Agent.Name, from
	clear(d.changed)
	for _, k := range config.Schema() {
		d.mark(k.Name, k.Name != "env.id" && d.value(k.Name) != d.baseValue(k.Name))
	}
	return nil
}

// setRunsDir moves where runs go (attaching to a run elsewhere), in the
// base as in the config: not a change of the user's.
func (d *draft) setRunsDir(dir string) {
	d.base.Trainer.RunsDir, d.cfg.Trainer.RunsDir = dir, dir
}
