package config

import (
	"strings"
	"testing"
)

// FuzzOverride feeds arbitrary key=value overrides to the config: each is
// accepted or refused with an error, never a panic, and an accepted config
// that validates writes TOML that reads back to the same config. The
// corpus lives in testdata/fuzz/FuzzOverride.
func FuzzOverride(f *testing.F) {
	for _, s := range []string{
		"ppo.learning_rate=3e-4", "agent.hidden=[128,128]", "env.args.size=8", `env.args={a=1, b="x"}`,
		"ppo.num_minibatches=3", "trainer.name=wide run", "ppo.learnig_rate=1", "env.num_envs=1e9",
		"agent.hidden=[", "=1", "ppo.", "data.train_files=[\"a.jsonl\"]", "trainer.device=cuda:7",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Default()
		if err := c.ApplyArgs([]string{s}); err != nil || c.Validate() != nil {
			return
		}
		text := c.TOML()
		back := Default()
		if err := back.LoadTOML(text, "round trip"); err != nil {
			t.Fatalf("override %q: the config it made does not read back: %v\n%s", s, err, text)
		}
		if back.TOML() != text {
			t.Fatalf("override %q: the config changed in a round trip:\n%s\nvs\n%s", s, text, back.TOML())
		}
	})
}

// FuzzLoadTOML feeds arbitrary text as a config file: loaded or refused,
// never a panic.
func FuzzLoadTOML(f *testing.F) {
	f.Add(Default().TOML())
	f.Add("[ppo]\ngamma = 0.9\nold_key = 1\n")
	f.Add("[env]\nargs = { command = [\"python3\", \"x.py\"] }\n")
	f.Add("[[ppo]]\n")
	f.Add(strings.Repeat("[", 100))
	f.Fuzz(func(t *testing.T, s string) {
		c := Default()
		_ = c.LoadTOML(s, "fuzz")
	})
}
