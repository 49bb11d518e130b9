// Package tui is agenttrainer's terminal app: a picker for the environment
// and agent, a config editor, a live training dashboard and a browser of past
// runs, built with Bubble Tea.
//
// The app steers a run only through the Trainer interface and watches it only
// through its event stream, so the run may live in this process
// (*trainer.Trainer, see Local) or in another one behind a control socket.
package tui

import (
	"context"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
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
	// buffer of them; a subscriber that falls behind loses events, never the
	// run's end, and the channel is closed after trainer.EventDone.
	Subscribe(buffer int) (<-chan trainer.Event, func())
	Pause()
	Resume()
	Stop()
	SaveCheckpoint()
	// Edit changes a live key (TOML value raw) from the next iteration on;
	// bad values and restart-only keys are refused with a *config.Error.
	Edit(key, raw string) error
}

var _ Trainer = (*trainer.Trainer)(nil)

// Link is the app's hold on one run: the trainer to steer and a
// subscription to its events taken before the run's first event.
type Link struct {
	Trainer Trainer
	Events  <-chan trainer.Event
	// Close ends the subscription; the run itself goes on.
	Close func()
}

// Launcher starts a run for a config. Configuration mistakes come back as
// *config.Error before anything is written.
type Launcher func(cfg config.Config) (*Link, error)

// eventBuffer is how many events a subscription holds between two redraws;
// a fast run publishes a few hundred iterations a second.
const eventBuffer = 4096

// Local starts runs in this process, each trained in its own goroutine until
// it ends, is stopped, or ctx is done. opts.RunDir should be empty, since
// the app may start several runs.
func Local(ctx context.Context, opts trainer.Options) Launcher {
	return func(cfg config.Config) (*Link, error) {
		t, err := trainer.New(cfg, opts)
		if err != nil {
			return nil, err
		}
		events, unsubscribe := t.Subscribe(eventBuffer)
		// The outcome reaches the app as trainer.EventDone.
		go func() {
			_, _ = t.Run(ctx)
			t.Close()
		}()
		return &Link{Trainer: t, Events: events, Close: unsubscribe}, nil
	}
}
