package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs/frozenlake"
	"github.com/agenttrainer/agenttrainer/envs/tasks"
	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
)

func runData(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "frozenlake" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, "Usage: agenttrainer data frozenlake --n N --size S --seed SEED --out FILE [options]\n\nWrite a file of FrozenLake tasks; `agenttrainer data frozenlake --help` lists the options.")
			return exitOK
		}
		fmt.Fprintln(stderr, "agenttrainer: usage: agenttrainer data frozenlake --n N --size S --seed SEED --out FILE")
		return exitConfig
	}
	fs := newFlagSet("data frozenlake", "--n N --size S --seed SEED --out FILE [--p P] [--slippery] [--max-steps N] [--exclude FILE]",
		"write a file of FrozenLake tasks (JSONL or CSV by the file's extension), one map per row", stderr)
	n := fs.Int("n", 1000, "number of tasks (distinct maps)")
	size := fs.Int("size", 4, "side of the square lake")
	seed := fs.Int64("seed", 1, "seed of the task set; different seeds give different maps")
	p := fs.Float64("p", 0.8, "probability that a tile is frozen")
	slippery := fs.Bool("slippery", false, "tiles are slippery (the move goes sideways 2 times in 3)")
	maxSteps := fs.Int("max-steps", 100, "steps before an episode is cut off")
	out := fs.String("out", "", "task `file` to write (.jsonl or .csv)")
	exclude := fs.String("exclude", "", "task `file` whose maps must not appear (make a validation set apart from its training set)")
	rest, err := parseArgs(fs, args[1:])
	if err != nil {
		return flagExit(err)
	}
	if len(rest) > 0 || *out == "" {
		fmt.Fprintln(stderr, "agenttrainer: data frozenlake needs --out FILE (and takes no other arguments)")
		return exitConfig
	}
	format := strings.TrimPrefix(filepath.Ext(*out), ".")
	if format != "jsonl" && format != "csv" {
		fmt.Fprintf(stderr, "agenttrainer: %s: name the file .jsonl or .csv to choose its format\n", *out)
		return exitConfig
	}
	opts := frozenlake.FrozenLakeTaskOptions{N: *n, Size: *size, P: *p, Slippery: *slippery, MaxSteps: *maxSteps, Seed: *seed}
	if *exclude != "" {
		if opts.Exclude, err = tasks.LoadTasks(*exclude); err != nil {
			fmt.Fprintf(stderr, "agenttrainer: --exclude: %v\n", err)
			return exitConfig
		}
	}
	rows, err := frozenlake.GenerateFrozenLakeTasks(opts)
	if err != nil {
		fmt.Fprintf(stderr, "agenttrainer: %v\n", err)
		return exitConfig
	}
	var buf bytes.Buffer
	if err := tasks.WriteTasks(&buf, format, frozenlake.FrozenLakeColumns, rows); err != nil {
		fmt.Fprintf(stderr, "agenttrainer: %v\n", err)
		return exitFail
	}
	if err := atomicfile.Write(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "agenttrainer: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "wrote %d FrozenLake tasks (%d×%d, p %.2f, slippery %v) to %s\n", len(rows), *size, *size, *p, *slippery, *out)
	return exitOK
}
