package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/control"
)

// LogFile receives a trial's output, in its run directory.
const LogFile = "train.log"

type exited struct {
	r    *Record
	code int
	err  error
}

// runLocal runs the trials as processes of this machine, Parallel at once.
func (sw *Sweep) runLocal(ctx context.Context) error {
	if sw.opts.Exe == "" {
		return errors.New("sweep: no executable to run the trials with")
	}
	// A trial that was live when an earlier sweep process died is asked to
	// stop (keeping a checkpoint) before it continues under this one.
	for _, r := range sw.Records {
		if r.State == Running || r.State == Interrupted {
			stopLive(ctx, r.Dir)
			sw.refresh(r)
			if sw.reachedBudget(r) {
				r.State, r.Reason = Done, ""
			} else {
				r.State = Interrupted
			}
		}
	}
	st := sw.stopper()
	sw.st = st
	procs := map[*Record]*exec.Cmd{}
	exits := make(chan exited, len(sw.Records))
	queue := sw.startable()
	tick := time.NewTicker(sw.opts.Poll)
	defer tick.Stop()
	interrupted := false
	for {
		for !interrupted && len(procs) < sw.Spec.Parallel && len(queue) > 0 {
			r := queue[0]
			queue = queue[1:]
			cmd, err := sw.startLocal(r, exits)
			if err != nil {
				r.State, r.Reason = Failed, err.Error()
				sw.logf("%s failed to start: %v", r.Trial, err)
				continue
			}
			procs[r] = cmd
			sw.writeResults()
		}
		if len(procs) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				for _, cmd := range procs {
					cmd.Process.Signal(syscall.SIGTERM) // the trainer saves a checkpoint and exits
				}
			}
			// keep draining exits
			e := <-exits
			delete(procs, e.r)
			sw.finish(e, true)
		case e := <-exits:
			delete(procs, e.r)
			sw.finish(e, interrupted)
			sw.writeResults()
		case <-tick.C:
			changed := false
			for r, cmd := range procs {
				before := r.Steps
				ms := sw.refresh(r)
				changed = changed || r.Steps != before
				if r.stopReq != "" {
					continue
				}
				if reason := sw.milestones(r, ms, st); reason != "" {
					r.stopReq = reason
					sw.logf("%s stopping: %s", r.Trial, reason)
					stopTrial(r.Dir, cmd)
					changed = true
				}
			}
			if changed {
				sw.writeResults()
			}
		}
	}
	if interrupted {
		return ctx.Err()
	}
	return nil
}

// startLocal starts a trial's training process.
func (sw *Sweep) startLocal(r *Record, exits chan<- exited) (*exec.Cmd, error) {
	args, err := sw.prepareStart(r)
	if err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(r.Dir, LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(sw.opts.Exe, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = trialProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	verb := "started"
	if args[2] == "--resume" {
		verb = fmt.Sprintf("continues from step %d", r.Steps)
	}
	r.State, r.Reason, r.started = Running, "", time.Now()
	sw.logf("%s %s: %s (pid %d)", r.Trial, verb, sw.describe(r), cmd.Process.Pid)
	go func() {
		err := cmd.Wait()
		log.Close()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		exits <- exited{r: r, code: code, err: err}
	}()
	return cmd, nil
}

// finish records how a trial's process ended.
func (sw *Sweep) finish(e exited, interrupted bool) {
	r := e.r
	sw.note(r, sw.refresh(r))
	r.Seconds += time.Since(r.started).Seconds()
	switch {
	case r.stopReq != "" && e.code == 0 && sw.reachedBudget(r):
		r.State, r.Reason = Done, "reached its budget before early stopping ("+r.stopReq+") took effect"
	case r.stopReq != "":
		r.State, r.Reason = Stopped, r.stopReq
	case e.code == 0:
		r.State, r.Reason = Done, ""
	case interrupted:
		r.State, r.Reason = Interrupted, "the sweep was interrupted; continue with --resume"
	case e.code == 130:
		r.State, r.Reason = Stopped, "stopped from outside the sweep"
	default:
		log := filepath.Join(r.Dir, LogFile)
		why := tailLine(log)
		if why == "" { // a full disk keeps even the log from saying why
			why = fmt.Sprintf("its log %s says nothing (a full disk?); --resume tries it again", log)
		}
		r.State, r.Reason = Failed, fmt.Sprintf("exit %d: %s", e.code, why)
	}
	msg := fmt.Sprintf("%s %s at %d steps", r.Trial, r.State, r.Steps)
	if r.Metric != nil {
		msg += fmt.Sprintf(", %s %s", sw.Spec.Metric, num(r.Metric))
	}
	if r.State == Failed {
		msg += ": " + r.Reason
	}
	sw.logf("%s", msg)
}

// stopTrial asks a trial to stop over its control socket (it then writes a
// final checkpoint and exits), else with SIGTERM.
func stopTrial(dir string, cmd *exec.Cmd) {
	if c, err := control.Dial(dir); err == nil {
		c.Stop()
		c.Close()
		return
	}
	if cmd != nil && cmd.Process != nil {
		cmd.Process.Signal(syscall.SIGTERM)
	}
}

// stopLive stops a training still answering in dir (left by a sweep
// process that died) and waits until it has let go of the run.
func stopLive(ctx context.Context, dir string) {
	c, err := control.Dial(dir)
	if err != nil {
		return
	}
	pid := c.PID()
	c.Stop()
	c.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
