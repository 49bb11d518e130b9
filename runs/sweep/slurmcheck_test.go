package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

func TestCheckSlurm(t *testing.T) {
	cases := []struct {
		name string
		s    SlurmSpec
		want string // "" accepted, else a part of the message
	}{
		{"plain", SlurmSpec{Partition: "debug", Time: "00:30:00", CPUs: 4, GPUs: 1, Extra: []string{"--qos=short", "--constraint=intel|amd", "-N 1"}}, ""},
		{"partition list", SlurmSpec{Partition: "gpu,cpu-long"}, ""},
		{"time forms", SlurmSpec{Time: "2-12:00"}, ""},
		{"time unlimited", SlurmSpec{Time: "UNLIMITED"}, ""},
		{"newline in partition", SlurmSpec{Partition: "debug\ntouch /tmp/x"}, "slurm.partition"},
		{"CR in partition", SlurmSpec{Partition: "debug\r"}, "slurm.partition"},
		{"space in partition", SlurmSpec{Partition: "de bug"}, "slurm.partition"},
		{"newline in time", SlurmSpec{Time: "1:00\nrm -rf ~"}, "slurm.time"},
		{"words as time", SlurmSpec{Time: "soon"}, "slurm.time"},
		{"newline in extra", SlurmSpec{Extra: []string{"--qos=a\ntouch /tmp/x"}}, "control or non-ASCII"},
		{"CR in extra", SlurmSpec{Extra: []string{"--qos=a\r"}}, "control or non-ASCII"},
		{"NEL in extra", SlurmSpec{Extra: []string{"--qos=a\u0085b"}}, "control or non-ASCII"},
		{"wrap", SlurmSpec{Extra: []string{"--wrap=touch /tmp/x"}}, "--wrap"},
		{"array", SlurmSpec{Extra: []string{"--array=0-99"}}, "--array"},
		{"command substitution", SlurmSpec{Extra: []string{"--comment=$(id)"}}, "substitutions"},
		{"backticks", SlurmSpec{Extra: []string{"--comment=`id`"}}, "substitutions"},
		{"not an option", SlurmSpec{Extra: []string{"touch /tmp/x"}}, "not an sbatch option"},
		{"negative cpus", SlurmSpec{CPUs: -1}, "slurm.cpus"},
		{"huge gpus", SlurmSpec{GPUs: 1 << 30}, "slurm.gpus"},
		{"long option", SlurmSpec{Extra: []string{"--comment=" + strings.Repeat("x", 300)}}, "bytes long"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkSlurm(c.s, "spec.toml", specSlurmField)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted %+v", c.s)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("message %q lacks %q", err, c.want)
			case c.want != "" && !config.IsConfigError(err):
				t.Fatalf("not a config error: %v", err)
			case err != nil && strings.ContainsAny(err.Error(), "\n\r"):
				t.Fatalf("the message carries the raw line break: %q", err)
			}
		})
	}
}

// A spec or a flag with a line break is refused by Prepare (the check that
// --dry-run runs too) before anything is written.
func TestPrepareRefusesSlurmInjection(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "inj.toml")
	runs := filepath.Join(dir, "runs")
	body := "budget = 2048\n[params]\n\"ppo.learning_rate\" = [1e-3]\n[slurm]\npartition = \"debug\\ntouch " + filepath.Join(dir, "PWNED") + "\"\n"
	if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{
		{Spec: spec, Backend: "slurm", Overrides: []string{"trainer.runs_dir=" + runs}},
		{Spec: spec, Backend: "local", Overrides: []string{"trainer.runs_dir=" + runs}},
	} {
		if _, err := Prepare(o); err == nil || !config.IsConfigError(err) || !strings.Contains(err.Error(), "slurm.partition") {
			t.Fatalf("%s backend: %v", o.Backend, err)
		}
	}
	os.WriteFile(spec, []byte("budget = 2048\n[params]\n\"ppo.learning_rate\" = [1e-3]\n"), 0o644)
	_, err := Prepare(Options{Spec: spec, Backend: "slurm", Overrides: []string{"trainer.runs_dir=" + runs}, Slurm: SlurmSpec{Extra: []string{"--qos=a\nid"}}})
	if err == nil || !strings.Contains(err.Error(), "--sbatch") {
		t.Fatalf("--sbatch with a newline: %v", err)
	}
	_, err = Prepare(Options{Spec: spec, Backend: "slurm", Overrides: []string{"trainer.runs_dir=" + filepath.Join(dir, "r\nid")}})
	if err == nil || !strings.Contains(err.Error(), "control character") {
		t.Fatalf("a runs directory with a newline: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("written: %v", ents)
	}
}
