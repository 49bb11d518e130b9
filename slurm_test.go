package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/internal/sweep"
)

// TestSweepOnSlurm runs a sweep of 4 trials through a real Slurm cluster
// (scripts/slurm-local.sh start brings up a single-node one; .ci/run does):
// one trial completes, the two asking for CUDA in this CPU build fail, and
// ASHA cancels the one that cannot learn with scancel. Skipped where sbatch
// is missing or no controller answers.
func TestSweepOnSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("submits jobs to Slurm")
	}
	if os.Getenv("SLURM_CONF") == "" {
		if _, err := os.Stat("/tmp/agenttrainer-slurm/slurm.conf"); err == nil {
			t.Setenv("SLURM_CONF", "/tmp/agenttrainer-slurm/slurm.conf") // scripts/slurm-local.sh's default
		}
	}
	if why := sweep.SlurmAvailable(); why != "" {
		t.Skipf("no Slurm cluster: %s (start one with scripts/slurm-local.sh start)", why)
	}
	t.Setenv("AGENTTRAINER_RUN_MAIN", "1") // sbatch exports it to the job: the trials run this binary's main
	runs := t.TempDir()
	spec := writeSpec(t, `
name = "slurm"
method = "grid"
budget = 65536
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
	code, out, errb := runCLI("sweep", "--backend", "slurm", spec, "trainer.runs_dir="+runs)
	if code != 0 {
		t.Fatalf("sweep: exit %d\n%s%s", code, out, errb)
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
	if r := recs["trial-002"]; r != nil && (!strings.Contains(r.Reason, "asha at 2048 steps") || r.Steps >= 65536) {
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
