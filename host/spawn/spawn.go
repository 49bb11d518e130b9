// Package spawn runs trainings in processes of their own: starting one in the background, listing the live ones, attaching to one.
package spawn

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
		// The child creates the run in dir; the config it reads and the log
		// it writes live there from the start, so dir must exist first.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, err
		}
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
			if err == nil { // a short run can finish before it is seen answering
				return cmd.Process.Pid, nil
			}
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

// Host is the app's host when its runs live in processes of their own
// (tui.Host): the local app, `agenttrainer attach` and every SSH session use
// it. Runs it starts wait paused until the app has subscribed, so no event
// is missed, and outlive the app.
type Host struct {
	// ConfigFile and Overrides are the user's config file and key=value
	// overrides, under which each environment's preset is resolved.
	ConfigFile string
	Overrides  []string
}

var _ tui.Host = Host{}

// Start starts a run of cfg in a process of its own and attaches to it.
func (Host) Start(cfg config.Config) (*tui.Link, error) {
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

// Attach watches the training in dir.
func (Host) Attach(dir string) (*tui.Link, error) { return Attach(dir, false) }

// Resume continues the stopped run in dir from its latest checkpoint, in
// a process of its own, and attaches to it.
func (Host) Resume(dir string) (*tui.Link, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s does not exist", dir)
	}
	if _, err := Start(dir, nil, true, nil, true); err != nil {
		return nil, err
	}
	return Attach(dir, true)
}

// Live dials dir's control socket.
func (Host) Live(dir string) bool { return tui.LiveControl(dir) }

// LiveRuns lists the trainings under runsDir.
func (Host) LiveRuns(runsDir string) []string { return LiveDirs(runsDir) }

// Resolve is envID's preset under the user's config file and overrides,
// with agent ("": the preset's or the file's).
func (h Host) Resolve(envID, agent string) (config.Config, error) {
	over := append(h.Overrides[:len(h.Overrides):len(h.Overrides)], "env.id="+envID)
	if agent != "" {
		over = append(over, "agent.name="+agent)
	}
	return config.Resolve(h.ConfigFile, over)
}

// Detachable: the runs outlive the app.
func (Host) Detachable() bool { return true }

// StartSweep starts a sweep of spec in a process of its own.
func (Host) StartSweep(spec, runsDir string) error { return StartSweep(spec, runsDir) }

// StopSweep interrupts the sweep in dir (as Ctrl-C would): its trials stop
// with a checkpoint, and ResumeSweep continues it.
func (Host) StopSweep(dir string) error {
	pid, ok := sweepPID(dir)
	if !ok {
		return fmt.Errorf("the sweep in %s is not running", dir)
	}
	return syscall.Kill(pid, syscall.SIGTERM)
}

// ResumeSweep runs `agenttrainer sweep --resume DIR` in a process of its
// own, its output in the runs directory's sweep-<time>.log.
func (Host) ResumeSweep(dir string) error {
	if _, ok := sweepPID(dir); ok {
		return fmt.Errorf("the sweep in %s is running already", dir)
	}
	return startSweep(filepath.Dir(dir), "sweep", "--resume", dir)
}

// SweepRunning reports whether the sweep in dir has a live process.
func (Host) SweepRunning(dir string) bool {
	_, ok := sweepPID(dir)
	return ok
}

// SweepPIDFile, in a sweep's directory, names the process running it while
// it runs.
const SweepPIDFile = "sweep.pid"

// MarkSweep records this process as the one running the sweep in dir
// (making dir if need be); the returned function takes the mark away.
func MarkSweep(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() {}, err
	}
	path := filepath.Join(dir, SweepPIDFile)
	if err := atomicfile.Write(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return func() {}, err
	}
	return func() { os.Remove(path) }, nil
}

// sweepPID is the process running the sweep in dir, if it is alive and is
// a sweep (a stale file of a killed one names a pid that may be reused).
func sweepPID(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, SweepPIDFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && !strings.Contains(string(cmdline), "sweep") {
		return 0, false
	}
	return pid, true
}

// Attach connects the app to the training in dir; resume resumes a
// training that waits paused for its viewer.
func Attach(dir string, resume bool) (*tui.Link, error) {
	link, err := tui.DialLink(dir)
	if err != nil {
		return nil, err
	}
	if resume {
		link.Trainer.Resume()
	}
	return link, nil
}

// Live is a run whose training answers on its control socket.
type Live struct {
	Dir      string
	Endpoint control.Endpoint
	Info     trainer.Info
	Paused   bool
	Run      runstore.RunInfo
}

// LiveDirs are the directories of LiveRuns: what the app attaches to at
// start-up (Host.LiveRuns), locally and in every SSH session.
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
	dirs := tui.EndpointDirs(runsDir)
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
	return startSweep(runsDir, "sweep", spec, "trainer.runs_dir="+runsDir)
}

func startSweep(runsDir string, args ...string) error {
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(runsDir, "sweep-"+time.Now().Format("20060102-150405")+".log")
	_, exited, err := startDetached(logPath, args...)
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
