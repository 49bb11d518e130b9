package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// madeSweep creates a three-trial sweep (without running it) whose
// trial-000 finished, trial-001 trained part way and trial-002 never
// started, as sweep.jsonl and the trial directories record it.
func madeSweep(t *testing.T) *Sweep {
	t.Helper()
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.toml")
	os.WriteFile(spec, []byte("seeds = [1, 2, 3]\n"+oneTrial), 0o644)
	sw, err := Prepare(Options{Spec: spec, Overrides: []string{"trainer.runs_dir=" + filepath.Join(dir, "runs")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.create(); err != nil {
		t.Fatal(err)
	}
	for i, steps := range []int64{2048, 1024} {
		var b strings.Builder
		for s := int64(512); s <= steps; s += 512 {
			fmt.Fprintf(&b, `{"iter":%d,"step":%d,"ep_return_mean":%d}`+"\n", s/512, s, s/100)
		}
		os.WriteFile(filepath.Join(sw.Records[i].Dir, runstore.MetricsFile), []byte(b.String()), 0o644)
	}
	sw.Records[0].State, sw.Records[1].State = Done, Interrupted
	if err := sw.writeResults(); err != nil {
		t.Fatal(err)
	}
	return sw
}

func states(sw *Sweep) string {
	var s []string
	for _, r := range sw.Records {
		s = append(s, r.State)
	}
	return strings.Join(s, " ")
}

// sweep.jsonl broken in any way loses no trial: the records that are whole
// are kept, and a trial without one continues from what its directory
// holds instead of starting over into a run directory that holds a run.
func TestResumeSurvivesBrokenResults(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(path string)
		want  string
	}{
		{"intact", func(string) {}, "done interrupted pending"},
		{"torn last line", func(p string) { b, _ := os.ReadFile(p); os.WriteFile(p, b[:len(b)-20], 0o644) }, "done interrupted pending"},
		{"garbage first line", func(p string) { b, _ := os.ReadFile(p); os.WriteFile(p, append([]byte("garbage\n"), b...), 0o644) }, "done interrupted pending"},
		{"binary line", func(p string) {
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append([]byte("\x00\xff\xfe\x1b\n"), b...), 0o644)
		}, "done interrupted pending"},
		{"a record of another trial name", func(p string) {
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append([]byte(`{"trial":"../../etc","state":"done"}`+"\n"), b...), 0o644)
		}, "done interrupted pending"},
		{"empty", func(p string) { os.WriteFile(p, nil, 0o644) }, "interrupted interrupted pending"},
		{"missing", func(p string) { os.Remove(p) }, "interrupted interrupted pending"},
		{"a FIFO", func(p string) { os.Remove(p); syscall.Mkfifo(p, 0o644) }, "interrupted interrupted pending"},
		{"a link to /dev/zero", func(p string) { os.Remove(p); os.Symlink("/dev/zero", p) }, "interrupted interrupted pending"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sw := madeSweep(t)
			c.spoil(filepath.Join(sw.Dir, ResultsFile))
			got, err := Prepare(Options{Resume: sw.Dir})
			if err != nil {
				t.Fatal(err)
			}
			if s := states(got); s != c.want {
				t.Fatalf("states %q, want %q", s, c.want)
			}
		})
	}
	t.Run("a directory", func(t *testing.T) {
		sw := madeSweep(t)
		p := filepath.Join(sw.Dir, ResultsFile)
		os.Remove(p)
		os.Mkdir(p, 0o755)
		if _, err := Prepare(Options{Resume: sw.Dir}); err == nil || !config.IsConfigError(err) || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("resume: %v", err)
		}
	})
}

// A sweep.toml edited to draw other trials is refused on resume, and
// sweep.jsonl stays as it was.
func TestResumeRefusesChangedSpec(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"values down", `seeds = [1, 2, 3]`, `seeds = [1, 2]`, "trial-002"},
		{"values changed", `values = [0.001]`, `values = [0.002]`, "trial-000 ran with"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sw := madeSweep(t)
			specPath := filepath.Join(sw.Dir, SpecFile)
			b, _ := os.ReadFile(specPath)
			if !strings.Contains(string(b), c.from) {
				t.Fatalf("sweep.toml lacks %q:\n%s", c.from, b)
			}
			os.WriteFile(specPath, []byte(strings.Replace(string(b), c.from, c.to, 1)), 0o644)
			before, _ := os.ReadFile(filepath.Join(sw.Dir, ResultsFile))
			_, err := Prepare(Options{Resume: sw.Dir})
			if err == nil || !config.IsConfigError(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("resume: %v, want a config error naming %s", err, c.want)
			}
			if after, _ := os.ReadFile(filepath.Join(sw.Dir, ResultsFile)); string(after) != string(before) {
				t.Fatal("sweep.jsonl changed")
			}
		})
	}
}

// Failed trials (a full disk, say) are tried again on resume.
func TestResumeRetriesFailed(t *testing.T) {
	sw := madeSweep(t)
	sw.Records[1].State, sw.Records[1].Reason = Failed, "exit 1: no space left on device"
	sw.Records[2].State = Cancelled
	sw.writeResults()
	got, err := Prepare(Options{Resume: sw.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if s := states(got); s != "done interrupted interrupted" {
		t.Fatalf("states %q", s)
	}
}

func TestSpecBounds(t *testing.T) {
	for _, c := range []struct{ name, spec, want string }{
		{"trials 1e9", "trials = 1000000000\n[params]\n\"ppo.learning_rate\" = { distribution = \"log_uniform\", min = 1e-4, max = 1e-2 }\n", "at most 10000"},
		{"grid num 1e9", "[params]\n\"ppo.learning_rate\" = { min = 1e-4, max = 1e-2, num = 1000000000 }\n", "at most 10000"},
		{"grid product 1e12", "[params]\n\"ppo.learning_rate\" = { min = 1e-4, max = 1e-2, num = 10000 }\n\"ppo.gamma\" = { min = 0.9, max = 0.99, num = 10000 }\n\"ppo.gae_lambda\" = { min = 0.9, max = 0.99, num = 10000 }\n", "draws more than 10000"},
		{"a million seeds", "seeds = [" + strings.TrimSuffix(strings.Repeat("1,", 1000000), ",") + "]\n" + oneTrial[len("budget = 2048\n"):], "at most 10000"},
		{"repeated seeds", "seeds = [1, 2, 1]\n" + oneTrial, "distinct"},
		{"reduction nan", oneTrial + "[early_stop]\nmethod = \"asha\"\nmilestones = [1024]\nreduction = nan\n", "early_stop.reduction"},
		{"reduction inf", oneTrial + "[early_stop]\nmethod = \"asha\"\nmilestones = [1024]\nreduction = inf\n", "early_stop.reduction"},
		{"reduction 1", oneTrial + "[early_stop]\nmethod = \"asha\"\nmilestones = [1024]\nreduction = 1\n", "early_stop.reduction"},
		{"env.args key", "[params]\n\"env.args.map\" = [\"4x4\", \"8x8\"]\n", ""},
		{"env.args range", "[params]\n\"env.args.slip\" = { min = 0.1, max = 0.3, num = 3 }\n", ""},
		{"env.args bare", "[params]\n\"env.args.\" = [1]\n", "unknown key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSpecTOML(c.spec, "spec.toml")
			if err == nil {
				err = s.Check(config.Default(), "spec.toml", 2)
			}
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("%v, want %q", err, c.want)
			}
			if c.want == "" && len(s.Draw()) == 0 {
				t.Fatal("no trials")
			}
		})
	}
}
