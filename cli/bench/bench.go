// Package bench is `agenttrainer bench`: measuring training speed, time to solve and peak memory on this machine.
package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/cli/progress"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// The bench command measures what the CPU-speed targets are about, the way
// a user meets them: every figure comes from a headless `train` process of
// this binary (wall time and peak RSS of the whole process), repeated and
// reported as median, min and max.

// benchSolved is CartPole-v1's "solved" return.
const benchSolved = 475

// benchRun is one measured training process.
type benchRun struct {
	wall     time.Duration
	rssBytes int64             // 0 where the OS does not say
	metrics  []trainer.Metrics // at least one
}

// last is the run's final metrics record.
func (r benchRun) last() trainer.Metrics { return r.metrics[len(r.metrics)-1] }

// sps is the run's env steps per second of process wall time.
func (r benchRun) sps() float64 { return float64(r.last().Step) / r.wall.Seconds() }

// solvedAfter returns the training time (time_s) and step of the first
// iteration whose ep_return_mean reached benchSolved, or ok=false.
func (r benchRun) solvedAfter() (seconds float64, step int64, ok bool) {
	for _, m := range r.metrics {
		if float64(m.EpReturnMean) >= benchSolved {
			return float64(m.TimeS), m.Step, true
		}
	}
	return 0, 0, false
}

// updateRate is the update phase's arithmetic rate in GFLOP/s over the
// run, each update being flops of work.
func (r benchRun) updateRate(flops float64) float64 {
	var seconds float64
	for _, m := range r.metrics {
		seconds += float64(m.UpdateS)
	}
	return flops * float64(len(r.metrics)) / seconds / 1e9
}

// summary is the median, min and max of some runs' figure.
type summary struct{ median, lo, hi float64 }

func summarize(xs []float64) summary {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return summary{med, s[0], s[n-1]}
}

// Options are bench's flags.
type Options struct {
	Runs  int  // training processes (LM: timed runs) per figure
	Quick bool // a few iterations per run: checks the command, measures nothing
	// Only is "rl" (the PPO tables), "lm" (the language models') or ""
	// (both).
	Only string
}

// Parse reads bench's command line.
func Parse(args []string) (Options, error) {
	var o Options
	fs := cmdutil.NewFlags("bench", "[--runs N] [--quick] [--only rl|lm]",
		"measure training speed on this machine: the CleanRL CartPole configuration end to end, time to solve, peak memory, and scaling against the measured float32 peak; then language models (5M, 20M and SmolLM-135M-shaped, random weights): training, batched generation and batch-1 decoding against the measured peak and memory bandwidth")
	fs.IntVar(&o.Runs, "runs", 5, "training processes (language models: timed runs) per figure (medians of these)")
	fs.BoolVar(&o.Quick, "quick", false, "a few iterations per run: checks the command, measures nothing")
	fs.StringVar(&o.Only, "only", "", "measure only rl (the PPO tables) or lm (the language models)")
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return o, err
	}
	if len(rest) > 0 {
		return o, cmdutil.Usagef("bench: unexpected argument %q (bench takes only --runs and --quick)", rest[0])
	}
	if o.Runs < 1 {
		return o, cmdutil.Usagef("bench: --runs must be at least 1, got %d", o.Runs)
	}
	if o.Only != "" && o.Only != "rl" && o.Only != "lm" {
		return o, cmdutil.Usagef("bench: --only %q: choose rl or lm", o.Only)
	}
	return o, nil
}

// Run measures: every figure comes from `train` processes of this
// program's executable. Progress dots go to stderr, the table to stdout.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: cannot find this program's executable: %v", err)
	}
	tmp, err := os.MkdirTemp("", "agenttrainer-bench-")
	if err != nil {
		return fmt.Errorf("bench: %v", err)
	}
	defer os.RemoveAll(tmp)
	b := &bench{ctx: ctx, exe: exe, dir: tmp, progress: stderr}
	err = nil
	if o.Only != "lm" {
		err = b.report(stdout, o.Runs, o.Quick)
	}
	if err == nil && o.Only != "rl" {
		if o.Only == "" {
			fmt.Fprintln(stdout)
		}
		err = b.lmReport(stdout, o.Runs, o.Quick)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("bench: %w", cmdutil.ErrInterrupted)
		}
		return fmt.Errorf("bench: %v", err)
	}
	return nil
}

type bench struct {
	ctx      context.Context
	exe, dir string
	n        int // runs so far, naming their directories
	progress io.Writer
}

