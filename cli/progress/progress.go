// Package progress prints a training's progress as lines of text, for the headless commands.
package progress

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// Print prints the run directory, then at most one progress line a second,
// then the result, until events closes.
func Print(events <-chan trainer.Event, w io.Writer, quiet bool, total int64, device string) {
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
				fmt.Fprintln(w, Line(e.Metrics, total))
			}
		case trainer.EventEdit, trainer.EventLog:
			// --quiet keeps warnings (a skipped checkpoint must not pass unsaid).
			if !quiet || (e.Kind == trainer.EventLog && strings.HasPrefix(e.Message, "warning:")) {
				fmt.Fprintln(w, e.Message)
			}
		case trainer.EventDone:
			if last.Iter > 0 {
				if !quiet {
					fmt.Fprintln(w, Line(last, total))
				}
				fmt.Fprintf(w, "%s: %d steps in %.1f s (%s steps/s), ep_return_mean %s over the last 100 of %d episodes\n",
					e.State, last.Step, float64(last.TimeS), Thousands(float64(last.SPS)), Num(last.EpReturnMean), last.Episodes)
			}
		}
	}
}

// Line is one progress line.
func Line(m trainer.Metrics, total int64) string {
	return fmt.Sprintf("step %9d/%d %3.0f%% | %8s steps/s | ep_return_mean %8s | policy_loss %7s value_loss %8s entropy %6s approx_kl %7s",
		m.Step, total, 100*float64(m.Step)/float64(total), Thousands(float64(m.SPS)), Num(m.EpReturnMean),
		Num(m.PolicyLoss), Num(m.ValueLoss), Num(m.Entropy), Num(m.ApproxKL))
}

// Num prints a metric compactly; undefined values print as "-".
func Num(f trainer.Float) string {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return "-"
	case v != 0 && math.Abs(v) < 0.01:
		return fmt.Sprintf("%.2e", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// Thousands prints v rounded, with commas between thousands.
func Thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
