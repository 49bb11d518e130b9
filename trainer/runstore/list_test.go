package runstore

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadMetrics(t *testing.T) {
	tests := []struct {
		name    string
		file    string // "" means no file
		steps   []int64
		wantErr string
	}{
		{name: "missing file", file: ""},
		{name: "empty", file: "\n"},
		{name: "complete", file: `{"iter":1,"step":512}` + "\n" + `{"iter":2,"step":1024}` + "\n", steps: []int64{512, 1024}},
		{name: "no final newline", file: `{"iter":1,"step":512}` + "\n" + `{"iter":2,"step":1024}`, steps: []int64{512, 1024}},
		{name: "truncated last line", file: `{"iter":1,"step":512}` + "\n" + `{"iter":2,"st`, steps: []int64{512}},
		{name: "null is NaN", file: `{"iter":1,"step":512,"ep_return_mean":null}` + "\n", steps: []int64{512}},
		{name: "corrupt middle line", file: `{"iter":1,"step":512}` + "\n" + `{"iter":2,` + "\n" + `{"iter":3,"step":1536}` + "\n",
			steps: []int64{512, 1536}, wantErr: "metrics.jsonl:2: not a record"},
		{name: "binary lines", file: `{"iter":1,"step":512}` + "\n\x00\xff\xfe\n\x1b]0;x\x07\n" + `{"iter":4,"step":2048}` + "\n",
			steps: []int64{512, 2048}, wantErr: "and 1 more such lines"},
		{name: "a line over the bound", file: `{"iter":1,"step":512}` + "\n" + strings.Repeat("x", MaxRecordLine+1) + "\n",
			steps: []int64{512}, wantErr: "a line longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeFile(t, filepath.Join(dir, MetricsFile), tt.file)
			}
			ms, err := ReadMetrics(dir)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want one mentioning %q", err, tt.wantErr)
			}
			if len(ms) != len(tt.steps) {
				t.Fatalf("got %d records, want %d", len(ms), len(tt.steps))
			}
			for i, m := range ms {
				if m.Step != tt.steps[i] {
					t.Errorf("record %d: step %d, want %d", i, m.Step, tt.steps[i])
				}
			}
		})
	}
	t.Run("null decodes as NaN", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, MetricsFile), `{"iter":1,"step":512,"ep_return_mean":null}`+"\n")
		ms, _ := ReadMetrics(dir)
		if !math.IsNaN(float64(ms[0].EpReturnMean)) {
			t.Errorf("ep_return_mean = %v, want NaN", ms[0].EpReturnMean)
		}
	})
}

func TestReadEdits(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, EditsFile),
		`{"iter":3,"step":1536,"time_s":0.5,"key":"ppo.ent_coef","value":"0.05","old":"0.01"}`+"\n"+`{"iter":4,`)
	edits, err := ReadEdits(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Edit{Iter: 3, Step: 1536, TimeS: 0.5, Key: "ppo.ent_coef", Value: "0.05", Old: "0.01"}
	if len(edits) != 1 || edits[0] != want {
		t.Fatalf("edits = %+v, want [%+v]", edits, want)
	}
}

func TestReadConfig(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		check   func(config.Config) bool
		wantErr string
	}{
		{name: "resolved config", file: func() string {
			c := config.Default()
			c.Env.ID, c.PPO.EntCoef = "Pendulum-v1", 0.05
			return c.TOML()
		}(), check: func(c config.Config) bool { return c.Env.ID == "Pendulum-v1" && c.PPO.EntCoef == 0.05 }},
		{name: "partial file keeps defaults", file: "[ppo]\ngamma = 0.9\n",
			check: func(c config.Config) bool { return c.PPO.Gamma == 0.9 && c.Env.ID == config.Default().Env.ID }},
		{name: "unknown key still applies the rest", file: "[ppo]\ngamma = 0.9\nold_key = 1\n",
			check: func(c config.Config) bool { return c.PPO.Gamma == 0.9 }, wantErr: "ppo.old_key"},
		{name: "missing file", file: "", wantErr: "cannot read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeFile(t, filepath.Join(dir, ConfigFile), tt.file)
			}
			c, err := ReadConfig(dir)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want one mentioning %q", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(c) {
				t.Errorf("config not as expected:\n%s", c.TOML())
			}
		})
	}
}

func TestListRuns(t *testing.T) {
	root := t.TempDir()
	cfg := config.Default()
	cfg.PPO.TotalTimesteps = 2048
	// Two runs, a directory that is not a run, and a file.
	writeFile(t, filepath.Join(root, "20240102-030405-CartPole-v1-mlp", ConfigFile), cfg.TOML())
	writeFile(t, filepath.Join(root, "20240102-030405-CartPole-v1-mlp", MetricsFile),
		`{"iter":1,"step":512,"ep_return_mean":null}`+"\n"+
			`{"iter":2,"step":1024,"ep_return_mean":30}`+"\n"+
			`{"iter":3,"step":1536,"ep_return_mean":25}`+"\n"+
			`{"iter":4,"st`)
	writeFile(t, filepath.Join(root, "20240102-030405-CartPole-v1-mlp", EditsFile),
		`{"iter":2,"step":1024,"time_s":0.1,"key":"ppo.ent_coef","value":"0.05","old":"0.01"}`+"\n")
	cfg.Env.ID = "Acrobot-v1"
	writeFile(t, filepath.Join(root, "20240305-101010-Acrobot-v1-mlp", ConfigFile), cfg.TOML())
	writeFile(t, filepath.Join(root, "notes", "README"), "not a run")
	writeFile(t, filepath.Join(root, "stray.txt"), "")

	runs, err := ListRuns(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("got %d runs, want 2: %+v", len(runs), runs)
	}
	newer, older := runs[0], runs[1]
	tests := []struct {
		name      string
		got, want any
	}{
		{"newest first", newer.Name, "20240305-101010-Acrobot-v1-mlp"},
		{"env from config", newer.EnvID, "Acrobot-v1"},
		{"no metrics yet", newer.Iters, 0},
		{"best is NaN without episodes", math.IsNaN(float64(newer.Best)), true},
		{"started from name", older.Started, time.Date(2024, 1, 2, 3, 4, 5, 0, time.Local)},
		{"iterations (truncated line skipped)", older.Iters, 3},
		{"steps", older.Steps, int64(1536)},
		{"best return", older.Best, Float(30)},
		{"last return", older.Last, Float(25)},
		{"edits", older.Edits, 1},
		{"total steps", older.TotalSteps, int64(2048)},
		{"agent", older.Agent, "mlp"},
		{"no error", older.Err, error(nil)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}

	missing, err := ListRuns(filepath.Join(root, "does-not-exist"))
	if err != nil || len(missing) != 0 {
		t.Errorf("missing runs dir: got %v, %v; want no runs and no error", missing, err)
	}
}
