// Package train is `agenttrainer train`: a training without the app, in the foreground or detached.
package train

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/cli/progress"
	"github.com/agenttrainer/agenttrainer/host/spawn"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/control"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Options are train's flags and overrides.
type Options struct {
	ConfigFile  string
	RunDir      string // exactly this directory; "": a new one under trainer.runs_dir
	Quiet       bool
	Resume      string // continue the run in this directory
	Detach      bool
	StartPaused bool
	Overrides   []string
}

// Parse reads train's command line.
func Parse(args []string) (Options, error) {
	var o Options
	fs := cmdutil.NewFlags("train", "[--config FILE] [--run-dir DIR] [--resume DIR] [--detach] [--quiet] [key=value ...]", "train headless, printing progress")
	fs.StringVar(&o.ConfigFile, "config", "", "TOML `file` applied over the defaults")
	fs.StringVar(&o.RunDir, "run-dir", "", "put this run exactly in `dir` (default: a new directory under trainer.runs_dir)")
	fs.BoolVar(&o.Quiet, "quiet", false, "print only the run directory and the final result")
	fs.StringVar(&o.Resume, "resume", "", "continue the run in `dir` from its latest valid checkpoint (overrides may change live keys)")
	fs.BoolVar(&o.Detach, "detach", false, "train in a background process that outlives this terminal; watch it with agenttrainer attach")
	fs.BoolVar(&o.StartPaused, "start-paused", false, "wait for a resume over the control socket before the first step (the terminal app uses it)")
	var err error
	if o.Overrides, err = fs.ParseArgs(args); err != nil {
		return o, err
	}
	if o.Resume != "" && (o.ConfigFile != "" || o.RunDir != "") {
		return o, cmdutil.Usagef("--resume continues a run in its own directory with its own config; drop --config and --run-dir")
	}
	return o, nil
}

// Run trains until the run is done (nil), fails, or ctx ends
// (cmdutil.ErrInterrupted, with what was done kept).
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	var t *trainer.Trainer
	var cfg config.Config
	var err error
	if o.Resume != "" {
		t, err = trainer.Resume(o.Resume, o.Overrides, trainer.Options{})
	} else if cfg, err = config.Resolve(o.ConfigFile, o.Overrides); err == nil {
		t, err = trainer.New(cfg, trainer.Options{})
	}
	if err != nil {
		return err // a *config.Error (a mistake in what was asked) exits 2, the world's failures (a remote server, a run in use) 1
	}
	cfg = t.Config()

	// The run directory exists before training starts, so its control
	// socket can be served from the first step.
	dir := o.Resume
	if dir == "" {
		dir = o.RunDir
		if dir != "" {
			if _, err := os.Stat(filepath.Join(dir, runstore.MetricsFile)); err == nil {
				t.Close()
				return cmdutil.Configf("%s already holds a run; choose another directory, or continue it with --resume %s", dir, dir)
			}
		} else if dir, err = runstore.Create(cfg, "", time.Now()); err != nil {
			t.Close()
			return err
		}
	}
	if o.Detach {
		t.Close()
		pid, err := spawn.Start(dir, &cfg, o.Resume != "", o.Overrides, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "run directory: %s\ntraining in the background (pid %d, output in %s)\nwatch it: %s attach %s\nlist live runs: %s ps\n",
			dir, pid, filepath.Join(dir, spawn.LogFile), cmdutil.Prog, dir, cmdutil.Prog)
		return nil
	}
	t.SetRunDir(dir)
	if srv, err := control.Serve(t, dir); err != nil {
		fmt.Fprintf(stderr, "%s: note: %v; this run cannot be attached to\n", cmdutil.Prog, err)
	} else {
		defer srv.Close()
	}
	defer t.Close()
	if o.StartPaused {
		t.Pause()
	}
	events, unsubscribe := t.Subscribe(1024)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		progress.Print(events, stdout, o.Quiet, t.Info().TotalSteps, t.Info().Device)
	}()
	sum, err := t.Run(ctx)
	<-printed
	unsubscribe()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmdutil.Prog, err)
		switch _, statErr := os.Stat(sum.RunDir); {
		case sum.RunDir == "":
		case statErr != nil: // someone removed it while the run trained
			fmt.Fprintf(stderr, "%s: the run directory %s is gone (%v); nothing of this run is kept\n", cmdutil.Prog, sum.RunDir, statErr)
		case sum.Checkpoint != "":
			fmt.Fprintf(stderr, "%s: what was done is kept in %s (continue with --resume %s)\n", cmdutil.Prog, sum.RunDir, sum.RunDir)
		default:
			fmt.Fprintf(stderr, "%s: the metrics so far are in %s; no checkpoint was written, so it cannot be resumed\n", cmdutil.Prog, sum.RunDir)
		}
		return cmdutil.SilentError
	}
	if sum.State == trainer.StateStopped {
		fmt.Fprintf(stdout, "stopped after %d iterations; kept in %s\n", sum.Iterations, sum.RunDir)
		return cmdutil.ErrInterrupted
	}
	return nil
}
