// Package app opens the terminal app: `agenttrainer` with no command, and the app side of attach.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/host/spawn"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/tui"
)

// Options are the app's own options: a config file, the runs directory and
// key=value overrides that the editor starts from.
type Options struct {
	ConfigFile string
	RunsDir    string
	InProcess  bool
	Overrides  []string
}

func flags(o *Options) *cmdutil.Flags {
	fs := cmdutil.NewFlags("", "[--config FILE] [--runs-dir DIR] [key=value ...]", "open the terminal app")
	fs.StringVar(&o.ConfigFile, "config", "", "TOML `file` applied over the defaults")
	fs.StringVar(&o.RunsDir, "runs-dir", "", "directory of runs (trainer.runs_dir)")
	fs.BoolVar(&o.InProcess, "in-process", false, "train inside the app's process (runs then cannot be detached)")
	return fs
}

// Parse reads the app's command line.
func Parse(args []string) (Options, error) {
	var o Options
	var err error
	o.Overrides, err = flags(&o).ParseArgs(args)
	return o, err
}

// errNoTerminal explains how to train headless when there is no terminal
// to draw on.
var errNoTerminal = cmdutil.Usagef(`the terminal app needs an interactive terminal (stdin and stdout are not one).
To train without it:
  agenttrainer train env.id=CartPole-v1          # headless, prints progress
  agenttrainer list                              # agents and environments
  agenttrainer --help                            # everything else`)

// Run opens the terminal app until it quits.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	if !IsTerminal() {
		return errNoTerminal
	}
	overrides := o.Overrides
	if o.RunsDir != "" {
		overrides = append(overrides, "trainer.runs_dir="+o.RunsDir)
	}
	cfg, err := config.Resolve(o.ConfigFile, overrides)
	if err != nil {
		return &cmdutil.ConfigError{Err: err}
	}
	host := spawn.Host{ConfigFile: o.ConfigFile, Overrides: overrides}
	opts := tui.Options{Config: cfg, Host: host}
	if o.InProcess {
		opts.Host = tui.Local{Ctx: ctx, Resolver: host.Resolve}
	}
	return RunModel(ctx, opts, stdout, stderr)
}

// ErrHangup is the cause of a context ended by SIGHUP: the terminal closed.
var ErrHangup = errors.New("the terminal closed (SIGHUP)")

// IsTerminal reports whether the app can draw: stdin and stdout are a TTY.
func IsTerminal() bool { return term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd()) }

// RunModel runs the app until it quits and prints how the run ended.
func RunModel(ctx context.Context, opts tui.Options, stdout, stderr io.Writer) error {
	model := tui.New(opts)
	p := tea.NewProgram(model, tea.WithAltScreen())
	go func() {
		// A signal stops the trainings this app started cleanly (a
		// checkpoint is kept) before the app quits; a hang-up, whose
		// terminal is gone, leaves them training.
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), ErrHangup) {
			p.Send(tui.Hangup())
			return
		}
		p.Send(tui.Interrupt())
	}()
	if _, err := p.Run(); err != nil {
		return err
	}
	res := model.Result()
	fmt.Fprint(stdout, res.Summary("agenttrainer attach "+res.RunDir))
	if res.Detached {
		return nil
	}
	return res.Err
}
