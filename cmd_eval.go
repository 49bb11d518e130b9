package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer"
)

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("eval", "RUN_DIR [--episodes N] [--deterministic] [--render] [--fps N] [--seed S]",
		"play episodes with a run's latest checkpoint and print the mean return", stderr)
	episodes := fs.Int("episodes", 10, "number of `episodes` to play")
	deterministic := fs.Bool("deterministic", false, "take the most likely action instead of sampling")
	render := fs.Bool("render", false, "draw the episodes in the terminal as they play")
	fps := fs.Int("fps", 30, "frames per second with --render")
	seed := fs.Int64("seed", 0, "environment seed (0: trainer.seed + 1,000,000)")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, "agenttrainer: eval takes one run directory, e.g. agenttrainer eval runs/20260101-120000-CartPole-v1-mlp")
		return exitConfig
	}
	opts := trainer.EvalOptions{Episodes: *episodes, Deterministic: *deterministic, Seed: *seed}
	if *render {
		if *fps <= 0 {
			fmt.Fprintln(stderr, "agenttrainer: --fps must be at least 1")
			return exitConfig
		}
		opts.Frame = func(ep int, frame string) error {
			fmt.Fprintf(stdout, "\x1b[H\x1b[2J%s  episode %d/%d\n%s\n", filepath.Base(rest[0]), ep+1, *episodes, frame)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second / time.Duration(*fps)):
				return nil
			}
		}
	}
	res, err := trainer.Evaluate(ctx, rest[0], opts)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return 130
		}
		printConfigError(stderr, err)
		return exitConfig
	}
	fmt.Fprintf(stdout, "%s %s, %s: %d episodes, return %.2f ± %.2f (min %.1f, max %.1f), length %.1f",
		res.EnvID, res.Agent, filepath.Base(res.Checkpoint), len(res.Returns), res.Mean(), res.Std(),
		minOf(res.Returns), maxOf(res.Returns), meanOf(res.Lengths))
	if res.HasSuccess {
		fmt.Fprintf(stdout, ", success rate %.3f", float64(res.Successes)/float64(len(res.Returns)))
	}
	fmt.Fprintln(stdout)
	return exitOK
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
