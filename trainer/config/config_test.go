package config

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "copy the repository's config.toml over the embedded defaults.toml")

// The embedded defaults are a copy of the repository's config.toml, which is
// what people read and edit; -update copies it here.
func TestEmbeddedDefaultsMatchRootConfig(t *testing.T) {
	root, err := os.ReadFile("../../config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("defaults.toml", root, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(root) != defaultsTOML {
		t.Fatal("trainer/config/defaults.toml differs from config.toml; run go test ./trainer/config -update")
	}
}

// The [agent] keys of config.toml are what the registered agents declare
// (agents.Spec.Keys: doc, default, order), written out by renderAgentKeys;
// -update rewrites them there from the declarations.
func TestAgentKeysAsDeclared(t *testing.T) {
	want := renderAgentKeys()
	for _, file := range []string{"../../config.toml", "defaults.toml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		before, got, after, ok := agentKeysRegion(string(data))
		if !ok {
			t.Fatalf("%s has no [agent] section with name = first", file)
		}
		if got == want {
			continue
		}
		if !*update {
			t.Fatalf("%s's agent keys differ from the agents' declarations (run go test ./trainer/config -update):\n got:\n%s\nwant:\n%s", file, got, want)
		}
		if err := os.WriteFile(file, []byte(before+want+after), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// agentKeysRegion splits a config file around the lines of the [agent]
// section after its name key.
func agentKeysRegion(src string) (before, keys, after string, ok bool) {
	sec := strings.Index(src, "\n[agent]\n")
	if sec < 0 {
		return "", "", "", false
	}
	name := strings.Index(src[sec:], "\nname = ")
	if name < 0 {
		return "", "", "", false
	}
	start := sec + name + 1
	start += strings.Index(src[start:], "\n") + 1
	end := start + strings.Index(src[start:], "\n\n[")
	return src[:start], src[start : end+1], src[end+1:], true
}

// renderAgentKeys writes the registered agents' keys as config.toml
// documents them: each one's doc as comment lines of at most 78
// characters, then key = default.
func renderAgentKeys() string {
	var b strings.Builder
	for _, k := range Schema() {
		if k.agentKey == "" {
			continue
		}
		line := "#"
		for _, w := range strings.Fields(k.Doc) {
			if len(line)+1+len(w) > 78 && line != "#" {
				b.WriteString(line + "\n")
				line = "#"
			}
			line += " " + w
		}
		b.WriteString(line + "\n" + k.agentKey + " = " + FormatValue(k.Default) + "\n")
	}
	return b.String()
}

func TestEveryKeyDocumented(t *testing.T) {
	for _, k := range Schema() {
		if k.Doc == "" {
			t.Errorf("%s has no comment in config.toml", k.Name)
		}
		if strings.Contains(k.Doc, "[live]") != k.Live {
			t.Errorf("%s: the [live] mark in config.toml (%v) disagrees with the schema (%v)",
				k.Name, strings.Contains(k.Doc, "[live]"), k.Live)
		}
	}
	if got := len(parseDocs(defaultsTOML)); got != len(Schema()) {
		t.Errorf("config.toml documents %d keys, the schema has %d", got, len(Schema()))
	}
}

func TestRequiredKeys(t *testing.T) {
	for _, name := range []string{"env.id", "env.num_envs", "agent.name", "agent.hidden", "agent.activation",
		"ppo.total_timesteps", "ppo.num_steps", "ppo.learning_rate", "ppo.anneal_lr", "ppo.gamma", "ppo.gae_lambda",
		"ppo.num_minibatches", "ppo.update_epochs", "ppo.norm_adv", "ppo.clip_coef", "ppo.clip_vloss",
		"ppo.ent_coef", "ppo.vf_coef", "ppo.max_grad_norm", "ppo.target_kl", "trainer.seed", "trainer.device"} {
		if _, ok := Lookup(name); !ok {
			t.Errorf("schema lacks %s", name)
		}
	}
}

func TestOverrideFormsAgree(t *testing.T) {
	args := []string{"ppo.learning_rate=3e-4", "agent.hidden=[128,128]", "env.id=Acrobot-v1",
		`trainer.name="my run"`, "ppo.total_timesteps=1e6", "env.args.command=[\"python3\", \"x.py\"]"}
	a := Default()
	if err := a.ApplyArgs(args); err == nil {
		t.Fatal("a run name with a space should be refused")
	}
	args[3] = `trainer.name="my-run"`
	a = Default()
	if err := a.ApplyArgs(args); err != nil {
		t.Fatal(err)
	}
	b := Default()
	if err := b.ApplyMap(map[string]any{
		"ppo.learning_rate": 3e-4, "agent.hidden": []int{128, 128}, "env": map[string]any{"id": "Acrobot-v1"},
		"trainer.name": "my-run", "ppo.total_timesteps": 1_000_000, "env.args.command": []string{"python3", "x.py"},
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("string and map overrides differ:\n%s\n---\n%s", a.TOML(), b.TOML())
	}
	if a.PPO.LearningRate != 3e-4 || a.PPO.TotalTimesteps != 1_000_000 || !reflect.DeepEqual(a.Agent.Params.Ints("hidden"), []int{128, 128}) {
		t.Fatalf("overrides not applied: %+v", a.PPO)
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.toml")
	os.WriteFile(file, []byte("[ppo]\nlearning_rate = 1e-3\ngamma = 0.9\n[env.args]\nsize = 4\n"), 0o644)
	c, err := Resolve(file, []string{"ppo.gamma=0.95"})
	if err != nil {
		t.Fatal(err)
	}
	if c.PPO.LearningRate != 1e-3 || c.PPO.Gamma != 0.95 || c.PPO.NumSteps != 128 || c.Env.Args["size"] != int64(4) {
		t.Fatalf("defaults ← file ← overrides not respected: lr %v gamma %v steps %v args %v",
			c.PPO.LearningRate, c.PPO.Gamma, c.PPO.NumSteps, c.Env.Args)
	}
	if Default().PPO.LearningRate != 2.5e-4 {
		t.Fatal("resolving changed the defaults")
	}
}

func TestResolvedTOMLRoundTrips(t *testing.T) {
	c, err := Resolve("", []string{"agent.hidden=[32]", "env.args.x=1"})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "r.toml")
	os.WriteFile(file, []byte(c.TOML()), 0o644)
	back, err := Resolve(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, back) {
		t.Fatalf("round trip changed the config:\n%s\n---\n%s", c.TOML(), back.TOML())
	}
}

// TestBadInput pins the message for each kind of mistake a person can make.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		file string // contents of a config file, if any
		want string
	}{
		{"unknown key with typo", []string{"ppo.learnig_rate=1e-3"}, "", `ppo.learnig_rate: unknown key; did you mean ppo.learning_rate?`},
		{"key without section", []string{"learning_rate=1e-3"}, "", `did you mean ppo.learning_rate or sft.learning_rate?`},
		{"unknown section", []string{"scheduler.warmup=1"}, "", "scheduler.warmup: unknown key (`agenttrainer config` lists every key)"},
		{"not key=value", []string{"ppo.gamma"}, "", `override "ppo.gamma": not of the form key=value`},
		{"empty key", []string{"=3"}, "", `not of the form key=value`},
		{"string for int", []string{"ppo.num_steps=abc"}, "", `ppo.num_steps: expects an integer, got "abc" (a string)`},
		{"fraction for int", []string{"env.num_envs=2.5"}, "", `env.num_envs: expects an integer, got 2.5 (a float)`},
		{"string for float", []string{"ppo.learning_rate=fast"}, "", `ppo.learning_rate: expects a number, got "fast" (a string)`},
		{"number for bool", []string{"ppo.anneal_lr=2"}, "", `ppo.anneal_lr: expects true or false, got 2 (an integer)`},
		{"number for string", []string{"trainer.device=3"}, "", `trainer.device: expects a string, got 3 (an integer)`},
		{"scalar for list", []string{"agent.hidden=64"}, "", `agent.hidden: expects a list of integers such as [64, 64], got 64 (an integer)`},
		{"list of strings", []string{`agent.hidden=["a"]`}, "", `element 0 is "a" (a string)`},
		{"unbalanced bracket", []string{"agent.hidden=[64,"}, "", `agent.hidden: cannot read [64, as a TOML value`},
		{"negative rate", []string{"ppo.learning_rate=-1"}, "", `ppo.learning_rate: must be over 0 and at most 1, got -1`},
		{"gamma above 1", []string{"ppo.gamma=1.5"}, "", `ppo.gamma: must be between 0 and 1, got 1.5`},
		{"lambda below 0", []string{"ppo.gae_lambda=-0.1"}, "", `ppo.gae_lambda: must be between 0 and 1, got -0.1`},
		{"zero envs", []string{"env.num_envs=0"}, "", `env.num_envs: must be between 1 and 1048576, got 0`},
		// Language-model PPO's keys (adv_estimator = gae).
		{"unknown estimator", []string{"algorithm.adv_estimator=ppo"}, "", `algorithm.adv_estimator: must be one of grpo, drgrpo, rloo, reinforce_plus_plus_baseline, gae, got "ppo"`},
		{"lm gamma above 1", []string{"algorithm.gamma=1.01"}, "", `algorithm.gamma: must be between 0 and 1, got 1.01`},
		{"lm lam below 0", []string{"algorithm.lam=-0.5"}, "", `algorithm.lam: must be between 0 and 1, got -0.5`},
		{"negative value clip", []string{"critic.cliprange_value=-0.2"}, "", `critic.cliprange_value: must be between 0 and 1000, got -0.2`},
		{"zero vf_coef", []string{"critic.vf_coef=0"}, "", `critic.vf_coef: must be over 0 and at most 100, got 0`},
		{"unknown critic agg", []string{"critic.loss_agg_mode=mean"}, "", `critic.loss_agg_mode: must be one of token-mean`},
		{"critic lr above 1", []string{"critic.lr=2"}, "", `critic.lr: must be between 0 and 1, got 2`},
		{"empty hidden", []string{"agent.hidden=[]"}, "", `needs at least one hidden layer`},
		{"zero layer", []string{"agent.hidden=[64,0]"}, "", `layer sizes must be between 1 and 65536, got [64 0]`},
		// Sizes that would exhaust memory or time are refused with the limit.
		{"too many envs", []string{"env.num_envs=100000000000"}, "", "env.num_envs: must be between 1 and 1048576, got 100000000000"},
		{"too wide", []string{"agent.hidden=[100000,100000]"}, "", "agent.hidden: layer sizes must be between 1 and 65536, got [100000 100000]"},
		{"too many steps", []string{"ppo.num_steps=100000000"}, "", "ppo.num_steps: must be between 1 and 1048576, got 100000000"},
		{"endless epochs", []string{"ppo.update_epochs=1000000000"}, "", "ppo.update_epochs: must be between 1 and 10000, got 1000000000"},
		{"absurd learning rate", []string{"ppo.learning_rate=1e308"}, "", "ppo.learning_rate: must be over 0 and at most 1, got 1e+308"},
		{"run name too long", []string{"trainer.name=" + strings.Repeat("n", 129)}, "", "trainer.name: is 129 bytes long, over the limit of 128"},
		{"too many threads", []string{"trainer.threads=100000"}, "", "trainer.threads: must be between 0 and 1024, got 100000"},
		// Coefficients that make the loss overflow float32 (issue 31 F26).
		{"huge vf_coef", []string{"ppo.vf_coef=1e308"}, "", "ppo.vf_coef: must be at most 10000: a larger one makes the loss overflow float32 and the run fail, got 1e+308"},
		{"huge ent_coef", []string{"ppo.ent_coef=1e308"}, "", "ppo.ent_coef: must be at most 10000: a larger one makes the loss overflow float32 and the run fail, got 1e+308"},
		{"huge log_std_init", []string{"agent.log_std_init=700"}, "", "agent.log_std_init: must be between -20 and 20, got 700"},
		{"tiny log_std_init", []string{"agent.log_std_init=-700"}, "", "agent.log_std_init: must be between -20 and 20, got -700"},
		// Found by FuzzOverride: the resolved config.toml could not be read back.
		{"not UTF-8", []string{"env.args.\x91=1"}, "", `"env.args.\x91": "1" is not UTF-8 text`},
		{"bad activation", []string{"agent.activation=sigmoid"}, "", `agent.activation: must be one of tanh, relu, got "sigmoid"`},
		{"bad device", []string{"trainer.device=gpu"}, "", `trainer.device: must be "auto", "cpu", "cuda" or "cuda:N", got "gpu"`},
		{"minibatches do not divide", []string{"ppo.num_minibatches=3"}, "", `ppo.num_minibatches: 3 does not divide the batch of 512 (env.num_envs 4 × ppo.num_steps 128); try 2 or 4`},
		{"minibatch of one", []string{"env.num_envs=1", "ppo.num_steps=4", "ppo.num_minibatches=4"}, "", `minibatches of 1 sample cannot normalise advantages`},
		{"nan", []string{"ppo.clip_coef=nan"}, "", `ppo.clip_coef: expects a finite number`},
		{"args not a table", []string{"env.args=3"}, "", `env.args: expects a table`},
		{"file unknown key", nil, "[ppo]\nlearnig_rate = 1e-3\n", `c.toml: ppo.learnig_rate: unknown key; did you mean ppo.learning_rate?`},
		{"file bad syntax", nil, "[ppo\nx=1\n", `c.toml: not valid TOML at line 2`},
		{"file wrong type", nil, "[env]\nnum_envs = \"four\"\n", `c.toml: env.num_envs: expects an integer, got "four" (a string)`},
		{"file top-level key", nil, "seed = 1\n", `seed: unknown key; did you mean trainer.seed?`},
		{"missing file", nil, "MISSING", `cannot read config file: no such file or directory`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := ""
			if tc.file != "" {
				file = filepath.Join(t.TempDir(), "c.toml")
				if tc.file != "MISSING" {
					os.WriteFile(file, []byte(tc.file), 0o644)
				}
			}
			_, err := Resolve(file, tc.args)
			if err == nil {
				t.Fatalf("accepted %v %q", tc.args, tc.file)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, tc.want)
			}
			if !IsConfigError(err) {
				t.Fatalf("%v is not marked as a configuration error", err)
			}
		})
	}
}

