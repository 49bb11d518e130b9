package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/runs/sweep"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

var slurmOnce struct {
	sync.Once
	why string
}

// slurmOrSkip skips the test unless sbatch is installed and a controller
// answers (asked once: sinfo may take seconds to give up).
func slurmOrSkip(t *testing.T) {
	t.Helper()
	if os.Getenv("SLURM_CONF") == "" {
		if _, err := os.Stat("/tmp/agenttrainer-slurm/slurm.conf"); err == nil {
			t.Setenv("SLURM_CONF", "/tmp/agenttrainer-slurm/slurm.conf") // scripts/slurm-local.sh's default
		}
	}
	slurmOnce.Do(func() { slurmOnce.why = sweep.SlurmAvailable() })
	if slurmOnce.why != "" {
		t.Skipf("no Slurm cluster: %s (start one with scripts/slurm-local.sh start)", slurmOnce.why)
	}
}

// TestSweepOnSlurm runs a sweep of 4 trials through a real Slurm cluster
// (scripts/slurm-local.sh start brings up a single-node one; .ci/run does):
// one trial completes, the two asking for CUDA in this CPU build fail, and
// ASHA cancels the one that cannot learn with scancel. Skipped where sbatch
// is missing or no controller answers.
func TestSweepOnSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("submits jobs to Slurm")
	}
	slurmOrSkip(t)
	t.Setenv("AGENTTRAINER_RUN_MAIN", "1") // sbatch exports it to the job: the trials run this binary's main
	runs := t.TempDir()
	spec := writeSpec(t, `
name = "slurm"
method = "grid"
budget = 262144
parallel = 1
seeds = [1]
[base]
"trainer.threads" = 1
[params]
"ppo.learning_rate" = [3e-3, 1e-7]
"trainer.device" = ["cpu", "cuda"]
[early_stop]
method = "asha"
milestones = [2048]
[slurm]
time = "00:10:00"
extra = ["--comment=agenttrainer-test"]
`)
	// Bounded, so that a cluster whose node another job holds fails this
	// test with the queue shown instead of stalling the package until its
	// timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	code, out, errb := runCLIContext(ctx, "sweep", "--backend", "slurm", spec, "trainer.runs_dir="+runs)
	if code != 0 {
		q, _ := exec.Command("squeue", "--states=all").CombinedOutput()
		t.Fatalf("sweep: exit %d\n%s%s\nsqueue:\n%s", code, out, errb, q)
	}
	dir := filepath.Join(runs, "slurm")
	recs := readRecords(t, dir)
	want := map[string][2]string{
		"trial-000": {sweep.Done, "COMPLETED"},
		"trial-001": {sweep.Failed, "FAILED"},
		"trial-002": {sweep.Stopped, "CANCELLED"},
		"trial-003": {sweep.Failed, "FAILED"},
	}
	for id, w := range want {
		r := recs[id]
		if r == nil || r.State != w[0] || r.Slurm != w[1] || r.JobID == "" {
			t.Errorf("%s: %+v, want %s / slurm %s\n%s", id, r, w[0], w[1], out)
		}
	}
	if r := recs["trial-001"]; r != nil && !strings.Contains(r.Reason, "without CUDA support") {
		t.Errorf("the failed trial's reason does not say why: %q", r.Reason)
	}
	if r := recs["trial-002"]; r != nil && (!strings.Contains(r.Reason, "asha at 2048 steps") || r.Steps >= 262144) {
		t.Errorf("the cancelled trial: %+v", r)
	}
	script, err := os.ReadFile(filepath.Join(dir, sweep.SlurmDir, "array.sh"))
	if err != nil || !strings.Contains(string(script), "#SBATCH --array=0,1,2,3%1") || !strings.Contains(string(script), "#SBATCH --time=00:10:00") ||
		!strings.Contains(string(script), "#SBATCH --comment=agenttrainer-test") {
		t.Errorf("job script:\n%s", script)
	}
	q, _ := exec.Command("squeue", "-h", "-j", strings.Split(recs["trial-000"].JobID, "_")[0], "--states=all", "-o", "%K %T").Output()
	t.Logf("squeue:\n%s", q)
}

// TestSlurmSweepKilledAndResumed kills a Slurm sweep's process with
// SIGKILL while its tasks run; --resume cancels what is left in Slurm,
// submits the unfinished trials again, and they continue from their
// checkpoints: every trial once, each iteration once.
func TestSlurmSweepKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("submits jobs to Slurm")
	}
	slurmOrSkip(t)
	t.Setenv("AGENTTRAINER_RUN_MAIN", "1")
	runs := t.TempDir()
	// Long enough that a trial caught in its first quarter is still
	// training when the resume cancels it, even on a fast quiet machine (a
	// trial of 81,920 steps could finish in the moment between the kill and
	// the resume, and then none continued).
	const budget = 327680
	spec := writeSpec(t, `
name = "slurm-killed"
trials = 2
seeds = [1, 2]
budget = 327680
[base]
"trainer.save_interval_s" = 0.2
[params]
"ppo.learning_rate" = { distribution = "log_uniform", min = 1e-4, max = 3e-3 }
[slurm]
cpus = 1
`)
	cmd := exec.Command(os.Args[0], "sweep", "--backend", "slurm", spec, "trainer.runs_dir="+runs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(runs, "slurm-killed")
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no trial got under way in time")
		}
		time.Sleep(20 * time.Millisecond)
		recs, _ := sweep.ReadResults(dir)
		under := false
		for _, r := range recs {
			under = under || (r.State == sweep.Running && r.Steps > 0 && r.Steps < budget/4)
		}
		if under {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	code, out, errb := runCLI("sweep", "--resume", dir)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errb)
	}
	if !strings.Contains(out, "cancelling the earlier submission's tasks") || !strings.Contains(out, "submitted job array") {
		t.Errorf("resume did not cancel and resubmit:\n%s", out)
	}
	recs := readRecords(t, dir)
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	continued := 0
	for id, r := range recs {
		// A trial whose task the resume cancelled as its training was
		// ending (a loaded machine is slow to let the task go) is done with
		// Slurm's CANCELLED; every other one completed.
		cancelledAtItsEnd := r.Slurm == "CANCELLED" && strings.Contains(out, r.JobID)
		if r.State != sweep.Done || (r.Slurm != "COMPLETED" && !cancelledAtItsEnd) {
			t.Errorf("%s: %s / %s (%s)\n%s", id, r.State, r.Slurm, r.Reason, out)
		}
		ms, _ := runstore.ReadMetrics(r.Dir)
		for i, m := range ms {
			if m.Iter != i+1 {
				t.Fatalf("%s: record %d is iteration %d", id, i+1, m.Iter)
			}
		}
		log, _ := os.ReadFile(filepath.Join(r.Dir, sweep.LogFile))
		if strings.Count(string(log), "run directory:") == 2 && strings.Contains(string(log), "stopped") {
			continued++
		}
	}
	if continued == 0 {
		t.Error("no trial continued from a checkpoint after the kill")
	}
}
