// Package tui is agenttrainer's terminal app: a picker for the environment
// and agent, a config editor, a live training dashboard, a browser of past
// runs and of sweeps, built with Bubble Tea.
//
// The app steers a run only through the Trainer interface and watches it only
// through its event stream, so the run may live in this process
// (*trainer.Trainer, see Local) or in another one behind a control socket.
// Where runs live and how they start is the Host's business: one interface,
// implemented once for runs in processes of their own (host/spawn) and
// used alike by the local app and every SSH session.
package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/control"
)

// Trainer is what the app needs from a training run. Every method may do
// I/O (a run in another process answers over a socket), so the app calls
// them from tea.Cmds, never from Update or View.
type Trainer interface {
	// Info describes the run (RunDir may be empty until the run has made it).
	Info() trainer.Info
	// Config is the run's config with the live edits accepted so far.
	Config() config.Config
	// Subscribe streams the run's events into a channel with room for
	// buffer of them, beginning with the run's recent log and its latest
	// state change; a subscriber that falls behind loses events, never the
	// run's end, and the channel is closed after trainer.EventDone.
	Subscribe(buffer int) (<-chan trainer.Event, func())
	// Paused reports whether the run is paused (or asked to pause).
	Paused() bool
	Pause()
	Resume()
	Stop()
	SaveCheckpoint()
	// Edit changes a live key (TOML value raw) from the next iteration on;
	// bad values and restart-only keys are refused with a *config.Error.
	Edit(key, raw string) error
}

var (
	_ Trainer = (*trainer.Trainer)(nil)
	_ Trainer = (*control.Client)(nil)
)

// Link is the app's hold on one run: the trainer to steer and a
// subscription to its events taken before the run's first event.
type Link struct {
	Trainer Trainer
	Events  <-chan trainer.Event
	// Close ends the subscription; the run itself goes on.
	Close func()
}

// Host is where the app's runs live and how they start, end and are found
// again: every way the app reaches beyond itself. Its methods may take a
// while (a process starts, a socket is dialled), so the app calls them from
// tea.Cmds.
type Host interface {
	// Start launches a run of cfg. Configuration mistakes come back as
	// *config.Error before anything is written.
	Start(cfg config.Config) (*Link, error)
	// Attach watches the training that answers in runDir.
	Attach(runDir string) (*Link, error)
	// Resume continues the run in runDir from its latest checkpoint.
	Resume(runDir string) (*Link, error)
	// Live reports whether a training answers in runDir.
	Live(runDir string) bool
	// LiveRuns lists the runs under runsDir whose training answers
	// (a sweep's trials included), newest first.
	LiveRuns(runsDir string) []string
	// Resolve is the config a run of envID with agent starts from: the
	// environment's preset under the user's config file and overrides;
	// agent "" keeps the preset's (or the file's) agent.
	Resolve(envID, agent string) (config.Config, error)
	// Detachable says the runs outlive the app (they live in processes of
	// their own).
	Detachable() bool

	// StartSweep starts `agenttrainer sweep SPEC` over runsDir in a
	// process that outlives the app; StopSweep interrupts the sweep in dir
	// (its trials stop with a checkpoint), ResumeSweep continues it, and
	// SweepRunning reports whether its process is alive.
	StartSweep(spec, runsDir string) error
	StopSweep(dir string) error
	ResumeSweep(dir string) error
	SweepRunning(dir string) bool
}

// errNoProcesses is what an app that trains in its own process says of
// what needs processes of their own.
var errNoProcesses = errors.New("this app trains inside its own process and cannot start or stop background processes; run `agenttrainer` without --in-process")

// eventBuffer is how many events a subscription holds between two redraws;
// a fast run publishes a few hundred iterations a second.
const eventBuffer = 4096

// Local is the host of an app that trains in its own process: runs start
// and resume in goroutines until they end, are stopped, or ctx is done;
// runs in other processes are attached to over their control sockets.
// opts.RunDir should be empty, since the app may start several runs.
type Local struct {
	Ctx  context.Context
	Opts trainer.Options
	// Resolver builds a run's config; nil means the preset alone
	// (config.ForEnv).
	Resolver func(envID, agent string) (config.Config, error)
}

