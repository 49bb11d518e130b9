// Package attach is `agenttrainer attach` and `agenttrainer ps`: watching, steering and listing trainings that run in the background.
package attach

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agenttrainer/agenttrainer/cli/app"
	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/cli/progress"
	"github.com/agenttrainer/agenttrainer/host/spawn"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
	"github.com/agenttrainer/agenttrainer/tui"
)

// Options are attach's flags and run directory.
type Options struct {
	RunDir  string // "": the newest live run under RunsDir
	RunsDir string
}

// Parse reads attach's command line.
func Parse(args []string) (Options, error) {
	var o Options
	fs := cmdutil.NewFlags("attach", "[RUN_DIR] [--runs-dir DIR]", "watch and steer a training that runs in the background (the newest when no RUN_DIR is given)")
	fs.StringVar(&o.RunsDir, "runs-dir", config.Default().Trainer.RunsDir, "where to look for live runs")
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return o, err
	}
	switch len(rest) {
	case 0:
	case 1:
		o.RunDir = rest[0]
	default:
		return o, cmdutil.Usagef("attach takes one run directory")
	}
	return o, nil
}

// Run watches the training: in the app on a terminal, as progress lines
// otherwise. Leaving (or an interrupt) leaves the training running.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	dir := o.RunDir
	if dir == "" {
		live := spawn.LiveRuns(o.RunsDir)
		if len(live) == 0 {
			return cmdutil.Configf("no live training under %s; start one with `agenttrainer train --detach`", termtext.Clean(o.RunsDir))
		}
		dir = live[0].Dir
	}
	if err := checkAttachable(dir); err != nil {
		return err
	}
	link, err := spawn.Attach(dir, false)
	if err != nil {
		return &cmdutil.ConfigError{Err: termtext.Error(err)}
	}
	defer link.Close()
	if !app.IsTerminal() {
		watchHeadless(ctx, link, dir, stdout)
		return nil
	}
	cfg := link.Trainer.Config()
	return app.RunModel(ctx, tui.Options{Config: cfg, Attach: link, Host: spawn.Host{}}, stdout, stderr)
}

// checkAttachable says, for a directory with no live training, why there
// is nothing to attach to: it does not exist, it holds no run, or its
// training ended, and then whether it can be resumed.
func checkAttachable(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return cmdutil.Configf("%s does not exist; `agenttrainer ps` lists the trainings running now", dir)
	case !st.IsDir():
		return cmdutil.Configf("%s is a file, not a run directory", dir)
	case tui.LiveControl(dir):
		return nil
	case !runstore.IsRunDir(dir):
		return cmdutil.Configf("%s holds no run; `agenttrainer ps` lists the trainings running now", dir)
	}
	cks, _ := runstore.Checkpoints(filepath.Join(dir, runstore.CheckpointsDir))
	info := runstore.ReadRunInfo(dir)
	done := fmt.Sprintf("at step %s of %s", progress.Thousands(float64(info.Steps)), progress.Thousands(float64(info.TotalSteps)))
	if len(cks) == 0 {
		return cmdutil.Configf("the training in %s is not running (it ended %s) and wrote no checkpoint, so it cannot be resumed; its metrics are kept (agenttrainer plot %s)", dir, done, dir)
	}
	return cmdutil.Configf("the training in %s is not running (it ended %s); continue it from its latest checkpoint (%s) with: agenttrainer train --resume %s", dir, done, cks[0], dir)
}

// watchHeadless prints where the run stands, then progress lines until the
// run ends; an interrupt leaves the training running.
func watchHeadless(ctx context.Context, link *tui.Link, dir string, stdout io.Writer) {
	info := link.Trainer.Info()
	shown := termtext.Clean(dir) // a directory's name may hold escapes
	state := "running"
	if link.Trainer.Paused() {
		state = "paused (resume it from the app: agenttrainer attach " + shown + " in a terminal, then p)"
	}
	fmt.Fprintf(stdout, "attached to %s: %s · %s, %s\n", shown, termtext.Clean(info.EnvID), termtext.Clean(info.Agent), state)
	done := make(chan struct{})
	go func() {
		defer close(done)
		progress.Print(link.Events, stdout, false, info.TotalSteps, info.Device)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		fmt.Fprintf(stdout, "detached; the training in %s goes on\n", shown)
	}
}

// PsOptions are ps's flags.
type PsOptions struct {
	RunsDir string
}

// ParsePs reads ps's command line.
func ParsePs(args []string) (PsOptions, error) {
	var o PsOptions
	fs := cmdutil.NewFlags("ps", "[--runs-dir DIR]", "list the trainings running in the background")
	fs.StringVar(&o.RunsDir, "runs-dir", config.Default().Trainer.RunsDir, "where to look for live runs")
	_, err := fs.ParseArgs(args)
	return o, err
}

// RunPs lists the live trainings under RunsDir.
func RunPs(_ context.Context, o PsOptions, stdout, stderr io.Writer) error {
	live := spawn.LiveRuns(o.RunsDir)
	if len(live) == 0 {
		fmt.Fprintf(stdout, "no live training under %s\n", termtext.Clean(o.RunsDir))
		return nil
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%-8s %-8s %-26s %-7s %-22s %-10s %s\n", "PID", "STATE", "ENV", "AGENT", "STEPS", "RETURN", "RUN DIRECTORY")
	for _, r := range live {
		state := "running"
		if r.Paused {
			state = "paused"
		}
		// The env, agent and directory come from the run's files and
		// socket: cleaned for the terminal.
		fmt.Fprintf(&b, "%-8d %-8s %-26s %-7s %-22s %-10s %s\n", r.Endpoint.PID, state, termtext.Clean(r.Info.EnvID), termtext.Clean(r.Info.Agent),
			fmt.Sprintf("%d/%d", r.Run.Steps, r.Info.TotalSteps), progress.Num(r.Run.Last), termtext.Clean(r.Dir))
	}
	stdout.Write(b.Bytes())
	return nil
}
