// Package spawn runs trainings in processes of their own: starting one in the background, listing the live ones, attaching to one.
package spawn

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// sweepSpecFile marks a sweep directory (internal/sweep.SpecFile), whose
// trials LiveRuns lists too.
const sweepSpecFile = "sweep.toml"

// detachConfigFile carries a resolved config from the parent to a detached
// training; the parent removes it once the training answers.
const detachConfigFile = ".detach-config.toml"

// Start starts `agenttrainer train` (this program's executable) for cfg
// (or, with resume set, continues the run in dir) as a process of its own
// session, so that it outlives this terminal, and waits until its control
// socket answers.
func Start(dir string, cfg *config.Config, resume bool, overrides []string, startPaused bool) (pid int, err error) {
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
	logPath := filepath.Join(dir, LogFile)
	cmd, exited, err := startDetached(logPath, args...)
	if err != nil {
		return 0, err
	}
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

// startDetached runs this program's executable with args in a session of
// its own, so that it outlives this terminal, its output appended to
// logPath; exited delivers its end.
func startDetached(logPath string, args ...string) (cmd *exec.Cmd, exited <-chan error, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	defer log.Close() // the child has its own descriptors
	cmd = exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not killed with this terminal
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, done, nil
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Launcher starts the app's runs as detachable processes: the run waits
// paused until the app has subscribed, so no event is missed.
func Launcher() tui.Launcher {
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
		if _, err := Start(dir, &cfg, false, nil, true); err != nil {
			return nil, err
		}
		return Attach(dir, true)
	}
}

// Attach connects the app to the training in dir; resume resumes a
// training that waits paused for its viewer.
func Attach(dir string, resume bool) (*tui.Link, error) {
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

// AttachTo connects the app's runs browser to a live run (its attach key).
func AttachTo(dir string) (*tui.Link, error) { return Attach(dir, false) }

// Live is a run whose training answers on its control socket.
type Live struct {
	Dir      string
	Endpoint control.Endpoint
	Info     trainer.Info
	Paused   bool
	Run      runstore.RunInfo
}

// LiveDirs are the directories of LiveRuns: what the app attaches to at
// start-up (tui.Options.Background), locally and in every SSH session.
func LiveDirs(runsDir string) []string {
	var dirs []string
	for _, l := range LiveRuns(runsDir) {
		dirs = append(dirs, l.Dir)
	}
	return dirs
}

// LiveRuns lists the runs under runsDir whose training answers, newest first.
func LiveRuns(runsDir string) []Live {
	// Only directories with a control endpoint are read further: also one
	// whose training has not written its config yet (it serves its socket
	// first), and a sweep's trials, one level down (runs/<sweep>/trial-000).
	var dirs []string
	entries, _ := os.ReadDir(runsDir)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(runsDir, e.Name())
		dirs = append(dirs, dir)
		if _, err := os.Stat(filepath.Join(dir, sweepSpecFile)); err == nil {
			trials, _ := os.ReadDir(dir)
			for _, tr := range trials {
				if tr.IsDir() {
					dirs = append(dirs, filepath.Join(dir, tr.Name()))
				}
			}
		}
	}
	// Asked at once, a few at a time: a socket that never answers costs
	// its timeout once, not once per run listed after it.
	found := make([]*Live, len(dirs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, dir := range dirs {
		ep, err := control.ReadEndpoint(dir)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := control.Dial(dir)
			if err != nil {
				return
			}
			found[i] = &Live{Dir: dir, Endpoint: ep, Info: c.Info(), Paused: c.Paused(), Run: runstore.ReadRunInfo(dir)}
			c.Close()
		}()
	}
	wg.Wait()
	var out []Live
	for _, l := range found {
		if l != nil {
			out = append(out, *l)
		}
	}
	slices.SortStableFunc(out, func(a, b Live) int { // newest first, as runstore lists runs
		if c := b.Run.Started.Compare(a.Run.Started); c != 0 {
			return c
		}
		return strings.Compare(b.Run.Name, a.Run.Name)
	})
	return out
}

// StartSweep runs `agenttrainer sweep SPEC trainer.runs_dir=RUNS_DIR` in a
// process of its own that outlives the app (the sweeps screen's n), its
// output in RUNS_DIR/sweep-<time>.log. A sweep that ends within a second
// (a spec the app's check let through) is reported with its log's end.
func StartSweep(spec, runsDir string) error {
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(runsDir, "sweep-"+time.Now().Format("20060102-150405")+".log")
	_, exited, err := startDetached(logPath, "sweep", spec, "trainer.runs_dir="+runsDir)
	if err != nil {
		return err
	}
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("the sweep stopped at once (%v); %s ends with:\n%s", err, logPath, tail(logPath, 6))
		}
	case <-time.After(time.Second):
	}
	return nil
}