var _ Host = Local{}

// Start trains cfg in this process.
func (l Local) Start(cfg config.Config) (*Link, error) {
	t, err := trainer.New(cfg, l.Opts)
	if err != nil {
		return nil, err
	}
	return l.run(t), nil
}

// Resume continues the run in dir in this process.
func (l Local) Resume(dir string) (*Link, error) {
	t, err := trainer.Resume(dir, nil, l.Opts)
	if err != nil {
		return nil, err
	}
	return l.run(t), nil
}

func (l Local) run(t *trainer.Trainer) *Link {
	ctx := l.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	events, unsubscribe := t.Subscribe(eventBuffer)
	// The outcome reaches the app as trainer.EventDone.
	go func() {
		_, _ = t.Run(ctx)
		t.Close()
	}()
	return &Link{Trainer: t, Events: events, Close: unsubscribe}
}

// Attach dials the training in dir.
func (Local) Attach(dir string) (*Link, error) { return DialLink(dir) }

// Live dials dir's control socket.
func (Local) Live(dir string) bool { return LiveControl(dir) }

// LiveRuns lists the runs under runsDir that answer on their sockets.
func (Local) LiveRuns(runsDir string) []string { return liveDirs(runsDir, LiveControl) }

// Resolve is the environment's preset with agent.
func (l Local) Resolve(envID, agent string) (config.Config, error) {
	if l.Resolver != nil {
		return l.Resolver(envID, agent)
	}
	return PresetResolve(envID, agent)
}

// Detachable: the runs end with the app.
func (Local) Detachable() bool { return false }

func (Local) StartSweep(string, string) error { return errNoProcesses }
func (Local) StopSweep(string) error          { return errNoProcesses }
func (Local) ResumeSweep(string) error        { return errNoProcesses }
func (Local) SweepRunning(string) bool        { return false }

// PresetResolve is the config of envID's preset with agent ("" keeps the
// preset's).
func PresetResolve(envID, agent string) (config.Config, error) {
	cfg, err := config.ForEnv(envID)
	if agent != "" {
		cfg.Agent.Name = agent
	}
	return cfg, err
}

// DialLink attaches to the training that answers in dir over its control
// socket.
func DialLink(dir string) (*Link, error) {
	c, err := control.Dial(dir)
	if err != nil {
		return nil, err
	}
	events, unsubscribe := c.Subscribe(eventBuffer)
	return &Link{Trainer: c, Events: events, Close: func() { unsubscribe(); c.Close() }}, nil
}

// LiveControl reports whether a training answers on runDir's control
// socket (it dials it, so call it from a tea.Cmd).
func LiveControl(runDir string) bool {
	if _, err := control.ReadEndpoint(runDir); err != nil {
		return false // the usual case: no control.json, nothing to dial
	}
	c, err := control.Dial(runDir)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// liveDirs lists the run directories under runsDir, and the trials of its
// sweeps, that live says train now.
func liveDirs(runsDir string, live func(string) bool) []string {
	var out []string
	for _, d := range EndpointDirs(runsDir) {
		if live(d) {
			out = append(out, d)
		}
	}
	return out
}

// EndpointDirs lists the directories under runsDir that have a control
// endpoint (a training, or one that left it behind), a sweep's trials one
// level down included: the ones worth dialling.
func EndpointDirs(runsDir string) []string {
	var dirs []string
	entries, _ := os.ReadDir(runsDir)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(runsDir, e.Name())
		dirs = append(dirs, dir)
		if isSweepDir(dir) {
			trials, _ := os.ReadDir(dir)
			for _, tr := range trials {
				if tr.IsDir() {
					dirs = append(dirs, filepath.Join(dir, tr.Name()))
				}
			}
		}
	}
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, control.InfoFile)); err == nil {
			out = append(out, d)
		}
	}
	return out
}
