package sweep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
)

// TestMain refuses to be a trial: Run starts trials with this program's
// executable, which in these tests is the test binary; a spec that were
// wrongly accepted would otherwise run the tests again in every trial.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "train" {
		fmt.Fprintln(os.Stderr, "cli/sweep test binary started as a trial: a spec that should be refused was accepted")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// TestBadSpecs: every kind of spec mistake exits 2 with the config's
// message, and nothing is started or written.
func TestBadSpecs(t *testing.T) {
	const head = "trials = 2\nbudget = 4096\n"
	const lr = "[params]\n\"ppo.learning_rate\" = { distribution = \"log_uniform\", min = 1e-4, max = 1e-2 }\n"
	for _, tc := range []struct {
		name, spec string
		args       []string
		want       string
	}{
		{"unknown key", head + "[params]\n\"ppo.learnig_rate\" = [1e-3]\n", nil, "params.ppo.learnig_rate: unknown key; did you mean ppo.learning_rate?"},
		{"value the key refuses", "[params]\n\"ppo.gamma\" = [0.99, 1.5]\n", nil, "params.ppo.gamma: "},
		{"empty range", head + "[params]\n\"ppo.learning_rate\" = { min = 1e-2, max = 1e-4 }\n", nil, "empty range: min 0.01 is not below max 0.0001"},
		{"bad metric", head + "metric = \"ep_retrun_mean\"\n" + lr, nil, "metric: unknown metric \"ep_retrun_mean\"; did you mean ep_return_mean?"},
		{"validation metric without validation", head + "metric = \"val_success_rate\"\n" + lr, nil, "metric: val_success_rate is measured only by validation, which is off"},
		{"bad direction", head + "direction = \"upward\"\n" + lr, nil, "direction: must be \"maximize\" or \"minimize\""},
		{"unknown spec field", "trails = 4\n" + lr, nil, "trails: unknown sweep field; did you mean trials?"},
		{"log scale from zero", head + "[params]\n\"ppo.learning_rate\" = { distribution = \"log_uniform\", min = 0.0, max = 1e-2 }\n", nil, "a log scale needs min above 0"},
		{"random without trials", "method = \"random\"\n" + lr, nil, "trials: a random search needs the number of configurations"},
		{"grid range without points", "method = \"grid\"\n[params]\n\"ppo.ent_coef\" = { min = 0.0, max = 0.1 }\n", nil, "a grid needs the number of points of the range"},
		{"unknown distribution", head + "[params]\n\"ppo.ent_coef\" = { distribution = \"loguniform\", min = 1e-4, max = 0.1 }\n", nil, "unknown distribution \"loguniform\"; did you mean log_uniform?"},
		{"milestone past the budget", head + lr + "[early_stop]\nmethod = \"asha\"\nmilestones = [2048, 8192]\n", nil, "early_stop.milestones: must rise strictly between 0 and the budget 4096"},
		{"unknown stopping method", head + lr + "[early_stop]\nmethod = \"hyperband\"\nmilestones = [2048]\n", nil, "early_stop.method: must be \"median\" or \"asha\""},
		{"unknown base key", head + lr + "[base]\n\"ppo.gama\" = 0.9\n", nil, "ppo.gama: unknown key; did you mean ppo.gamma?"},
		{"nothing to vary", head, nil, "params: names no key to vary"},
		{"range of a string key", head + "[params]\n\"env.id\" = { min = 1.0, max = 2.0 }\n", nil, "is a string key; a range needs a number key"},
		{"not TOML", "trials = [\n", nil, "not valid TOML at line"},
		{"param field typo", head + "[params]\n\"ppo.ent_coef\" = { distribtion = \"uniform\", min = 0.0, max = 0.1 }\n", nil, "unknown field; did you mean distribution?"},
		{"seeds repeated", head + "seeds = [1, 1]\n" + lr, nil, "seeds: must be distinct"},
		{"override the trials refuse", head + lr, []string{"ppo.num_minibatches=7"}, "ppo.num_minibatches: 7 does not divide the batch"},
		{"bad override key", head + lr, []string{"ppo.nope=1"}, "ppo.nope: unknown key"},
		{"negative budget", "trials = 2\nbudget = -5\n" + lr, nil, "budget: the env steps of every trial must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			spec := filepath.Join(dir, "spec.toml")
			if err := os.WriteFile(spec, []byte(tc.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			runs := filepath.Join(dir, "runs")
			args := append([]string{spec, "trainer.runs_dir=" + runs}, tc.args...)
			var out, errb bytes.Buffer
			o, err := Parse(args)
			if err == nil {
				err = Run(context.Background(), o, &out, &errb)
			}
			code := cmdutil.ExitCode(err, &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, errb.String(), tc.want)
			}
			if !strings.HasPrefix(errb.String(), "agenttrainer: ") {
				t.Errorf("stderr does not start with the program's name: %q", errb.String())
			}
			if _, err := os.Stat(runs); err == nil {
				t.Errorf("%s was created: something started", runs)
			}
		})
	}
}

func TestParse(t *testing.T) {
	if _, err := Parse(nil); err == nil {
		t.Error("no spec: no error")
	}
	if _, err := Parse([]string{"--resume", "d", "spec.toml"}); err == nil {
		t.Error("--resume with a spec: no error")
	}
	o, err := Parse([]string{"--parallel", "3", "s.toml", "a.b=1", "--backend", "slurm", "--sbatch=--qos=x"})
	if err != nil || o.Spec != "s.toml" || len(o.Overrides) != 1 || o.Parallel != 3 || o.Backend != "slurm" || len(o.Slurm.Extra) != 1 {
		t.Errorf("%+v %v", o, err)
	}
	// Defect 31: --runs-dir, as every other command takes it.
	o, err = Parse([]string{"--runs-dir", "elsewhere", "s.toml"})
	if err != nil || len(o.Overrides) != 1 || o.Overrides[0] != "trainer.runs_dir=elsewhere" {
		t.Errorf("--runs-dir: %+v %v", o, err)
	}
}

// TestExampleSpec: the README's example spec is a good one.
func TestExampleSpec(t *testing.T) {
	var out, errb bytes.Buffer
	o, err := Parse([]string{"--dry-run", "../../examples/sweeps/cartpole-random.toml", "trainer.runs_dir=" + t.TempDir()})
	if err == nil {
		err = Run(context.Background(), o, &out, &errb)
	}
	if err != nil || strings.Count(out.String(), "trial-") != 16 || !strings.Contains(out.String(), "16 trials (random search)") {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
}
