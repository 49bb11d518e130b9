package trainer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// This file is a run's life around the PPO loop: its run directory and
// files, live edits between iterations, pausing, and the end of the run.

// Run trains until ppo.total_timesteps, Stop, or the end of ctx. It creates
// the run directory first; a run that is stopped keeps what it did (metrics
// and a final checkpoint).
func (t *Trainer) Run(ctx context.Context) (Summary, error) {
	if !t.started.CompareAndSwap(false, true) {
		return Summary{}, errors.New("a Trainer runs once; build a new one with New")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Loops too deep to watch ctx (a rollout step, a minibatch) watch this.
	stopWatch := context.AfterFunc(ctx, func() { t.stopping.Store(true) })
	defer stopWatch()
	t.mu.Lock()
	t.cancel = cancel
	if t.stopAsked { // a Stop that came before this Run had a context to cancel
		cancel()
	}
	t.mu.Unlock()

	f, err := t.openRun()
	if err != nil {
		if t.venv != nil {
			t.venv.Close()
		}
		t.finish(StateFailed, err)
		return Summary{}, err
	}
	sum, err := t.train(ctx, f)
	f.close()
	if t.venv != nil {
		t.venv.Close()
	}
	sum.RunDir = f.dir
	switch {
	case err != nil:
		sum.State = StateFailed
	case ctx.Err() != nil:
		sum.State = StateStopped
	default:
		sum.State = StateDone
	}
	t.finish(sum.State, err)
	return sum, err
}

func (t *Trainer) finish(s State, err error) {
	msg := "run " + string(s)
	if err != nil {
		msg += ": " + err.Error()
	}
	t.broker.publish(Event{Kind: EventDone, Time: t.opts.Now(), State: s, Err: err, Message: msg})
	t.broker.closeAll()
}

// runFiles are the open files of a run directory.
type runFiles struct {
	dir            string
	lock           *runstore.Lock // one trainer per run directory
	metrics, edits *runstore.JSONL
	tb             *runstore.TensorBoard // nil unless trainer.tensorboard
}

func (f *runFiles) close() {
	f.metrics.Close()
	f.edits.Close()
	f.tb.Close()
	f.lock.Release()
}

// writeMetrics appends a record to metrics.jsonl (and TensorBoard).
func (f *runFiles) writeMetrics(m *Metrics, now time.Time) error {
	if err := f.metrics.Write(m); err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	if f.tb != nil {
		if err := f.tb.Write(m, now); err != nil {
			return fmt.Errorf("writing TensorBoard events: %w", err)
		}
	}
	return nil
}

func (t *Trainer) openRun() (*runFiles, error) {
	c := &t.cfg
	dir := t.opts.RunDir
	if t.resume == nil && !t.reopen {
		var err error
		if dir, err = runstore.Create(*c, dir, t.opts.Now()); err != nil {
			return nil, fmt.Errorf("cannot create the run directory: %w", err)
		}
	}
	lock, err := runstore.Acquire(dir)
	if err != nil {
		return nil, err
	}
	f := &runFiles{dir: dir, lock: lock}
	if t.resume != nil || t.reopen {
		iter := 0 // a run continued in its warm start has no iteration yet
		if t.resume != nil {
			iter = t.resume.state.Iter
		}
		if err := runstore.Reopen(dir, iter); err != nil {
			f.close()
			return nil, err
		}
	}
	if err = runstore.WriteConfig(dir, *c); err != nil {
		f.close()
		return nil, err
	}
	if f.metrics, err = runstore.OpenJSONL(filepath.Join(dir, runstore.MetricsFile)); err != nil {
		f.close()
		return nil, err
	}
	if f.edits, err = runstore.OpenJSONL(filepath.Join(dir, runstore.EditsFile)); err != nil {
		f.close()
		return nil, err
	}
	if c.Trainer.TensorBoard {
		if f.tb, err = runstore.OpenTensorBoard(dir, t.opts.Now()); err != nil {
			f.close()
			return nil, fmt.Errorf("opening TensorBoard events: %w", err)
		}
	}
	t.mu.Lock()
	t.runDir = dir
	t.mu.Unlock()
	t.broker.publish(Event{Kind: EventStarted, Time: t.opts.Now(), Message: dir})
	return f, nil
}

// applyEdits applies queued live edits before an iteration and records them.
func (t *Trainer) applyEdits(f *runFiles, iter int, p *progress) error {
	edits, cfg := t.takeEdits()
	if len(edits) == 0 {
		return nil
	}
	t.cfg = cfg
	step := p.step
	for _, e := range edits {
		e.Iter, e.Step, e.TimeS = iter, step, p.elapsed(t.opts.Now()).Seconds()
		if err := f.edits.Write(e); err != nil {
			return fmt.Errorf("writing %s: %w", runstore.EditsFile, err)
		}
		t.broker.publish(Event{Kind: EventEdit, Time: t.opts.Now(), Edit: e,
			Message: fmt.Sprintf("step %d: %s = %s (was %s)", step, e.Key, e.Value, e.Old)})
	}
	return runstore.WriteConfig(f.dir, t.cfg)
}

// waitWhilePaused blocks while the run is paused. A checkpoint is written
// when the pause begins, so a paused run can be abandoned safely.
func (t *Trainer) waitWhilePaused(ctx context.Context, f *runFiles, sum *Summary, p *progress) error {
	if !t.Paused() {
		return nil
	}
	began := t.opts.Now()
	defer func() { p.paused += t.opts.Now().Sub(began) }()
	// A run held before its first step (the app starts runs paused until
	// it watches them) changes state without a word, so that no viewer's
	// log begins with "resumed" or not depending on when it attached.
	pausedMsg, resumedMsg := fmt.Sprintf("paused at step %d", p.step), "resumed"
	if p.iter == 0 && p.step == 0 {
		pausedMsg, resumedMsg = "", ""
	}
	t.broker.publish(Event{Kind: EventState, Time: began, State: StatePaused, Message: pausedMsg})
	if p.iter > 0 {
		if err := t.checkpoint(f, sum, p, false); err != nil {
			t.logf("checkpoint failed: %v", err)
		}
	}
	for t.Paused() {
		if t.saveReq.Swap(false) && p.iter > 0 {
			if err := t.checkpoint(f, sum, p, true); err != nil {
				t.logf("checkpoint failed: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.wake:
		}
	}
	t.broker.publish(Event{Kind: EventState, Time: t.opts.Now(), State: StateRunning, Message: resumedMsg})
	return nil
}

// checkpointIfDue writes a checkpoint at the end of iteration iter when one
// was asked for (the control socket's save), trainer.save_every_s has
// passed or trainer.save_freq divides iter: the PPO and the language-model
// loops decide alike.
func (t *Trainer) checkpointIfDue(f *runFiles, sum *Summary, p *progress, iter int) error {
	c := &t.cfg
	asked := t.saveReq.Swap(false)
	due := c.Trainer.SaveEveryS > 0 && t.opts.Now().Sub(p.lastSave).Seconds() >= c.Trainer.SaveEveryS
	if !asked && !due && (c.Trainer.SaveFreq <= 0 || iter%c.Trainer.SaveFreq != 0) {
		return nil
	}
	if err := t.checkpoint(f, sum, p, asked); err != nil {
		if !errors.As(err, new(*runstore.OccupiedError)) {
			return err
		}
		// Only this name is unusable: the next checkpoint gets another.
		// The final one must be written, though.
		t.logf("warning: %v; training goes on, and checkpoints/latest still names the one before", err)
	}
	return nil
}
