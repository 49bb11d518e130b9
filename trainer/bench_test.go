package trainer

import (
	"context"
	"fmt"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

func benchConfig(b *testing.B, envs int, hidden string) config.Config {
	cfg := config.Default()
	if err := cfg.ApplyArgs([]string{fmt.Sprint("env.num_envs=", envs), "agent.hidden=" + hidden,
		"trainer.device=cpu", "trainer.save_freq=0", "trainer.runs_dir=" + b.TempDir()}); err != nil {
		b.Fatal(err)
	}
	return cfg
}

// BenchmarkPPOIteration measures one full iteration (rollout of 4×128 steps
// plus 4 epochs × 4 minibatches of updates) of the default CartPole config.
func BenchmarkPPOIteration(b *testing.B) {
	cfg := benchConfig(b, 4, "[64,64]")
	cfg.PPO.TotalTimesteps = int64(cfg.BatchSize()) * int64(b.N)
	t, err := New(cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := t.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cfg.BatchSize()*b.N)/b.Elapsed().Seconds(), "steps/s")
}

var scalingGrid = []struct {
	envs   int
	hidden string
}{{4, "[64,64]"}, {64, "[64,64]"}, {256, "[64,64]"}, {64, "[256,256]"}, {256, "[256,256]"}}

// BenchmarkScaling is end-to-end CartPole training throughput across
// environment counts and network widths (CleanRL's other settings).
func BenchmarkScaling(b *testing.B) {
	for _, g := range scalingGrid {
		b.Run(fmt.Sprintf("envs=%d/hidden=%s", g.envs, g.hidden), func(b *testing.B) {
			cfg := benchConfig(b, g.envs, g.hidden)
			cfg.PPO.TotalTimesteps = int64(cfg.BatchSize()) * int64(b.N)
			t, err := New(cfg, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			if _, err := t.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(cfg.BatchSize()*b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkUpdate times the update phase alone on a filled rollout and
// reports its arithmetic rate, to compare with gpu's BenchmarkFMAPeak: the
// CartPole MLPs of the scaling grid, and the MinAtar preset's CNN.
func BenchmarkUpdate(b *testing.B) {
	type setup struct {
		name string
		cfg  func(b *testing.B) config.Config
	}
	var setups []setup
	for _, g := range scalingGrid {
		setups = append(setups, setup{fmt.Sprintf("envs=%d/hidden=%s", g.envs, g.hidden),
			func(b *testing.B) config.Config { return benchConfig(b, g.envs, g.hidden) }})
	}
	setups = append(setups, setup{"MinAtar/Breakout-v1/preset", func(b *testing.B) config.Config {
		cfg, err := config.Resolve("", []string{"env.id=\"MinAtar/Breakout-v1\"", "trainer.device=cpu", "trainer.runs_dir=" + b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		return cfg
	}})
	for _, s := range setups {
		b.Run(s.name, func(b *testing.B) {
			cfg := s.cfg(b)
			t, p, _, batch, samples := filledRollout(b, cfg)
			var m Metrics
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t.update(batch, samples, &p.opt, 1e-4, &m)
			}
			b.ReportMetric(UpdateFLOPs(cfg, t.obsSpace, t.actSpace)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