// train runs `train --quiet` with overrides in a process of its own.
func (b *bench) train(overrides ...string) (benchRun, error) {
	b.n++
	dir := filepath.Join(b.dir, fmt.Sprint("run-", b.n))
	args := append([]string{"train", "--quiet", "--run-dir", dir, "trainer.device=cpu"}, overrides...)
	cmd := exec.CommandContext(b.ctx, b.exe, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return benchRun{}, fmt.Errorf("train %s: %v\n%s", strings.Join(overrides, " "), err, out.String())
	}
	ms, err := runstore.ReadMetrics(dir)
	if err != nil || len(ms) == 0 {
		return benchRun{}, fmt.Errorf("train %s wrote no metrics: %v", strings.Join(overrides, " "), err)
	}
	fmt.Fprint(b.progress, ".")
	os.RemoveAll(dir) // checkpoints of large networks add up
	return benchRun{wall: wall, rssBytes: maxRSS(cmd.ProcessState), metrics: ms}, nil
}

func (b *bench) report(w io.Writer, runs int, quick bool) error {
	fmt.Fprintf(b.progress, "measuring the float32 peak, then %d training runs per figure", runs)
	peakTime := time.Second
	if quick {
		peakTime = 50 * time.Millisecond
	}
	peak1, peakAll := gpu.MeasurePeak(1, peakTime), gpu.MeasurePeak(0, peakTime)

	// CleanRL's CartPole configuration is the default one; seeds 1, 2, 3, …
	cleanRL := config.Default()
	steps := cleanRL.PPO.TotalTimesteps
	if quick {
		steps = int64(cleanRL.BatchSize()) * 3
	}
	var cleanRuns []benchRun
	for seed := 1; seed <= runs; seed++ {
		r, err := b.train(fmt.Sprint("trainer.seed=", seed), fmt.Sprint("ppo.total_timesteps=", steps))
		if err != nil {
			return err
		}
		cleanRuns = append(cleanRuns, r)
	}

	type scaled struct {
		envs   int
		hidden string
		sps    summary
		gflops summary
	}
	var grid []scaled
	cartObs, cartAct, err := spacesOf(cleanRL.Env.ID)
	if err != nil {
		return err
	}
	for _, g := range []struct {
		envs   int
		hidden string
	}{{4, "[64,64]"}, {64, "[64,64]"}, {256, "[64,64]"}, {64, "[256,256]"}, {256, "[256,256]"}} {
		cfg := config.Default()
		if err := cfg.ApplyArgs([]string{fmt.Sprint("env.num_envs=", g.envs), "agent.hidden=" + g.hidden}); err != nil {
			return err
		}
		// Iterations worth about 60 GFLOP of updates (a second or so), and
		// at least 4, whatever the size.
		iters := max(4, int(math.Ceil(60e9/trainer.UpdateFLOPs(cfg, cartObs, cartAct))))
		if quick {
			iters = 2
		}
		sps, gflops, err := b.scaled(runs, trainer.UpdateFLOPs(cfg, cartObs, cartAct),
			fmt.Sprint("env.num_envs=", g.envs), "agent.hidden="+g.hidden, fmt.Sprint("ppo.total_timesteps=", iters*cfg.BatchSize()))
		if err != nil {
			return err
		}
		grid = append(grid, scaled{g.envs, g.hidden, sps, gflops})
	}
	// MinAtar's preset: the convolutional network (8 iterations, about
	// 180 GFLOP of updates: the first update, which also sizes the
	// network's buffers, weighs less).
	minatar, err := config.Resolve("", []string{minatarID})
	if err != nil {
		return err
	}
	iters := 8
	if quick {
		iters = 2
	}
	minObs, minAct, err := spacesOf(minatar.Env.ID)
	if err != nil {
		return err
	}
	minatarSPS, minatarGFLOPS, err := b.scaled(runs, trainer.UpdateFLOPs(minatar, minObs, minAct),
		minatarID, fmt.Sprint("ppo.total_timesteps=", iters*minatar.BatchSize()))
	if err != nil {
		return err
	}
	fmt.Fprintln(b.progress)

	fmt.Fprintf(w, "%s bench · %s · %d cores · %s kernels · %d run(s) per figure%s\n\n", cmdutil.Prog,
		cpuModel(), runtime.GOMAXPROCS(0), gpu.KernelSet(), runs, map[bool]string{true: " · QUICK: not a measurement"}[quick])
	fmt.Fprintf(w, "float32 peak (register-only multiply-add loops, best rate over %v): 1 core %.1f GFLOP/s, %d cores %.1f GFLOP/s (%s)\n\n",
		peakTime, peak1.GFLOPS, peakAll.Cores, peakAll.GFLOPS, peakAll.Loop)

	fmt.Fprintf(w, "CleanRL CartPole-v1 (4 envs × 128 steps, 4 epochs × 4 minibatches, 64-64 tanh), %s steps, seed(s) 1–%d, whole process:\n", progress.Thousands(float64(steps)), runs)
	col := func(name string, xs []float64, format func(float64) string) {
		s := summarize(xs)
		fmt.Fprintf(w, "  %-22s %12s %12s %12s\n", name, format(s.median), format(s.lo), format(s.hi))
	}
	fixed := func(digits int) func(float64) string {
		return func(v float64) string { return strconv.FormatFloat(v, 'f', digits, 64) }
	}
	fmt.Fprintf(w, "  %-22s %12s %12s %12s\n", "", "median", "min", "max")
	var walls, sps, rss []float64
	for _, r := range cleanRuns {
		walls = append(walls, r.wall.Seconds())
		sps = append(sps, r.sps())
		rss = append(rss, float64(r.rssBytes)/(1<<20))
	}
	col("wall seconds", walls, fixed(2))
	col("env steps/s", sps, progress.Thousands)
	if rss[0] > 0 {
		col("peak RSS (MiB)", rss, fixed(1))
	}
	fmt.Fprintln(w, "\nTraining seconds (time_s) until ep_return_mean ≥ 475, same runs:")
	for i, r := range cleanRuns[:min(3, len(cleanRuns))] {
		if s, step, ok := r.solvedAfter(); ok {
			fmt.Fprintf(w, "  seed %d  %.2f s (step %s)\n", i+1, s, progress.Thousands(float64(step)))
		} else {
			fmt.Fprintf(w, "  seed %d  not reached in %d steps (last ep_return_mean %.1f)\n", i+1, r.last().Step, float64(r.last().EpReturnMean))
		}
	}

	fmt.Fprintf(w, "\nScaling (CartPole-v1, CleanRL settings otherwise); update rate against the %d-core peak of %.1f GFLOP/s:\n", peakAll.Cores, peakAll.GFLOPS)
	fmt.Fprintf(w, "  %-9s %-10s %-30s %-26s %s\n", "num_envs", "hidden", "env steps/s median (min–max)", "update GFLOP/s (min–max)", "% of peak")
	rates := func(sps, gflops summary) string {
		return fmt.Sprintf("%-30s %-26s %.0f %%",
			fmt.Sprintf("%s (%s–%s)", progress.Thousands(sps.median), progress.Thousands(sps.lo), progress.Thousands(sps.hi)),
			fmt.Sprintf("%.1f (%.1f–%.1f)", gflops.median, gflops.lo, gflops.hi),
			100*gflops.median/peakAll.GFLOPS)
	}
	for _, g := range grid {
		fmt.Fprintf(w, "  %-9d %-10s %s\n", g.envs, g.hidden, rates(g.sps, g.gflops))
	}
	fmt.Fprintf(w, "\n%s with its preset (cnn: a 3×3 convolution of 16 channels, 128 hidden; %d envs × %d steps, %d epochs × %d minibatches):\n",
		minatarID[len("env.id="):], minatar.Env.NumEnvs, minatar.PPO.NumSteps, minatar.PPO.UpdateEpochs, minatar.PPO.NumMinibatches)
	fmt.Fprintf(w, "  %-20s %-30s %-26s %s\n", "", "env steps/s median (min–max)", "update GFLOP/s (min–max)", "% of peak")
	fmt.Fprintf(w, "  %-20s %s\n", "convolutional agent", rates(minatarSPS, minatarGFLOPS))
	return nil
}

// minatarID picks the MinAtar game whose preset bench measures.
const minatarID = "env.id=MinAtar/Breakout-v1"

// scaled trains runs times with overrides (no checkpoints), each update
// being flops of work, and summarizes env steps/s and update GFLOP/s.
func (b *bench) scaled(runs int, flops float64, overrides ...string) (sps, gflops summary, err error) {
	var s, g []float64
	for i := 0; i < runs; i++ {
		r, err := b.train(append(overrides, "trainer.save_freq=0")...)
		if err != nil {
			return summary{}, summary{}, err
		}
		s = append(s, r.sps())
		g = append(g, r.updateRate(flops))
	}
	return summarize(s), summarize(g), nil
}

// spacesOf are an environment's spaces, which size its agent's work.
func spacesOf(id string) (obs, act envs.Space, err error) {
	e, err := envs.Make(id, nil)
	if err != nil {
		return obs, act, err
	}
	return e.ObservationSpace(), e.ActionSpace(), nil
}

// cpuModel names the processor where Linux says.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
