package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/control"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
	"github.com/agenttrainer/agenttrainer/tui"
)

// LogFile receives a detached training's output.
const LogFile = "train.log"

// detachConfigFile carries a resolved config from the parent to a detached
// training; the parent removes it once the training answers.
const detachConfigFile = ".detach-config.toml"

// spawnTraining starts `agenttrainer train` for cfg (or, with resume set,
// continues the run in dir) as a process of its own session, so that it
// outlives this terminal, and waits until its control socket answers.
func spawnTraining(dir string, cfg *config.Config, resume bool, overrides []string, startPaused bool) (pid int, err error) {
	args := []string{"train", "--quiet"}
	if resume {
		args = append(args, "--resume", dir)
		args = append(args, overrides...)
	} else {
		cfgFile := filepath.Join(dir, detachConfigFile)
		if err := atomicfile.Write(cfgFile, []byte(cfg.TOML()), 0o644); err != nil {
			return 0, err
		}
		defer os.Remove(cfgFile)
		args = append(args, "--run-dir", dir, "--config", cfgFile)
	}
	if startPaused {
		args = append(args, "--start-paused")
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	logPath := filepath.Join(dir, LogFile)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not killed with this terminal
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-exited:
			return 0, fmt.Errorf("the training stopped at once (%v); %s ends with:\n%s", err, logPath, tail(logPath, 12))
		case <-deadline:
			return cmd.Process.Pid, fmt.Errorf("the training (pid %d) did not open its control socket within a minute; see %s", cmd.Process.Pid, logPath)
		case <-time.After(50 * time.Millisecond):
			if c, err := control.Dial(dir); err == nil {
				c.Close()
				return cmd.Process.Pid, nil
			}
		}
	}
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// processLauncher starts the app's runs as detachable processes: the run
// waits paused until the app has subscribed, so no event is missed.
func processLauncher() tui.Launcher {
	return func(cfg config.Config) (*tui.Link, error) {
		t, err := trainer.New(cfg, trainer.Options{}) // configuration mistakes surface here
		if err != nil {
			return nil, err
		}
		t.Close()
		dir, err := runstore.Create(cfg, "", time.Now())
		if err != nil {
			return nil, err
		}
		if _, err := spawnTraining(dir, &cfg, false, nil, true); err != nil {
			return nil, err
		}
		return attachLink(dir, true)
	}
}

// attachLink connects the app to the training in dir.
func attachLink(dir string, resume bool) (*tui.Link, error) {
	c, err := control.Dial(dir)
	if err != nil {
		return nil, err
	}
	events, unsubscribe := c.Subscribe(4096)
	if resume {
		c.Resume()
	}
	return &tui.Link{Trainer: c, Events: events, Close: func() { unsubscribe(); c.Close() }}, nil
}

func runAttach(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("attach", "[RUN_DIR] [--runs-dir DIR]", "watch and steer a training that runs in the background (the newest when no RUN_DIR is given)", stderr)
	runsDir := fs.String("runs-dir", config.Default().Trainer.RunsDir, "where to look for live runs")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	var dir string
	switch len(rest) {
	case 0:
		live := liveRuns(*runsDir)
		if len(live) == 0 {
			fmt.Fprintf(stderr, "agenttrainer: no live training under %s; start one with `agenttrainer train --detach`\n", *runsDir)
			return exitConfig
		}
		dir = live[0].dir
	case 1:
		dir = rest[0]
	default:
		fmt.Fprintln(stderr, "agenttrainer: attach takes one run directory")
		return exitConfig
	}
	link, err := attachLink(dir, false)
	if err != nil {
		fmt.Fprintf(stderr, "agenttrainer: %v\n", err)
		return exitConfig
	}
	defer link.Close()
	if !isTerminal() {
		return watchHeadless(ctx, link, dir, stdout)
	}
	cfg := link.Trainer.Config()
	return runModel(ctx, tui.Options{Config: cfg, Attach: link, AttachTo: attachRun, Launch: processLauncher(), Detachable: true}, stdout, stderr)
}

// watchHeadless prints progress lines until the run ends; an interrupt
// leaves the training running.
func watchHeadless(ctx context.Context, link *tui.Link, dir string, stdout io.Writer) int {
	info := link.Trainer.Info()
	done := make(chan struct{})
	go func() {
		defer close(done)
		printProgress(link.Events, stdout, false, info.TotalSteps, info.Device)
	}()
	select {
	case <-done:
		return exitOK
	case <-ctx.Done():
		fmt.Fprintf(stdout, "detached; the training in %s goes on\n", dir)
		return exitOK
	}
}

type liveRun struct {
	dir     string
	ep      control.Endpoint
	info    trainer.Info
	paused  bool
	metrics runstore.RunInfo
}

// liveRuns lists the runs under runsDir whose training answers, newest first.
func liveRuns(runsDir string) []liveRun {
	runs, _ := runstore.ListRuns(runsDir)
	var out []liveRun
	for _, r := range runs {
		ep, err := control.ReadEndpoint(r.Dir)
		if err != nil {
			continue
		}
		c, err := control.Dial(r.Dir)
		if err != nil {
			continue
		}
		out = append(out, liveRun{dir: r.Dir, ep: ep, info: c.Info(), paused: c.Paused(), metrics: r})
		c.Close()
	}
	return out
}

func runPs(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ps", "[--runs-dir DIR]", "list the trainings running in the background", stderr)
	runsDir := fs.String("runs-dir", config.Default().Trainer.RunsDir, "where to look for live runs")
	if _, err := parseArgs(fs, args); err != nil {
		return flagExit(err)
	}
	live := liveRuns(*runsDir)
	if len(live) == 0 {
		fmt.Fprintf(stdout, "no live training under %s\n", *runsDir)
		return exitOK
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%-8s %-8s %-26s %-7s %-22s %-10s %s\n", "PID", "STATE", "ENV", "AGENT", "STEPS", "RETURN", "RUN DIRECTORY")
	for _, r := range live {
		state := "running"
		if r.paused {
			state = "paused"
		}
		fmt.Fprintf(&b, "%-8d %-8s %-26s %-7s %-22s %-10s %s\n", r.ep.PID, state, r.info.EnvID, r.info.Agent,
			fmt.Sprintf("%d/%d", r.metrics.Steps, r.info.TotalSteps), num(r.metrics.Last), r.dir)
	}
	stdout.Write(b.Bytes())
	return exitOK
}
