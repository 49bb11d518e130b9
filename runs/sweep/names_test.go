package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

const oneTrial = "budget = 2048\n[params]\n\"ppo.learning_rate\" = [1e-3]\n"

// A sweep's name becomes a directory under the runs directory: one that
// would be the runs directory itself, its parent or a path is refused
// before anything is written, whether given or taken from the file name.
func TestSweepNamesStayInTheRunsDir(t *testing.T) {
	for _, c := range []struct{ file, name, want string }{
		{"s.toml", "..", "parent"},
		{"s.toml", ".", "runs directory itself"},
		{"s.toml", "a/b", "only letters"},
		{"s.toml", "../../x", "dot"},
		{"...toml", "", "named after its file"},
		{"..toml", "", "named after its file"},
		{".x.toml", "", "hidden"},
	} {
		dir := t.TempDir()
		body := oneTrial
		if c.name != "" {
			body = "name = \"" + c.name + "\"\n" + body
		}
		spec := filepath.Join(dir, c.file)
		if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		runs := filepath.Join(dir, "deep", "runs")
		_, err := Prepare(Options{Spec: spec, Overrides: []string{"trainer.runs_dir=" + runs}})
		if err == nil || !config.IsConfigError(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s name %q: %v, want a config error saying %q", c.file, c.name, err, c.want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s name %q: wrote %v", c.file, c.name, ents)
		}
	}
}

// A trial directory replaced by a symbolic link is refused on resume; the
// link's target keeps its files.
func TestResumeRefusesSymlinkedTrial(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.toml")
	os.WriteFile(spec, []byte("seeds = [1, 2]\n"+oneTrial), 0o644)
	runs := filepath.Join(dir, "runs")
	sw, err := Prepare(Options{Spec: spec, Overrides: []string{"trainer.runs_dir=" + runs}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.create(); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "victim")
	os.Mkdir(victim, 0o755)
	os.WriteFile(filepath.Join(victim, "precious"), []byte("keep me"), 0o644)
	trial := filepath.Join(sw.Dir, "trial-001")
	os.WriteFile(filepath.Join(victim, TrialConfig), mustRead(t, filepath.Join(trial, TrialConfig)), 0o644)
	if err := os.RemoveAll(trial); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, trial); err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(Options{Resume: sw.Dir})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "trial-001") {
		t.Fatalf("resume: %v", err)
	}
	if err := cleanTrialDir(trial); err == nil {
		t.Fatal("cleanTrialDir went through the link")
	}
	if b, err := os.ReadFile(filepath.Join(victim, "precious")); err != nil || string(b) != "keep me" {
		t.Fatalf("the link's target lost its files: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
