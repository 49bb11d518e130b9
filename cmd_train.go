package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/control"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("train", "[--config FILE] [--run-dir DIR] [--resume DIR] [--detach] [--quiet] [key=value ...]", "train headless, printing progress", stderr)
	file := fs.String("config", "", "TOML `file` applied over the defaults")
	runDir := fs.String("run-dir", "", "put this run exactly in `dir` (default: a new directory under trainer.runs_dir)")
	quiet := fs.Bool("quiet", false, "print only the run directory and the final result")
	resume := fs.String("resume", "", "continue the run in `dir` from its latest valid checkpoint (overrides may change live keys)")
	detach := fs.Bool("detach", false, "train in a background process that outlives this terminal; watch it with `agenttrainer attach`")
	startPaused := fs.Bool("start-paused", false, "wait for a resume over the control socket before the first step (the terminal app uses it)")
	overrides, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	var t *trainer.Trainer
	var cfg config.Config
	if *resume != "" {
		if *file != "" || *runDir != "" {
			fmt.Fprintln(stderr, "agenttrainer: --resume continues a run in its own directory with its own config; drop --config and --run-dir")
			return exitConfig
		}
		t, err = trainer.Resume(*resume, overrides, trainer.Options{})
	} else if cfg, err = config.Resolve(*file, overrides); err == nil {
		t, err = trainer.New(cfg, trainer.Options{})
	}
	if err != nil {
		printConfigError(stderr, err)
		return exitConfig
	}
	cfg = t.Config()

	// The run directory exists before training starts, so its control
	// socket can be served from the first step.
	dir := *resume
	if dir == "" {
		dir = *runDir
		if dir != "" {
			if _, err := os.Stat(filepath.Join(dir, runstore.MetricsFile)); err == nil {
				t.Close()
				fmt.Fprintf(stderr, "agenttrainer: %s already holds a run; choose another directory, or continue it with --resume %s\n", dir, dir)
				return exitConfig
			}
		} else if dir, err = runstore.Create(cfg, "", time.Now()); err != nil {
			t.Close()
			fmt.Fprintf(stderr, "agenttrainer: %v\n", err)
			return exitFail
		}
	}
	if *detach {
		t.Close()
		pid, err := spawnTraining(dir, &cfg, *resume != "", overrides, false)
		if err != nil {
			fmt.Fprintf(stderr, "agenttrainer: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(stdout, "run directory: %s\ntraining in the background (pid %d, output in %s)\nwatch it: agenttrainer attach %s\nlist live runs: agenttrainer ps\n",
			dir, pid, filepath.Join(dir, LogFile), dir)
		return exitOK
	}
	t.SetRunDir(dir)
	if srv, err := control.Serve(t, dir); err != nil {
		fmt.Fprintf(stderr, "agenttrainer: note: %v; this run cannot be attached to\n", err)
	} else {
		defer srv.Close()
	}
	defer t.Close()
	if *startPaused {
		t.Pause()
	}
	events, unsubscribe := t.Subscribe(1024)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		printProgress(events, stdout, *quiet, cfg.PPO.TotalTimesteps, t.Info().Device)
	}()
	sum, err := t.Run(ctx)
	<-printed
	unsubscribe()
	if err != nil {
		fmt.Fprintf(stderr, "agenttrainer: %v\n", err)
		if sum.RunDir != "" {
			fmt.Fprintf(stderr, "agenttrainer: what was done is kept in %s\n", sum.RunDir)
		}
		return exitFail
	}
	if sum.State == trainer.StateStopped {
		fmt.Fprintf(stdout, "stopped after %d iterations; kept in %s\n", sum.Iterations, sum.RunDir)
		return 130
	}
	return exitOK
}

// printProgress prints the run directory, then at most one progress line a
// second, then the result.
func printProgress(events <-chan trainer.Event, w io.Writer, quiet bool, total int64, device string) {
	var last trainer.Metrics
	var lastPrint time.Time
	for e := range events {
		switch e.Kind {
		case trainer.EventStarted:
			fmt.Fprintf(w, "run directory: %s\ndevice: %s\n", e.Message, device)
		case trainer.EventMetrics:
			last = e.Metrics
			if !quiet && time.Since(lastPrint) >= time.Second {
				lastPrint = time.Now()
				fmt.Fprintln(w, progressLine(e.Metrics, total))
			}
		case trainer.EventEdit, trainer.EventLog:
			if !quiet {
				fmt.Fprintln(w, e.Message)
			}
		case trainer.EventDone:
			if last.Iter > 0 {
				if !quiet {
					fmt.Fprintln(w, progressLine(last, total))
				}
				fmt.Fprintf(w, "%s: %d steps in %.1f s (%s steps/s), ep_return_mean %s over the last 100 of %d episodes\n",
					e.State, last.Step, float64(last.TimeS), thousands(float64(last.SPS)), num(last.EpReturnMean), last.Episodes)
			}
		}
	}
}

func progressLine(m trainer.Metrics, total int64) string {
	return fmt.Sprintf("step %9d/%d %3.0f%% | %8s steps/s | ep_return_mean %8s | policy_loss %7s value_loss %8s entropy %6s approx_kl %7s",
		m.Step, total, 100*float64(m.Step)/float64(total), thousands(float64(m.SPS)), num(m.EpReturnMean),
		num(m.PolicyLoss), num(m.ValueLoss), num(m.Entropy), num(m.ApproxKL))
}

// num prints a metric compactly; undefined values print as "-".
func num(f trainer.Float) string {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return "-"
	case v != 0 && math.Abs(v) < 0.01:
		return fmt.Sprintf("%.2e", v)
	}
	return fmt.Sprintf("%.4g", v)
}

func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func runList(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("list", "", "list agents and environments", stderr)
	if _, err := parseArgs(fs, args); err != nil {
		return flagExit(err)
	}
	fmt.Fprintln(stdout, "Agents (agent.name):")
	for _, name := range agents.Names() {
		s, _ := agents.Lookup(name)
		fmt.Fprintf(stdout, "  %-10s %s\n", name, s.Description)
	}
	fmt.Fprintln(stdout, "\nEnvironments (env.id):")
	for _, id := range envs.IDs() {
		s, _ := envs.Lookup(id)
		kind := "?"
		if e, err := s.New(nil); err == nil {
			kind = e.ActionSpace().Kind.String()
		}
		fmt.Fprintf(stdout, "  %-26s %-10s %s\n", id, kind, s.Description)
	}
	return exitOK
}