func TestLenientScalars(t *testing.T) {
	c := Default()
	if err := c.ApplyArgs([]string{"ppo.learning_rate=.5", "ppo.norm_adv=false", "trainer.device=cuda:1", "env.id=CartPole-v1", "ppo.total_timesteps=1_000"}); err != nil {
		t.Fatal(err)
	}
	if c.PPO.LearningRate != 0.5 || c.PPO.NormAdv || c.Trainer.Device != "cuda:1" || c.PPO.TotalTimesteps != 1000 {
		t.Fatalf("got %+v %+v", c.PPO, c.Trainer)
	}
}

func TestPresetsAreValid(t *testing.T) {
	for _, id := range PresetIDs() {
		c, err := ForEnv(id)
		if err != nil {
			t.Errorf("preset %s: %v", id, err)
			continue
		}
		if err := c.Validate(); err != nil {
			t.Errorf("preset %s: %v", id, err)
		}
	}
}

func TestPresetPattern(t *testing.T) {
	for _, id := range []string{"MinAtar/Breakout-v1", "MinAtar/Seaquest-v0"} {
		c, err := Resolve("", []string{"env.id=" + id})
		if err != nil {
			t.Fatal(err)
		}
		if conv := c.Agent.Params.Layers("conv"); c.Agent.Name != "cnn" || len(conv) != 1 || conv[0][0] != 16 || c.Env.NumEnvs != 64 {
			t.Fatalf("%s: the MinAtar preset is not applied: %+v", id, c.Agent)
		}
	}
	if c, err := Resolve("", []string{"env.id=CartPole-v1"}); err != nil || c.Agent.Name != "mlp" {
		t.Fatalf("CartPole-v1: %v %+v", err, c.Agent)
	}
}

