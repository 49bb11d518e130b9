// Package eval is `agenttrainer eval`: playing episodes with a run's latest checkpoint.
package eval

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Options are eval's flags and run directory.
type Options struct {
	RunDir        string
	Episodes      int
	Deterministic bool
	Render        bool
	FPS           int
	Seed          int64
	Tasks         string
	Samples       int
}

// Parse reads eval's command line.
func Parse(args []string) (Options, error) {
	var o Options
	fs := cmdutil.NewFlags("eval", "RUN_DIR [--episodes N] [--deterministic] [--render] [--fps N] [--seed S] [--tasks val|train]",
		"play episodes with a run's latest checkpoint and print the mean return")
	fs.IntVar(&o.Episodes, "episodes", 10, "play `N` episodes")
	fs.StringVar(&o.Tasks, "tasks", "", "play one task an episode from the run's task files: `SET` is val or train (default: val when it has them, else train)")
	fs.BoolVar(&o.Deterministic, "deterministic", false, "take the most likely action instead of sampling")
	fs.BoolVar(&o.Render, "render", false, "draw the episodes in the terminal as they play")
	fs.IntVar(&o.FPS, "fps", 30, "frames per second with --render")
	fs.Int64Var(&o.Seed, "seed", 0, "environment seed (0: trainer.seed + 1,000,000)")
	fs.IntVar(&o.Samples, "samples", 1, "language-model runs: play each task `K` times and report pass@K")
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return o, err
	}
	if len(rest) != 1 {
		return o, cmdutil.Usagef("eval takes one run directory, e.g. agenttrainer eval runs/20260101-120000-CartPole-v1-mlp")
	}
	o.RunDir = rest[0]
	if o.Render && o.FPS <= 0 {
		return o, cmdutil.Usagef("--fps must be at least 1")
	}
	if o.Samples < 1 || o.Samples > 4096 {
		return o, cmdutil.Usagef("--samples must be between 1 and 4096")
	}
	return o, nil
}

// Run plays the episodes and prints their mean return.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	opts := trainer.EvalOptions{Episodes: o.Episodes, Deterministic: o.Deterministic, Seed: o.Seed, Tasks: o.Tasks, Samples: o.Samples}
	if o.Render {
		// On a terminal each frame replaces the last, in colour; into a
		// pipe or a file the frames follow one another as plain text.
		clear, paint := "\x1b[H\x1b[2J", ansiColour
		if !isTerminal(stdout) {
			clear, paint = "\n", func(s string, _ int) string { return s }
		}
		opts.Frame = func(f trainer.Frame) error {
			fmt.Fprintf(stdout, "%s%s  episode %d/%d  step %d  return %s\n%s\n", clear, filepath.Base(o.RunDir),
				f.Episode+1, o.Episodes, f.Step, strconv.FormatFloat(f.Return, 'g', 6, 64),
				envs.Paint(f.Drawing, f.Colours, false, paint)+envs.Paint(f.Caption, f.Colours, true, paint))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second / time.Duration(o.FPS)):
				return nil
			}
		}
	}
	res, err := trainer.Evaluate(ctx, o.RunDir, opts)
	if err != nil {
		return err // a run that cannot be evaluated is a *config.Error (exit 2); a failing environment is not (1)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(stderr, "%s: warning: %s\n", cmdutil.Prog, s)
	}
	if res.Transcripts != nil && !o.Render {
		printTranscripts(stdout, res.Transcripts)
	}
	on := "on " + res.Tasks
	if res.Tasks == "env.args" {
		on = "on the environment as configured (env.args)"
	}
	episodes := fmt.Sprintf("%d episodes", len(res.Returns))
	if len(res.Returns) == 1 {
		episodes = "1 episode"
	}
	fmt.Fprintf(stdout, "%s %s, %s, %s: %s, return %.2f ± %.2f (min %.1f, max %.1f), length %.1f",
		res.EnvID, res.Agent, filepath.Base(res.Checkpoint), on, episodes, res.Mean(), res.Std(),
		minOf(res.Returns), maxOf(res.Returns), meanOf(res.Lengths))
	if res.HasSuccess {
		fmt.Fprintf(stdout, ", success rate %.3f", float64(res.Successes)/float64(len(res.Returns)))
	}
	if res.Transcripts != nil && res.Samples > 1 { // pass@1 is the success rate
		fmt.Fprintf(stdout, ", pass@1 %.3f, pass@%d %.3f", float64(res.Successes)/float64(len(res.Returns)), res.Samples, res.PassK)
	}
	fmt.Fprintln(stdout)
	return nil
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// isTerminal reports whether w is a terminal (frames may be redrawn in place).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// ansiColour paints s in an xterm-256 colour (--render draws with escapes).
func ansiColour(s string, colour int) string {
	return fmt.Sprintf("\x1b[38;5;%dm%s\x1b[0m", colour, s)
}

// printTranscripts prints a language model's episodes: each one's task,
// outcome and chat, the system prompt shortened to its first line (it is
// the same in every episode).
func printTranscripts(w io.Writer, trs []runstore.Transcript) {
	for i, tr := range trs {
		fmt.Fprintf(w, "── episode %d: task %s, sample %d: reward %g, correct %v, %s, %d turns\n",
			i+1, termtext.Clean(tr.Task), tr.Sample, tr.Reward, tr.Correct, tr.Termination, tr.Turns)
		for _, m := range tr.Messages {
			content := termtext.CleanText(strings.ReplaceAll(m.Content, "\t", "  "))
			if m.Role == "system" {
				first, _, cut := strings.Cut(content, "\n")
				if cut {
					first += " […]"
				}
				content = first
			}
			fmt.Fprintf(w, "[%s]", m.Role)
			if m.Reward != nil {
				fmt.Fprintf(w, " (reward %g)", *m.Reward)
			}
			fmt.Fprintf(w, "\n%s\n", content)
		}
	}
}
