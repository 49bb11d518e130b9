package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/tui"
)

// runApp opens the terminal app, or explains how to train headless when
// there is no terminal to draw on.
func runApp(ctx context.Context, stdout, stderr io.Writer) int {
	return runAppArgs(ctx, nil, stdout, stderr)
}

// runAppArgs is runApp with the app's own options: a config file, the runs
// directory and key=value overrides that the editor starts from.
func runAppArgs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("", "[--config FILE] [--runs-dir DIR] [key=value ...]", "open the terminal app", stderr)
	file := fs.String("config", "", "TOML `file` applied over the defaults")
	runsDir := fs.String("runs-dir", "", "directory of runs (trainer.runs_dir)")
	inProcess := fs.Bool("in-process", false, "train inside the app's process (runs then cannot be detached)")
	overrides, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if !isTerminal() {
		fmt.Fprintln(stderr, `agenttrainer: the terminal app needs an interactive terminal (stdin and stdout are not one).
To train without it:
  agenttrainer train env.id=CartPole-v1          # headless, prints progress
  agenttrainer list                              # agents and environments
  agenttrainer --help                            # everything else`)
		return exitConfig
	}
	if *runsDir != "" {
		overrides = append(overrides, "trainer.runs_dir="+*runsDir)
	}
	cfg, err := config.Resolve(*file, overrides)
	if err != nil {
		printConfigError(stderr, err)
		return exitConfig
	}

	resolve := func(envID, agent string) (config.Config, error) {
		return config.Resolve(*file, append(overrides[:len(overrides):len(overrides)], "env.id="+envID, "agent.name="+agent))
	}
	opts := tui.Options{Config: cfg, Launch: processLauncher(), Detachable: true, Resolve: resolve, AttachTo: attachRun}
	if *inProcess {
		opts.Launch, opts.Detachable = tui.Local(ctx, trainer.Options{}), false
	}
	return runModel(ctx, opts, stdout, stderr)
}

// attachRun connects the app's runs browser to a live run (the attach key).
func attachRun(dir string) (*tui.Link, error) { return attachLink(dir, false) }

// isTerminal reports whether the app can draw: stdin and stdout are a TTY.
func isTerminal() bool { return term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd()) }

// runModel runs the app until it quits and prints how the run ended.
func runModel(ctx context.Context, opts tui.Options, stdout, stderr io.Writer) int {
	model := tui.New(opts)
	p := tea.NewProgram(model, tea.WithAltScreen())
	go func() {
		// A signal stops the training cleanly (a checkpoint is kept) before
		// the app quits; the trainer sees the same ctx end.
		<-ctx.Done()
		p.Send(tui.Interrupt())
	}()
	if _, err := p.Run(); err != nil {
		fmt.Fprintf(stderr, "agenttrainer: %v\n", err)
		return exitFail
	}
	res := model.Result()
	if res.State == "" {
		return exitOK
	}
	if res.Detached {
		fmt.Fprintf(stdout, "detached; the training goes on in %s\nwatch it again: agenttrainer attach %s\n", res.RunDir, res.RunDir)
		return exitOK
	}
	line := fmt.Sprintf("run %s after %d steps", res.State, res.Steps)
	if !math.IsNaN(res.Return) && res.Steps > 0 {
		line += fmt.Sprintf(", ep_return_mean %.4g", res.Return)
	}
	if res.RunDir != "" {
		line += "; kept in " + res.RunDir
	}
	fmt.Fprintln(stdout, line)
	if res.Err != nil {
		fmt.Fprintf(stderr, "agenttrainer: %v\n", res.Err)
		return exitFail
	}
	return exitOK
}
