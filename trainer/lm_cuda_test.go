//go:build cuda

package trainer

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/internal/numtest"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// A few GRPO iterations of a tiny language model on the CUDA device (a GPU,
// or the CPU stand-in in CI) against the CPU device, from the same seed:
// the same episodes are sampled (sampling reads the logits on the host with
// per-sequence seeds, so devices agree unless a rounding difference flips a
// draw, which these tiny models make improbable), and every iteration's
// rewards, losses, entropy, KL and gradient norm agree, as do the final
// weights. PPO proper (gae) with its value head too: the critic's figures
// and the head's weights as well.
func TestCUDALMGRPOMatchesCPU(t *testing.T) {
	g, err := gpu.OpenCUDA(0)
	if err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	defer g.Close()
	c := gpu.NewCPU(1)
	defer c.Close()
	base := []string{"trainer.total_training_steps=3", "trainer.test_freq=0", "actor.use_kl_loss=true", "actor.entropy_coeff=0.01",
		"actor.ppo_epochs=2", "actor.ppo_mini_batch_size=3", "ppo.learning_rate=3e-3", "rollout.n=4", "data.train_batch_size=3"}
	names := []string{"reward", "completions/mean_length", "policy_loss", "entropy", "approx_kl", "grad_norm", "kl", "loss"}
	t.Run("grpo", func(t *testing.T) { lmMatchesCPU(t, c, g, lmConfig(t, base...), nil, names) })
	// The vowel task pays a random model something, so the critic learns.
	gae := append(append([]string{}, base...), "algorithm.adv_estimator=gae", "algorithm.lam=0.95", "env.id=VowelText-v0", "env.args={}")
	t.Run("gae", func(t *testing.T) {
		lmMatchesCPU(t, c, g, lmConfig(t, gae...), []envs.Params{{"id": 1}, {"id": 2}, {"id": 3}}, append(names, "critic/vf_loss", "critic/vpred_mean", "critic/values/mean", "critic/grad_norm"))
	})
}

func lmMatchesCPU(t *testing.T, c, g gpu.Device, cfg config.Config, tasks []envs.Params, names []string) {
	var rows [2][]runstore.Metrics
	var params [2][]float32
	for i, dev := range []gpu.Device{c, g} {
		dir := filepath.Join(t.TempDir(), "run")
		tr, err := New(cfg, Options{RunDir: dir, Device: dev, TrainTasks: tasks})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		m := tr.lmr.pol.Model
		params[i] = make([]float32, m.Params.Len())
		dev.Download(params[i], m.Params)
		if v := tr.lmr.value; v != nil {
			head := make([]float32, v.Len())
			dev.Download(head, v.Params)
			params[i] = append(params[i], head...)
		}
		tr.Close()
		if rows[i], err = runstore.ReadMetrics(dir); err != nil {
			t.Fatal(err)
		}
	}
	if len(rows[0]) != 3 || len(rows[1]) != 3 {
		t.Fatalf("%d and %d rows", len(rows[0]), len(rows[1]))
	}
	const tol = 2e-3
	worst := 0.0
	for it := range rows[0] {
		for _, name := range names {
			a, _ := rows[0][it].Value(name)
			b, _ := rows[1][it].Value(name)
			d := math.Abs(a-b) / math.Max(math.Abs(a), 1e-3)
			worst = math.Max(worst, d)
			if !(d <= tol) {
				t.Errorf("iteration %d %s: cpu %v, cuda %v", it+1, name, a, b)
			}
		}
	}
	e, at := numtest.RelErr(params[1], params[0])
	t.Logf("%s on CUDA vs CPU: metrics max relative error %.2g, weights %.2g (at %d)", cfg.Algorithm.AdvEstimator, worst, e, at)
	if e > tol {
		t.Errorf("final weights differ by %.3g", e)
	}
}
