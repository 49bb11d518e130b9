// Package cli is agenttrainer's command line: the command table, dispatch, usage, and the exit code of every outcome.
package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agenttrainer/agenttrainer/cli/app"
	"github.com/agenttrainer/agenttrainer/cli/attach"
	"github.com/agenttrainer/agenttrainer/cli/bench"
	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/cli/data"
	"github.com/agenttrainer/agenttrainer/cli/envserver"
	"github.com/agenttrainer/agenttrainer/cli/eval"
	"github.com/agenttrainer/agenttrainer/cli/export"
	"github.com/agenttrainer/agenttrainer/cli/info"
	"github.com/agenttrainer/agenttrainer/cli/lm"
	"github.com/agenttrainer/agenttrainer/cli/plot"
	"github.com/agenttrainer/agenttrainer/cli/runs"
	"github.com/agenttrainer/agenttrainer/cli/serve"
	sftcmd "github.com/agenttrainer/agenttrainer/cli/sft"
	"github.com/agenttrainer/agenttrainer/cli/sweep"
	"github.com/agenttrainer/agenttrainer/cli/train"
	"github.com/agenttrainer/agenttrainer/trainer"
)

// Version is reported by --version and recorded in checkpoints.
const Version = trainer.Version

// runFunc runs a command on its arguments.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// command is one row of the command table.
type command struct {
	name, summary string
	run           runFunc
}

// cmd joins a command's parser and runner.
func cmd[O any](parse func([]string) (O, error), run func(context.Context, O, io.Writer, io.Writer) error) runFunc {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		opts, err := parse(args)
		if err != nil {
			return err
		}
		return run(ctx, opts, stdout, stderr)
	}
}

func commands() []command {
	return []command{
		{"train", "train headless, printing progress", cmd(train.Parse, train.Run)},
		{"sweep", "run many trainings from a spec: grid or random search, early stopping, local or Slurm", cmd(sweep.Parse, sweep.Run)},
		{"data", "write task files (FrozenLake, text tasks) and demonstration transcripts", cmd(data.Parse, data.Run)},
		{"sft", "supervised warm start of a language model on chat transcripts", cmd(sftcmd.Parse, sftcmd.Run)},
		{"attach", "watch and steer a training running in the background", cmd(attach.Parse, attach.Run)},
		{"ps", "list the trainings running in the background", cmd(attach.ParsePs, attach.RunPs)},
		{"serve", "serve the terminal app over SSH", cmd(serve.Parse, serve.Run)},
		{"env-server", "serve environment workers to trainers on other hosts (authenticated TCP)", cmd(envserver.Parse, envserver.Run)},
		{"eval", "play episodes with a run's latest checkpoint", cmd(eval.Parse, eval.Run)},
		{"export", "export a run's metrics as CSV", cmd(export.Parse, export.Run)},
		{"plot", "draw a metric of runs as a PNG or SVG picture", cmd(plot.Parse, plot.Run)},
		{"runs", "list runs with their names, tags and notes; tag, note or name one", cmd(runs.Parse, runs.Run)},
		{"lm", "language models: make one from scratch, tokenize, score completions, generate", cmd(lm.Parse, lm.Run)},
		{"bench", "measure training speed on this machine (the CPU-speed table)", cmd(bench.Parse, bench.Run)},
		{"list", "list agents and environments", cmd(info.ParseList, info.RunList)},
		{"config", "print the resolved config as TOML", cmd(info.ParseConfig, info.RunConfig)},
	}
}

// Main runs the command line args and returns the program's exit code:
// 0 done, 1 failure, 2 usage or configuration error, 130 interrupted
// (cmdutil.ExitCode maps them).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cmdutil.ExitCode(Run(ctx, args, stdout, stderr), stdout, stderr)
}

// Run runs the command line args: the terminal app without a command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return app.Run(ctx, app.Options{}, stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && args[0] == "help" { // help COMMAND is COMMAND --help
			for _, c := range commands() {
				if c.name == args[1] {
					return c.run(ctx, []string{"--help"}, stdout, stderr)
				}
			}
			return &cmdutil.UsageError{Err: fmt.Errorf("help: unknown command %q\n", args[1]), Usage: usage()}
		}
		return &cmdutil.HelpError{Usage: usage()}
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, cmdutil.Prog, Version)
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	if strings.HasPrefix(args[0], "-") || strings.Contains(args[0], "=") {
		return cmd(app.Parse, app.Run)(ctx, args, stdout, stderr) // the app's own options
	}
	return &cmdutil.UsageError{Err: fmt.Errorf("unknown command %q\n", args[0]), Usage: usage()}
}

// usage is the program's help.
func usage() string {
	var b strings.Builder
	p := cmdutil.Prog
	fmt.Fprintln(&b, p, "trains reinforcement-learning agents with PPO.")
	fmt.Fprintf(&b, "\nUsage:\n  %s [--config FILE] [--runs-dir DIR] [key=value ...]   open the terminal app\n", p)
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %s %-15s %s\n", p, c.name, c.summary)
	}
	fmt.Fprintf(&b, "\nRun `%s COMMAND --help` for a command's options.\n", p)
	fmt.Fprintln(&b, "Overrides are key=value in dot notation with TOML values, e.g.")
	fmt.Fprintf(&b, "  %s train env.id=CartPole-v1 ppo.learning_rate=3e-4 agent.hidden=[128,128]\n", p)
	return b.String()
}
