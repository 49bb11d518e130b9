// Package data is `agenttrainer data`: writing task datasets (FrozenLake maps) for training and validation.
package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/frozenlake"
	"github.com/agenttrainer/agenttrainer/envs/tasks"
	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
)

// Options are `data frozenlake`'s flags.
type Options struct {
	N        int
	Size     int
	Seed     int64
	P        float64
	Slippery bool
	MaxSteps int
	Out      string
	Exclude  string
}

// help is `agenttrainer data --help`.
const help = "Usage: agenttrainer data frozenlake --n N --size S --seed SEED --out FILE [options]\n\nWrite a file of FrozenLake tasks; `agenttrainer data frozenlake --help` lists the options.\n"

// Parse reads data's command line: `frozenlake` and its flags.
func Parse(args []string) (Options, error) {
	var o Options
	if len(args) == 0 || args[0] != "frozenlake" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return o, &cmdutil.HelpError{Usage: help}
		}
		msg := "data needs the kind of tasks to write: frozenlake"
		switch {
		case len(args) > 0 && strings.HasPrefix(args[0], "-"):
			msg = fmt.Sprintf("data takes no flag %s before the kind of tasks (frozenlake)", args[0])
		case len(args) > 0:
			msg = fmt.Sprintf("data cannot write %q: the one kind of tasks is frozenlake", args[0])
		}
		return o, &cmdutil.UsageError{Err: errors.New(msg), Usage: help}
	}
	fs := cmdutil.NewFlags("data frozenlake", "--n N --size S --seed SEED --out FILE [--p P] [--slippery] [--max-steps N] [--exclude FILE]",
		"write a file of FrozenLake tasks (JSONL or CSV by the file's extension), one map per row")
	fs.IntVar(&o.N, "n", 1000, "number of tasks (distinct maps)")
	fs.IntVar(&o.Size, "size", 4, "side of the square lake")
	fs.Int64Var(&o.Seed, "seed", 1, "seed of the task set; different seeds give different maps")
	fs.Float64Var(&o.P, "p", 0.8, "probability that a tile is frozen")
	fs.BoolVar(&o.Slippery, "slippery", false, "tiles are slippery (the move goes sideways 2 times in 3)")
	fs.IntVar(&o.MaxSteps, "max-steps", 100, "steps before an episode is cut off")
	fs.StringVar(&o.Out, "out", "", "task `file` to write (.jsonl or .csv)")
	fs.StringVar(&o.Exclude, "exclude", "", "task `file` whose maps must not appear (make a validation set apart from its training set)")
	rest, err := fs.ParseArgs(args[1:])
	if err != nil {
		return o, err
	}
	if len(rest) > 0 || o.Out == "" {
		return o, cmdutil.Usagef("data frozenlake needs --out FILE (and takes no other arguments)")
	}
	if format := filepath.Ext(o.Out); format != ".jsonl" && format != ".csv" {
		return o, cmdutil.Usagef("%s: name the file .jsonl or .csv to choose its format", o.Out)
	}
	return o, nil
}

// Run writes the task file.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	format := strings.TrimPrefix(filepath.Ext(o.Out), ".")
	opts := frozenlake.FrozenLakeTaskOptions{N: o.N, Size: o.Size, P: o.P, Slippery: o.Slippery, MaxSteps: o.MaxSteps, Seed: o.Seed}
	if o.Exclude != "" {
		var err error
		if opts.Exclude, err = tasks.LoadTasks(o.Exclude); err != nil {
			return cmdutil.Configf("--exclude: %v", err)
		}
	}
	// The rows go to the file as they are drawn (a large set is never held
	// whole); a draw that fails leaves no file. An interrupt ends it.
	n := 0
	var genErr error
	err := atomicfile.Stream(o.Out, 0o644, func(w io.Writer) error {
		tw, err := tasks.NewWriter(w, format, frozenlake.FrozenLakeColumns)
		if err != nil {
			return err
		}
		opts.Cancel = ctx.Done()
		genErr = frozenlake.EachFrozenLakeTask(opts, func(row envs.Params) error {
			n++
			return tw.Write(row)
		})
		if frozenlake.IsCancelled(genErr) {
			genErr = cmdutil.ErrInterrupted
		}
		if genErr != nil {
			return genErr
		}
		return tw.Flush()
	})
	switch {
	case genErr != nil && errors.Is(genErr, cmdutil.ErrInterrupted):
		return genErr
	case genErr != nil:
		return &cmdutil.ConfigError{Err: genErr}
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "wrote %d FrozenLake tasks (%d×%d, p %.2f, slippery %v) to %s\n", n, o.Size, o.Size, o.P, o.Slippery, o.Out)
	return nil
}
