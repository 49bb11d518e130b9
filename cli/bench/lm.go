package bench

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/cli/progress"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// lmWork is one line of the language models' table.
type lmWork struct {
	shape                    lm.BenchShape
	kind                     string // "train", "generate" or "decode"
	batch, prompt, newTokens int
}

func (w lmWork) label() string {
	if w.kind == "train" {
		return fmt.Sprintf("train %d×%d", w.shape.Rows, w.shape.Seq)
	}
	return fmt.Sprintf("%s %d×(%d+%d)", w.kind, w.batch, w.prompt, w.newTokens)
}

// lmWorks are the table's lines: for each shape a training step, batched
// generation (64 sequences) and batch-1 decoding; with quick, small work
// on the 5M shape only.
func lmWorks(quick bool) []lmWork {
	var ws []lmWork
	for _, s := range lm.BenchShapes {
		prompt, newTokens := lm.BenchPrompt, lm.BenchNewTokens
		if quick {
			if s.Name != "5M" {
				continue
			}
			s.Rows, s.Seq, prompt, newTokens = 1, 16, 4, 2
		}
		ws = append(ws, lmWork{shape: s, kind: "train"},
			lmWork{shape: s, kind: "generate", batch: 64, prompt: prompt, newTokens: newTokens},
			lmWork{shape: s, kind: "decode", batch: 1, prompt: prompt, newTokens: newTokens})
	}
	return ws
}

// lmReport measures the language-model table: each line's work runs once
// to warm up, then runs times, each timed run just after a measurement of
// the float32 peak (compute-bound work) or of the memory bandwidth (batch-1
// decoding), so that each fraction is taken side by side on a machine
// whose load may change; medians and ranges over the runs.
func (b *bench) lmReport(w io.Writer, runs int, quick bool) error {
	ws := lmWorks(quick)
	fmt.Fprintf(b.progress, "language models: %d lines × %d runs, each beside a peak or bandwidth measurement", len(ws), runs)
	probe := 500 * time.Millisecond
	if quick {
		probe = 20 * time.Millisecond
	}
	type line struct {
		work                   lmWork
		tokens, rate, fraction summary
		unit, of               string
	}
	var lines []line
	for _, lw := range ws {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		dev := gpu.NewCPU(0)
		var work *lm.BenchWork
		var err error
		if lw.kind == "train" {
			work, err = lm.NewTrainWork(dev, lw.shape, cmdutil.MemoryLimit())
		} else {
			work, err = lm.NewGenerateWork(dev, lw.shape, lw.batch, lw.prompt, lw.newTokens, cmdutil.MemoryLimit())
		}
		if err == nil {
			err = work.Run(0)
		}
		if err != nil {
			dev.Close()
			return fmt.Errorf("%s %s: %v", lw.shape.Name, lw.label(), err)
		}
		var tokens, rate, fraction []float64
		for r := 1; r <= runs && b.ctx.Err() == nil; r++ {
			var ceiling float64
			if lw.kind == "decode" {
				ceiling = gpu.MeasureBandwidth(0, probe).GBps
			} else {
				ceiling = gpu.MeasurePeak(0, probe).GFLOPS
			}
			start := time.Now()
			if err := work.Run(r); err != nil {
				dev.Close()
				return fmt.Errorf("%s %s: %v", lw.shape.Name, lw.label(), err)
			}
			sec := time.Since(start).Seconds()
			v := work.FLOPs / sec / 1e9
			if lw.kind == "decode" {
				v = work.Bytes / sec / 1e9
			}
			tokens, rate, fraction = append(tokens, work.Tokens/sec), append(rate, v), append(fraction, 100*v/ceiling)
			fmt.Fprint(b.progress, ".")
		}
		dev.Close()
		if err := b.ctx.Err(); err != nil {
			return err
		}
		l := line{work: lw, tokens: summarize(tokens), rate: summarize(rate), fraction: summarize(fraction), unit: "GFLOP/s", of: "peak"}
		if lw.kind == "decode" {
			l.unit, l.of = "GB/s", "bandwidth"
		}
		lines = append(lines, l)
	}
	fmt.Fprintln(b.progress)

	fmt.Fprintf(w, "Language models (agents/lm on the CPU device, %d cores; random weights, Llama layers, tied embeddings), %d run(s) per figure%s;\n",
		runtime.GOMAXPROCS(0), runs, map[bool]string{true: " · QUICK: not a measurement"}[quick])
	fmt.Fprintln(w, "each run's fraction is of the float32 peak (or, decoding one sequence, the memory bandwidth) measured just before it:")
	fmt.Fprintf(w, "  %-12s %-22s %-30s %-24s %s\n", "model", "work", "tokens/s median (min–max)", "rate median", "fraction median (min–max)")
	prev := ""
	for _, l := range lines {
		name := l.work.shape.Name
		if name == prev {
			name = ""
		}
		prev = l.work.shape.Name
		fmt.Fprintf(w, "  %-12s %-22s %-30s %-24s %.0f %% of %s (%.0f–%.0f)\n", name, l.work.label(),
			fmt.Sprintf("%s (%s–%s)", progress.Thousands(l.tokens.median), progress.Thousands(l.tokens.lo), progress.Thousands(l.tokens.hi)),
			fmt.Sprintf("%.1f %s", l.rate.median, l.unit), l.fraction.median, l.of, l.fraction.lo, l.fraction.hi)
	}
	fmt.Fprintln(w, "Training counts 6 FLOPs per token and matrix parameter (the head on scored tokens) and three times the causal")
	fmt.Fprintln(w, "attention; generation samples at temperature 1 with each token's log-prob, no stop; decoding counts the")
	fmt.Fprintln(w, "weights and the mean KV cache read per token.")
	return nil
}
