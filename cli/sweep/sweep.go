// Package sweep is `agenttrainer sweep`: many trainings from one spec (grid or random search, early stopping), on this machine or a Slurm cluster.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/host/spawn"
	"github.com/agenttrainer/agenttrainer/runs/sweep"
)

// Options are sweep's flags, spec and overrides.
type Options struct {
	ConfigFile string
	Spec       string
	Resume     string
	Parallel   int
	Backend    string
	DryRun     bool
	RunsDir    string // trainer.runs_dir, as every other command takes it
	Slurm      sweep.SlurmSpec
	Overrides  []string
}

type extraFlags []string

func (e *extraFlags) String() string     { return "" }
func (e *extraFlags) Set(s string) error { *e = append(*e, s); return nil }

// Parse reads sweep's command line.
func Parse(args []string) (Options, error) {
	var o Options
	fs := cmdutil.NewFlags("sweep", "[--config FILE] [--parallel N] [--backend local|slurm] SPEC.toml [key=value ...]\n       agenttrainer sweep --resume DIR",
		"run many trainings from a spec (grid or random search, early stopping), results in runs/<sweep>/")
	fs.StringVar(&o.ConfigFile, "config", "", "TOML `file` under the spec's [base]")
	fs.StringVar(&o.Resume, "resume", "", "continue the sweep in `dir`: finished trials are kept, interrupted ones continue from their checkpoints")
	fs.IntVar(&o.Parallel, "parallel", 0, "trials at once (default: the spec's parallel, else one per core)")
	fs.StringVar(&o.Backend, "backend", "", "where trials run: local (processes of this machine; the default) or slurm (a job array through sbatch); --resume keeps the sweep's own")
	fs.BoolVar(&o.DryRun, "dry-run", false, "check the spec and list the trials; start nothing")
	fs.StringVar(&o.RunsDir, "runs-dir", "", "put the sweep under `dir` (trainer.runs_dir)")
	fs.StringVar(&o.Slurm.Partition, "partition", "", "slurm: the partition")
	fs.StringVar(&o.Slurm.Time, "time", "", "slurm: each trial's time limit, e.g. 00:30:00")
	fs.IntVar(&o.Slurm.CPUs, "cpus", 0, "slurm: CPUs per trial (its trainer.threads)")
	fs.IntVar(&o.Slurm.GPUs, "gpus", 0, "slurm: GPUs per trial")
	fs.Var((*extraFlags)(&o.Slurm.Extra), "sbatch", "slurm: one more #SBATCH `option` (repeatable), e.g. --sbatch=--qos=short")
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return o, err
	}
	if o.Backend != "" && o.Backend != "local" && o.Backend != "slurm" {
		return o, cmdutil.Usagef("--backend is local or slurm, got %q", o.Backend)
	}
	if o.Parallel < 0 {
		return o, cmdutil.Usagef("--parallel must be at least 1, got %d", o.Parallel)
	}
	if o.Resume != "" {
		if o.ConfigFile != "" || len(rest) > 0 || o.RunsDir != "" {
			return o, cmdutil.Usagef("--resume continues a sweep with its own spec and configs; drop --config, --runs-dir, the spec and overrides")
		}
		return o, nil
	}
	if len(rest) == 0 || isOverride(rest[0]) {
		return o, &cmdutil.UsageError{Err: errors.New("sweep needs a spec file (SPEC.toml)"), Usage: fs.Usage()}
	}
	o.Spec, o.Overrides = rest[0], rest[1:]
	if o.RunsDir != "" {
		o.Overrides = append(o.Overrides, "trainer.runs_dir="+o.RunsDir)
	}
	return o, nil
}

func isOverride(s string) bool {
	for _, c := range s {
		if c == '=' {
			return true
		}
		if c == '/' {
			return false
		}
	}
	return false
}

// Run checks the whole sweep (exit 2 and nothing started on a mistake),
// then runs it: nil when every trial has ended, cmdutil.ErrInterrupted
// when ctx ends (resume it with --resume).
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	sw, err := sweep.Prepare(sweep.Options{
		Spec: o.Spec, ConfigFile: o.ConfigFile, Overrides: o.Overrides, Resume: o.Resume,
		Parallel: o.Parallel, Backend: o.Backend, Exe: exe, Cores: runtime.NumCPU(), Out: stdout, Slurm: o.Slurm,
	})
	if errors.Is(err, os.ErrNotExist) { // the spec or a run directory named: a *config.Error needs no word
		return &cmdutil.ConfigError{Err: err}
	}
	if err != nil {
		return err
	}
	if sw.Backend() == "slurm" && !o.DryRun {
		if why := sweep.SlurmAvailable(); why != "" {
			return fmt.Errorf("--backend slurm: %s; nothing was submitted", why)
		}
	}
	if o.DryRun {
		sw.List(stdout)
		return nil
	}
	// The app finds the sweep's process by this mark (to stop it).
	unmark, err := spawn.MarkSweep(sw.Dir)
	if err != nil {
		return err
	}
	defer unmark()
	err = sw.Run(ctx)
	if ctx.Err() != nil {
		return cmdutil.ErrInterrupted
	}
	return err
}
