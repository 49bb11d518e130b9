package main

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/runs/sweep"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// The sweep tests run trials as real processes: this test binary running
// main (TestMain), like every background training.

func writeSpec(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readRecords(t *testing.T, dir string) map[string]*sweep.Record {
	t.Helper()
	recs, err := sweep.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*sweep.Record{}
	for _, r := range recs {
		if out[r.Trial] != nil {
			t.Errorf("%s appears twice in sweep.jsonl", r.Trial)
		}
		out[r.Trial] = r
	}
	return out
}

// TestSweepGridWithASHA runs a grid of 4 trials one at a time; the trial
// with a learning rate too small to learn reaches the milestone below the
// one before it and ASHA stops it, keeping its files. ps lists the trials
// while they train.
func TestSweepGridWithASHA(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training processes")
	}
	t.Setenv("AGENTTRAINER_RUN_MAIN", "1")
	runs := t.TempDir()
	spec := writeSpec(t, `
name = "grid"
method = "grid"
budget = 65536
parallel = 1
seeds = [1]
[base]
"trainer.threads" = 1
[params]
"ppo.learning_rate" = [3e-3, 1e-7]
"ppo.ent_coef" = [0.0, 0.01]
[early_stop]
method = "asha"
milestones = [2048]
`)
	type result struct {
		code        int
		out, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errb := runCLI("sweep", spec, "trainer.runs_dir="+runs)
		done <- result{code, out, errb}
	}()
	sawTrial := false
	var res result
	for waiting := true; waiting; {
		select {
		case res = <-done:
			waiting = false
		default:
			if !sawTrial {
				_, out, _ := runCLI("ps", "--runs-dir", runs)
				sawTrial = strings.Contains(out, filepath.Join(runs, "grid", "trial-"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if res.code != 0 {
		t.Fatalf("sweep: exit %d\n%s%s", res.code, res.out, res.stderr)
	}
	if !sawTrial {
		t.Error("ps never listed a trial")
	}
	dir := filepath.Join(runs, "grid")
	recs := readRecords(t, dir)
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	for id, want := range map[string]string{"trial-000": sweep.Done, "trial-001": sweep.Stopped, "trial-002": sweep.Done} {
		if r := recs[id]; r.State != want {
			t.Errorf("%s: %s (%s), want %s\n%s", id, r.State, r.Reason, want, res.out)
		}
	}
	stopped := recs["trial-001"]
	if !strings.Contains(stopped.Reason, "asha at 2048 steps") || stopped.Steps >= 65536 {
		t.Errorf("stopped trial: %+v", stopped)
	}
	for _, f := range []string{runstore.MetricsFile, runstore.ConfigFile, sweep.TrialConfig} {
		if _, err := os.Stat(filepath.Join(stopped.Dir, f)); err != nil {
			t.Errorf("the stopped trial lost %s: %v", f, err)
		}
	}
	if names, _ := runstore.Checkpoints(filepath.Join(stopped.Dir, runstore.CheckpointsDir)); len(names) == 0 {
		t.Error("the stopped trial has no checkpoint")
	}
	f, err := os.Open(filepath.Join(dir, sweep.CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 5 || rows[0][6] != "ep_return_mean" || rows[1][2] != sweep.Done {
		t.Fatalf("results.csv: %v %v", rows, err)
	}
	best, err := os.ReadFile(filepath.Join(dir, sweep.BestFile))
	if err != nil || !strings.Contains(string(best), "best trial of sweep grid: "+rows[1][1]) || !strings.Contains(res.out, "best: "+rows[1][1]) {
		t.Errorf("best.toml %q %v\n%s", best, err, res.out)
	}
	if _, err := os.Stat(filepath.Join(dir, sweep.SpecFile)); err != nil {
		t.Error(err)
	}
}

// TestSweepKilledAndResumed kills a sweep process with SIGKILL once a trial
// has finished and another is less than half way, resumes it, and checks that the
// results have every trial once, the finished trial was not rerun and the
// interrupted one continued from its checkpoint.
func TestSweepKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training processes")
	}
	runs := t.TempDir()
	spec := writeSpec(t, `
name = "killed"
trials = 2
seeds = [1, 2]
budget = 40960
parallel = 2
[base]
"trainer.save_interval_s" = 0.2
[params]
"ppo.learning_rate" = { distribution = "log_uniform", min = 1e-4, max = 3e-3 }
`)
	cmd := exec.Command(os.Args[0], "sweep", spec, "trainer.runs_dir="+runs)
	cmd.Env = append(os.Environ(), "AGENTTRAINER_RUN_MAIN=1")
	logPath := filepath.Join(t.TempDir(), "sweep.log")
	logf, _ := os.Create(logPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(runs, "killed")
	deadline := time.Now().Add(5 * time.Minute)
	var before map[string]*sweep.Record
	for {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no trial finished in time")
		}
		time.Sleep(20 * time.Millisecond)
		recs, err := sweep.ReadResults(dir)
		if err != nil {
			continue
		}
		done, running := 0, 0
		for _, r := range recs {
			switch {
			case r.State == sweep.Done:
				done++
			case r.State == sweep.Running && r.Steps > 0 && r.Steps < 40960/2:
				running++
			}
		}
		if done >= 1 && running >= 1 {
			before = map[string]*sweep.Record{}
			for _, r := range recs {
				before[r.Trial] = r
			}
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	logf.Close()
	finished := map[string][]byte{}
	for id, r := range before {
		if r.State == sweep.Done {
			finished[id], _ = os.ReadFile(filepath.Join(r.Dir, runstore.MetricsFile))
		}
	}

	t.Setenv("AGENTTRAINER_RUN_MAIN", "1")
	code, out, errb := runCLI("sweep", "--resume", dir)
	if code != 0 {
		log, _ := os.ReadFile(logPath)
		t.Fatalf("resume: exit %d\n%s%s\nbefore the kill:\n%s", code, out, errb, log)
	}
	recs := readRecords(t, dir)
	if len(recs) != 4 {
		t.Fatalf("%d records after resuming", len(recs))
	}
	continued := 0
	for id, r := range recs {
		if r.State != sweep.Done || r.Steps < 40960 {
			t.Errorf("%s: %s at %d steps (%s)", id, r.State, r.Steps, r.Reason)
		}
		ms, err := runstore.ReadMetrics(r.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			if m.Iter != i+1 {
				t.Fatalf("%s: metrics record %d is iteration %d: an iteration twice or missing", id, i+1, m.Iter)
			}
		}
		if old, ok := finished[id]; ok {
			now, _ := os.ReadFile(filepath.Join(r.Dir, runstore.MetricsFile))
			if string(now) != string(old) || r.Starts != 1 {
				t.Errorf("%s finished before the kill and was run again (starts %d)", id, r.Starts)
			}
		}
		if b := before[id]; b.State == sweep.Running && b.Steps > 0 && b.Steps < 40960/2 && r.Starts == 2 {
			continued++
		}
	}
	if !strings.Contains(out, "best configuration over its 2 seeds: ppo.learning_rate=") {
		t.Errorf("no best configuration over the seeds:\n%s", out)
	}
	if continued == 0 || !strings.Contains(out, "continues from step") {
		t.Errorf("no interrupted trial continued from its checkpoint\n%s", out)
	}
}
