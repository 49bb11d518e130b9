package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// This file is the Slurm backend: the trials go to the cluster as one job
// array (sbatch), the sweep follows them through their metrics files (the
// sweep directory must be on storage every node sees) and squeue, and
// early stopping cancels a task with scancel. Slurm schedules; the sweep
// only asks.

// SlurmDir holds the job script and Slurm's output files.
const SlurmDir = "slurm"

// slurmTerminal are the states a task ends in.
var slurmTerminal = map[string]bool{
	"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "NODE_FAIL": true,
	"OUT_OF_MEMORY": true, "BOOT_FAIL": true, "DEADLINE": true, "PREEMPTED": true, "REVOKED": true,
}

// cancelOldTasks cancels the Slurm tasks an earlier sweep process
// submitted that are still queued or running (that process died); they
// write a checkpoint on SIGTERM, and this one continues them.
func (sw *Sweep) cancelOldTasks(ctx context.Context) {
	var old []string
	for _, r := range sw.Records {
		if r.JobID != "" && (r.State == Running || r.State == Pending || r.State == Interrupted) && !slurmTerminal[r.Slurm] {
			old = append(old, r.JobID)
		}
	}
	if len(old) == 0 {
		return
	}
	if _, err := exec.LookPath("scancel"); err != nil {
		sw.logf("note: cannot cancel the earlier Slurm tasks %s: scancel is not installed", strings.Join(old, ","))
		return
	}
	sw.logf("cancelling the earlier submission's tasks %s", strings.Join(old, ","))
	exec.Command("scancel", old...).Run()
	sw.waitSlurmGone(ctx, old)
	for _, r := range sw.Records {
		if slices.Contains(old, r.JobID) { // only the tasks cancelled here
			r.Slurm = "CANCELLED"
		}
	}
}

