package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// TestEnvWorkersOnSlurm trains inside a Slurm allocation (salloc) whose
// env workers the trainer starts itself with srun (env.args.launcher):
// two env-server tasks announce themselves in a rendezvous directory, the
// trainer authenticates to them with the secret it made, trains to the end
// and stops the step; the directory is gone afterwards. Skipped where no
// Slurm cluster answers (scripts/slurm-local.sh start brings one up; CI's
// .ci/run does).
func TestEnvWorkersOnSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Slurm allocation")
	}
	slurmOrSkip(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH; the workers run remote/cartpole_server.py")
	}
	server, err := filepath.Abs(filepath.Join("remote", "cartpole_server.py"))
	if err != nil {
		t.Fatal(err)
	}
	run, cwd := filepath.Join(t.TempDir(), "run"), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "salloc", "--ntasks=2", "--job-name=agenttrainer-test-env-workers", os.Args[0],
		"train", "--quiet", "--run-dir", run, "env.id=remote", `env.args.command=["python3", "`+server+`"]`,
		"env.args.launcher=srun", "env.args.workers=2", "env.args.stderr=inherit", "env.num_envs=4",
		"ppo.total_timesteps=4096", "trainer.threads=1")
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "AGENTTRAINER_RUN_MAIN=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("salloc … train: %v\n%s", err, out)
	}
	for _, want := range []string{"Granted job allocation", "announced", "as rank 0", "as rank 1", "clients must prove the shared secret", "done: 4096 steps"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
	ms, err := runstore.ReadMetrics(run)
	if err != nil || len(ms) == 0 || ms[len(ms)-1].Step != 4096 {
		t.Errorf("metrics %v, %v", len(ms), err)
	}
	left, _ := filepath.Glob(filepath.Join(cwd, ".agenttrainer-env-workers-*"))
	if len(left) > 0 {
		t.Errorf("the rendezvous directory is left behind: %v", left)
	}
}