func TestPresetPrecedence(t *testing.T) {
	c, err := Resolve("", []string{"env.id=Pendulum-v1", "ppo.gamma=0.95"})
	if err != nil {
		t.Fatal(err)
	}
	if c.PPO.Gamma != 0.95 || c.PPO.NumSteps != 1024 || !c.Env.NormalizeObs {
		t.Fatalf("preset under overrides: gamma %v (override 0.95), num_steps %v (preset 1024), normalize_obs %v",
			c.PPO.Gamma, c.PPO.NumSteps, c.Env.NormalizeObs)
	}
	file := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(file, []byte("[env]\nid = \"Pendulum-v1\"\n[ppo]\nnum_steps = 512\n"), 0o644)
	c, err = Resolve(file, nil)
	if err != nil || c.PPO.NumSteps != 512 || c.PPO.Gamma != 0.9 {
		t.Fatalf("env.id from a file picks the preset, the file wins over it: %v steps %v gamma %v", err, c.PPO.NumSteps, c.PPO.Gamma)
	}
	if c, _ := Resolve("", nil); c.PPO.NumSteps != 128 {
		t.Fatal("CartPole's preset changed the CleanRL defaults")
	}
}

// workflow.agent_args is a free-form table like env.args: set whole or by
// dotted sub-keys, and deep-copied by Clone.
func TestWorkflowAgentArgs(t *testing.T) {
	c := Default()
	if err := c.ApplyArgs([]string{"workflow.agent=frozenlake", "workflow.agent_args.accumulate_history=false", `workflow.agent_args.system_prompt="Reach G."`}); err != nil {
		t.Fatal(err)
	}
	if c.Workflow.Agent != "frozenlake" || c.Workflow.AgentArgs["accumulate_history"] != false || c.Workflow.AgentArgs["system_prompt"] != "Reach G." {
		t.Fatalf("workflow %+v", c.Workflow)
	}
	d := c.Clone()
	d.Workflow.AgentArgs["system_prompt"] = "changed"
	if c.Workflow.AgentArgs["system_prompt"] != "Reach G." {
		t.Fatal("Clone shares workflow.agent_args")
	}
	if err := c.ApplyArgs([]string{"workflow.agent_args=3"}); err == nil || !strings.Contains(err.Error(), "expects a table") {
		t.Fatalf("workflow.agent_args=3: %v", err)
	}
	if err := c.ApplyArgs([]string{"workflow.agent_args={}"}); err != nil || len(c.Workflow.AgentArgs) != 0 {
		t.Fatalf("workflow.agent_args={}: %v, %v", err, c.Workflow.AgentArgs)
	}
}
