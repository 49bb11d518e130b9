package trainer

import (
	"context"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// BenchmarkPPOIteration measures one full iteration (rollout of 4×128 steps
// plus 4 epochs × 4 minibatches of updates) of the default CartPole config.
func BenchmarkPPOIteration(b *testing.B) {
	cfg := config.Default()
	cfg.PPO.TotalTimesteps = int64(cfg.BatchSize()) * int64(b.N)
	cfg.Trainer.RunsDir = b.TempDir()
	cfg.Trainer.SaveFreq = 0
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
