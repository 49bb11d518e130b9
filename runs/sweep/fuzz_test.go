package sweep

import (
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// FuzzParseSpec feeds arbitrary text as a sweep spec: parsing and checking
// must refuse or accept, never panic, hang or allocate past the spec's
// bounds; their messages print safely; an accepted spec draws at most
// MaxTrials trials, as many as it counts, and its resolved sweep.toml
// parses and checks again to the same trials.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		oneTrial,
		"seeds = [1, 2]\n[params.ppo]\nlearning_rate = { min = 1e-4, max = 1e-2, num = 3, spacing = \"log\" }\nnum_steps = [64, 128]\n",
		"trials = 5\nsample_seed = 7\n[params]\n\"ppo.learning_rate\" = { distribution = \"log_uniform\", min = 1e-4, max = 1e-2 }\n",
		oneTrial + "[early_stop]\nmethod = \"asha\"\nmilestones = [1024]\nreduction = nan\n",
		"trials = 1000000000\n[params]\n\"ppo.gamma\" = { distribution = \"uniform\", min = 0.9, max = 0.99 }\n",
		"name = \"..\"\n" + oneTrial,
		oneTrial + "[slurm]\npartition = \"a\\nb\"\nextra = [\"--wrap=x\"]\n",
		"[params]\n\"env.args.map\" = [\"4x4\"]\n",
		"method = \"\\u001b]0;x\\u0007\"\n" + oneTrial,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > maxSpecFile {
			return // ParseSpec refuses it before parsing
		}
		s, err := ParseSpecTOML(src, "spec.toml")
		if err == nil {
			err = s.Check(config.Default(), "spec.toml", 2)
		}
		if err != nil {
			if !config.IsConfigError(err) {
				t.Fatalf("not a config error: %v", err)
			}
			if termtext.HasControl(strings.ReplaceAll(err.Error(), "\n", "")) {
				t.Fatalf("the message carries a control character: %q", err)
			}
			return
		}
		n, ok := s.count()
		trials := s.Draw()
		if !ok || n > MaxTrials || len(trials) != n {
			t.Fatalf("counted %d (ok %v), drew %d", n, ok, len(trials))
		}
		again, err := ParseSpecTOML(s.TOML(), "sweep.toml")
		if err == nil {
			err = again.Check(config.Default(), "sweep.toml", 2)
		}
		if err != nil {
			t.Fatalf("the resolved spec does not read back: %v\n%s", err, s.TOML())
		}
		if len(again.Draw()) != len(trials) {
			t.Fatalf("the resolved spec draws %d trials, the spec %d", len(again.Draw()), len(trials))
		}
	})
}
