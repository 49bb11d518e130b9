// Package progress prints a training's progress as lines of text, for the headless commands.
package progress

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
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
					e.State, last.Step, float64(last.TimeS), Rate(float64(last.SPS)), Num(last.EpReturnMean), last.Episodes)
			}
		}
	}
}

// Line is one progress line: the step, the speed, then the registry's
// progress columns (grouped as their TensorBoard tags are) and the figures
// environments, agents and workflows reported.
func Line(m trainer.Metrics, total int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %9d/%d %3.0f%% | %8s steps/s", m.Step, total, 100*float64(m.Step)/float64(total), Rate(float64(m.SPS)))
	group := ""
	for _, d := range runstore.MetricList() {
		v, _ := m.Value(d.Name)
		if d.Progress == 0 || d.Optional && math.IsNaN(v) { // a figure the record does not carry (a language model's on a numeric run)
			continue
		}
		sep := " "
		if g, _, _ := strings.Cut(d.Tag, "/"); g != group {
			sep, group = " | ", g
		}
		fmt.Fprintf(&b, "%s%s %*s", sep, d.Name, d.Progress, d.Format(v))
	}
	sep := " | "
	for _, name := range m.ExtraNames() {
		if d, ok := runstore.LookupMetric(name); ok && d.Reported() {
			fmt.Fprintf(&b, "%s%s %s", sep, name, d.Format(float64(m.Extra[name])))
			sep = " "
		}
	}
	return b.String()
}

// Num prints a metric compactly; undefined values print as "-".
func Num(f trainer.Float) string { return runstore.Metric{}.Format(float64(f)) }

// Rate is a speed: whole numbers with thousands separated, and the digits
// that matter below 100 (a language model's run does a fraction of a step a
// second, which rounded to a whole number read as 0).
func Rate(v float64) string {
	switch {
	case v >= 100 || v == 0 || math.IsNaN(v):
		return Thousands(v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// Thousands prints v rounded, with commas between thousands.
func Thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