// SlurmAvailable says why Slurm cannot be used here, or "" when sbatch,
// squeue and scancel are installed and a controller answers.
func SlurmAvailable() string {
	for _, b := range []string{"sbatch", "squeue", "scancel", "sinfo"} {
		if _, err := exec.LookPath(b); err != nil {
			return b + " is not installed"
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "sinfo", "-h", "-o", "%T").CombinedOutput(); err != nil {
		return fmt.Sprintf("no Slurm controller answers (sinfo: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	return ""
}

func (sw *Sweep) runSlurm(ctx context.Context) error {
	if why := SlurmAvailable(); why != "" {
		return errors.New("slurm backend: " + why)
	}
	var todo []*Record
	for _, r := range sw.Records {
		switch r.State {
		case Running, Interrupted:
			r.forget()
			sw.refresh(r)
			if sw.reachedBudget(r) {
				r.State, r.Reason = Done, ""
				continue
			}
			todo = append(todo, r)
		case Pending:
			todo = append(todo, r)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	job, err := sw.submit(todo)
	if err != nil {
		return err
	}
	st := sw.stopper()
	sw.st = st
	byTask := map[string]*Record{}
	for _, r := range todo {
		r.JobID = fmt.Sprintf("%s_%d", job, r.index())
		r.State, r.Slurm, r.Reason = Pending, "PENDING", ""
		r.Starts++
		r.forget()
		byTask[strconv.Itoa(r.index())] = r
	}
	sw.writeResults()
	sw.logf("submitted job array %s (%d tasks) with sbatch; script in %s", job, len(todo), filepath.Join(sw.Dir, SlurmDir, "array.sh"))
	tick := time.NewTicker(sw.opts.Poll)
	defer tick.Stop()
	lastQ := time.Time{}
	interrupted := false
	for {
		select {
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				exec.Command("scancel", job).Run()
			}
		case <-tick.C:
		}
		changed := false
		for _, r := range todo {
			if r.State != Running && r.State != Pending {
				continue
			}
			before := r.Steps
			ms := sw.refresh(r)
			if r.State == Pending && len(ms) > 0 { // running before squeue said so
				r.State, r.started = Running, time.Now()
				sw.logf("%s running on Slurm (%s): %s", r.Trial, r.JobID, sw.describe(r))
			}
			changed = changed || r.Steps != before
			if r.stopReq == "" && !interrupted {
				if reason := sw.milestones(r, ms, st); reason != "" {
					r.stopReq = reason
					sw.logf("%s stopping (scancel %s): %s", r.Trial, r.JobID, reason)
					exec.Command("scancel", r.JobID).Run()
					changed = true
				}
			}
		}
		if time.Since(lastQ) >= max(sw.opts.Poll, time.Second) || interrupted {
			lastQ = time.Now()
			states, err := squeue(job)
			if err == nil {
				for task, s := range states {
					r := byTask[task]
					if r == nil || slurmTerminal[r.Slurm] && r.State != Running && r.State != Pending {
						continue
					}
					if s.state != r.Slurm {
						changed = true
						r.Slurm = s.state
						switch {
						case s.state == "RUNNING" && r.State == Running:
						case s.state == "RUNNING" && r.State == Pending:
							r.State, r.started = Running, time.Now()
							sw.logf("%s running on Slurm (%s): %s", r.Trial, r.JobID, sw.describe(r))
						case slurmTerminal[s.state]:
							sw.finishSlurm(r, s, interrupted)
						}
					}
				}
				// A task Slurm no longer lists (aged out) ended unseen.
				for task, r := range byTask {
					if _, ok := states[task]; !ok && (r.State == Running) && !pendingIn(states, task) {
						sw.finishSlurm(r, slurmState{state: "GONE"}, interrupted)
						changed = true
					}
				}
			}
		}
		if changed {
			sw.writeResults()
		}
		live := 0
		for _, r := range todo {
			if r.State == Running || r.State == Pending {
				live++
			}
		}
		if live == 0 {
			break
		}
	}
	if interrupted {
		return ctx.Err()
	}
	return nil
}

func (r *Record) index() int {
	n, _ := strconv.Atoi(strings.TrimPrefix(r.Trial, "trial-"))
	return n
}

// finishSlurm records how a task ended by the state Slurm gives.
func (sw *Sweep) finishSlurm(r *Record, s slurmState, interrupted bool) {
	sw.refresh(r)
	sw.note(r, r.ms)
	if !r.started.IsZero() {
		r.Seconds += time.Since(r.started).Seconds()
	}
	reason := s.state
	if s.reason != "" && s.reason != "None" {
		reason += " (" + s.reason + ")"
	}
	switch {
	case s.state == "COMPLETED" || (s.state == "GONE" || r.stopReq != "") && sw.reachedBudget(r):
		r.State, r.Reason = Done, ""
		if r.stopReq != "" {
			r.Reason = "reached its budget before early stopping (" + r.stopReq + ") took effect"
		}
	case r.stopReq != "":
		r.State, r.Reason = Stopped, r.stopReq+"; slurm: "+reason
	case interrupted:
		r.State, r.Reason = Interrupted, "the sweep was interrupted; slurm: "+reason
	case s.state == "CANCELLED" || s.state == "PREEMPTED":
		r.State, r.Reason = Cancelled, "slurm: "+reason
	default:
		r.State, r.Reason = Failed, "slurm: "+reason+": "+tailLine(filepath.Join(r.Dir, LogFile))
	}
	msg := fmt.Sprintf("%s %s at %d steps (slurm %s)", r.Trial, r.State, r.Steps, s.state)
	if r.Metric != nil {
		msg += fmt.Sprintf(", %s %s", sw.Spec.Metric, num(r.Metric))
	}
	if r.State == Failed || r.State == Cancelled {
		msg += ": " + r.Reason
	}
	sw.logf("%s", msg)
}

type slurmState struct{ state, reason string }

// squeue lists the array's tasks: task index → state. Pending tasks that
// Slurm lists as one line ("3-7%2") are expanded.
func squeue(job string) (map[string]slurmState, error) {
	out, err := exec.Command("squeue", "-h", "-j", job, "--states=all", "-o", "%K|%T|%r").Output()
	if err != nil {
		return nil, err
	}
	states := map[string]slurmState{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 3)
		if len(f) != 3 {
			continue
		}
		s := slurmState{state: f[1], reason: f[2]}
		for _, task := range expandTasks(f[0]) {
			states[task] = s
		}
	}
	return states, nil
}

// expandTasks reads "4", "[2-5%2]" or "1,3-4" into task indices.
func expandTasks(s string) []string {
	s = strings.Trim(s, "[]")
	s, _, _ = strings.Cut(s, "%")
	var out []string
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		switch {
		case err1 != nil:
		case !isRange:
			out = append(out, lo)
		case err2 == nil:
			for i := a; i <= b; i++ {
				out = append(out, strconv.Itoa(i))
			}
		}
	}
	return out
}

func pendingIn(states map[string]slurmState, task string) bool {
	s, ok := states[task]
	return ok && s.state == "PENDING"
}

// waitSlurmGone waits until the given tasks are no longer queued or running.
func (sw *Sweep) waitSlurmGone(ctx context.Context, tasks []string) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		out, err := exec.Command("squeue", "-h", "-j", strings.Join(tasks, ","), "-o", "%T").Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// submit writes the array's job script and submits it; it returns the
// job id.
func (sw *Sweep) submit(todo []*Record) (string, error) {
	dir, err := filepath.Abs(sw.Dir)
	if err != nil {
		return "", err
	}
	sdir := filepath.Join(dir, SlurmDir)
	sl := sw.Spec.Slurm
	// Checked when the sweep was prepared; checked again here, where the
	// values become lines of a script.
	if err := checkSlurm(sl, "sweep.toml", specSlurmField); err != nil {
		return "", err
	}
	if err := checkScriptPath(sdir, "trainer.runs_dir"); err != nil {
		return "", err
	}
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		return "", err
	}
	var idx []string
	for _, r := range todo {
		idx = append(idx, strconv.Itoa(r.index()))
	}
	array := strings.Join(idx, ",")
	if sw.Spec.Parallel > 0 && !sw.Spec.parallelDefault {
		array += "%" + strconv.Itoa(sw.Spec.Parallel)
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=agenttrainer-%s\n", sw.Spec.Name)
	fmt.Fprintf(&b, "#SBATCH --array=%s\n", array)
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(sdir, "%A_%a.out"))
	fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", max(1, sl.CPUs))
	if sl.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", sl.Partition)
	}
	if sl.Time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", sl.Time)
	}
	if sl.GPUs > 0 {
		fmt.Fprintf(&b, "#SBATCH --gres=gpu:%d\n", sl.GPUs)
	}
	for _, e := range sl.Extra {
		fmt.Fprintf(&b, "#SBATCH %s\n", e)
	}
	b.WriteString("# One array task per trial; the task index is the trial's number.\n")
	fmt.Fprintf(&b, "dir=%s/$(printf 'trial-%%03d' \"$SLURM_ARRAY_TASK_ID\")\n", shellQuote(dir))
	fmt.Fprintf(&b, "exe=%s\n", shellQuote(sw.opts.Exe))
	fmt.Fprintf(&b, "# A trial with a checkpoint continues from it; one without starts afresh.\n")
	fmt.Fprintf(&b, "if [ -s \"$dir/%s/%s\" ]; then\n", runstore.CheckpointsDir, runstore.LatestFile)
	fmt.Fprintf(&b, "  exec \"$exe\" train --quiet --resume \"$dir\" >>\"$dir/%s\" 2>&1\nfi\n", LogFile)
	fmt.Fprintf(&b, "find \"$dir\" -mindepth 1 -maxdepth 1 ! -name %s -exec rm -rf {} +\n", TrialConfig)
	fmt.Fprintf(&b, "exec \"$exe\" train --quiet --run-dir \"$dir\" --config \"$dir/%s\" >>\"$dir/%s\" 2>&1\n", TrialConfig, LogFile)
	script := filepath.Join(sdir, "array.sh")
	if err := atomicfile.Write(script, []byte(b.String()), 0o755); err != nil {
		return "", err
	}
	out, err := exec.Command("sbatch", "--parsable", script).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sbatch: %v: %s", err, strings.TrimSpace(string(out)))
	}
	job, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	return job, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
