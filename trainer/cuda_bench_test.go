//go:build cuda

package trainer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// BenchmarkDevices measures PPO on CartPole-v1 (CleanRL's defaults: 128
// steps per env, 4 epochs × 4 minibatches) on the CPU and on GPU 0, for
// num_envs 4, 64, 1024, 4096 and hidden [64,64] and [256,256], and prints a
// table: training steps/s (rollout and update, after a first warm-up
// iteration) and the time of one PPO update (upload of the batch, 16
// minibatch steps, statistics back on the host). Run it once per config:
//
//	go test -tags cuda -run '^$' -bench Devices -benchtime 1x -timeout 30m ./trainer
//
// BENCH_TIME (a Go duration, default 3s) is how long each config trains
// after its first iteration; BENCH_ENVS and BENCH_HIDDEN narrow the grid
// (e.g. BENCH_ENVS=4,4096 BENCH_HIDDEN=256).
func BenchmarkDevices(b *testing.B) {
	budget := 3 * time.Second
	if s := os.Getenv("BENCH_TIME"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("BENCH_TIME: %v", err)
		}
		budget = d
	}
	envCounts := benchList(b, "BENCH_ENVS", []int{4, 64, 1024, 4096})
	widths := benchList(b, "BENCH_HIDDEN", []int{64, 256})
	type key struct {
		dev   string
		envs  int
		width int
	}
	results := map[key]benchResult{}
	names := map[string]string{}
	for _, w := range widths {
		for _, n := range envCounts {
			for _, dev := range []string{"cpu", "cuda"} {
				k := key{dev, n, w}
				b.Run(fmt.Sprintf("%s/envs=%d/hidden=%dx%d", dev, n, w, w), func(b *testing.B) {
					if _, done := results[k]; done {
						return // run once whatever b.N is
					}
					r, err := benchConfig(dev, n, []int{w, w}, budget)
					if err != nil {
						names[dev] = "not available: " + err.Error()
						b.Skip(err)
					}
					results[k] = r
					names[dev] = r.device
					b.ReportMetric(r.sps, "steps/s")
					b.ReportMetric(r.updateMS, "ms/update")
				})
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\nPPO on CartPole-v1, 128 steps per env, 4 epochs × 4 minibatches, %d logical CPUs\n", runtime.NumCPU())
	fmt.Fprintf(&out, "CPU: %s\nGPU: %s\n\n", names["cpu"], names["cuda"])
	fmt.Fprintln(&out, "| hidden | num_envs | batch | CPU steps/s | GPU steps/s | GPU/CPU | CPU ms/update | GPU ms/update | GPU/CPU (update) |")
	fmt.Fprintln(&out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, w := range widths {
		for _, n := range envCounts {
			c, cok := results[key{"cpu", n, w}]
			g, gok := results[key{"cuda", n, w}]
			cell := func(ok bool, v float64, format string) string {
				if !ok {
					return "-"
				}
				return fmt.Sprintf(format, v)
			}
			fmt.Fprintf(&out, "| [%d,%d] | %d | %d | %s | %s | %s | %s | %s | %s |\n", w, w, n, n*128,
				cell(cok, c.sps, "%.0f"), cell(gok, g.sps, "%.0f"), cell(cok && gok, g.sps/c.sps, "%.3g×"),
				cell(cok, c.updateMS, "%.1f"), cell(gok, g.updateMS, "%.1f"), cell(cok && gok, c.updateMS/g.updateMS, "%.3g×"))
		}
	}
	fmt.Print(out.String())
	if path := os.Getenv("BENCH_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func benchList(b *testing.B, env string, def []int) []int {
	s := os.Getenv(env)
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a comma-separated list of positive integers", env, s)
		}
		out = append(out, n)
	}
	return out
}

type benchResult struct {
	device   string
	sps      float64 // training steps/s after the first iteration
	updateMS float64 // one PPO update
}

func openBenchDevice(dev string) (gpu.Device, func(), error) {
	if dev == "cpu" {
		c := gpu.NewCPU(0)
		return c, c.Close, nil
	}
	g, err := gpu.OpenCUDA(0)
	if err != nil {
		return nil, nil, err
	}
	return g, g.Close, nil
}

func benchConfig(dev string, nEnvs int, hidden []int, budget time.Duration) (benchResult, error) {
	d, closeDev, err := openBenchDevice(dev)
	if err != nil {
		return benchResult{}, err
	}
	defer closeDev()
	r := benchResult{device: d.Name()}
	cfg := config.Default()
	cfg.Env.ID = "CartPole-v1"
	cfg.Env.NumEnvs = nEnvs
	cfg.Agent.Params["hidden"] = hidden
	cfg.Trainer.SaveFreq = 0
	dir, err := os.MkdirTemp("", "agenttrainer-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	cfg.Trainer.RunsDir = dir
	cfg.PPO.TotalTimesteps = 1 << 40 // stopped below
	tr, err := trainer.New(cfg, trainer.Options{Device: d, RunDir: dir + "/run"})
	if err != nil {
		return r, err
	}
	events, unsubscribe := tr.Subscribe(1 << 12)
	defer unsubscribe()
	var first, last trainer.Metrics
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		var since time.Time
		for e := range events {
			if e.Kind != trainer.EventMetrics {
				continue
			}
			last = e.Metrics
			if e.Metrics.Iter == 1 {
				first, since = e.Metrics, time.Now()
			} else if e.Metrics.Iter >= 2 && time.Since(since) >= budget {
				tr.Stop()
			}
		}
	}()
	if _, err := tr.Run(context.Background()); err != nil {
		return r, err
	}
	<-watched
	if last.Iter >= 2 {
		r.sps = float64(last.Step-first.Step) / float64(last.TimeS-first.TimeS)
	} else {
		r.sps = float64(last.SPS)
	}
	r.updateMS, err = timeUpdate(d, cfg, budget)
	return r, err
}

// timeUpdate times trainer.update's work for one batch of the config: the
// batch goes to the device, then update_epochs × num_minibatches steps of
// gather, forward, losses, backward, clipping and Adam, then the
// statistics come back. It mirrors trainer/ppo.go's update.
func timeUpdate(d gpu.Device, cfg config.Config, budget time.Duration) (float64, error) {
	c := cfg.PPO
	nEnvs := cfg.Env.NumEnvs
	n := nEnvs * c.NumSteps
	obsSpace, actSpace := envs.Space{Kind: envs.Box, Dim: 4}, envs.Space{Kind: envs.Discrete, N: 2}
	a, err := agents.NewActorCritic(agents.Build{Obs: obsSpace, Act: actSpace, Config: cfg.Agent.Params, Device: d, RNG: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		return 0, err
	}
	r := rand.New(rand.NewPCG(2, 2))
	host := func(cols int, f func(i int) float64) []float32 {
		s := make([]float32, n*cols)
		for i := range s {
			s[i] = float32(f(i))
		}
		return s
	}
	obsH := host(4, func(int) float64 { return r.NormFloat64() })
	actH := host(1, func(int) float64 { return float64(r.IntN(2)) })
	logpH := host(1, func(int) float64 { return -0.69 + 0.05*r.NormFloat64() })
	advH := host(1, func(int) float64 { return r.NormFloat64() })
	retH := host(1, func(int) float64 { return 10 * r.Float64() })
	valH := host(1, func(int) float64 { return 10 * r.Float64() })
	obs, acts, logp, adv, ret, vals := d.Alloc(n, 4), d.Alloc(n, 1), d.Alloc(n, 1), d.Alloc(n, 1), d.Alloc(n, 1), d.Alloc(n, 1)
	mbSize := n / c.NumMinibatches
	mObs, mActs, mLogp := d.Alloc(mbSize, 4), d.Alloc(mbSize, 1), d.Alloc(mbSize, 1)
	mAdv, mRet, mVals := d.Alloc(mbSize, 1), d.Alloc(mbSize, 1), d.Alloc(mbSize, 1)
	stats := d.Alloc(1, gpu.NumStats)
	m, v := d.Alloc(1, a.Params().Len()), d.Alloc(1, a.Params().Len())
	indices := make([]int32, n)
	hostStats := make([]float32, gpu.NumStats)
	step := 0
	update := func() {
		d.Upload(obs, obsH)
		d.Upload(acts, actH)
		d.Upload(logp, logpH)
		d.Upload(adv, advH)
		d.Upload(ret, retH)
		d.Upload(vals, valH)
		d.Fill(stats, 0)
		for i := range indices {
			indices[i] = int32(i)
		}
		for epoch := 0; epoch < c.UpdateEpochs; epoch++ {
			r.Shuffle(n, func(i, j int) { indices[i], indices[j] = indices[j], indices[i] })
			for start := 0; start < n; start += mbSize {
				idx := indices[start : start+mbSize]
				d.GatherRows(mObs, obs, idx)
				d.GatherRows(mActs, acts, idx)
				d.GatherRows(mLogp, logp, idx)
				d.GatherRows(mAdv, adv, idx)
				d.GatherRows(mRet, ret, idx)
				d.GatherRows(mVals, vals, idx)
				a.Gradients(mObs, gpu.PPOPolicyArgs{Actions: mActs, OldLogp: mLogp, Adv: mAdv,
					ClipCoef: float32(c.ClipCoef), EntCoef: float32(c.EntCoef), NormAdv: c.NormAdv, Stats: stats},
					&gpu.ValueArgs{OldValue: mVals, Returns: mRet,
						ClipCoef: float32(c.ClipCoef), Clip: c.ClipVLoss, VFCoef: float32(c.VFCoef), Stats: stats})
				d.ClipGradNorm(a.Grads(), float32(c.MaxGradNorm), stats)
				step++
				d.Adam(a.Params(), a.Grads(), m, v, gpu.AdamArgs{LR: float32(c.LearningRate), Beta1: 0.9, Beta2: 0.999, Eps: 1e-5, Step: step})
			}
		}
		d.Download(hostStats, stats)
	}
	start := time.Now()
	update() // warm-up: buffers sized, kernels and cuBLAS paths loaded
	if w := time.Since(start); w > budget {
		return w.Seconds() * 1000, nil // slow enough that first-call costs do not matter
	}
	start, reps := time.Now(), 0
	for reps < 1 || (time.Since(start) < budget/3 && reps < 20) {
		update()
		reps++
	}
	return time.Since(start).Seconds() * 1000 / float64(reps), nil
}
