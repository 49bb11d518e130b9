package trainer

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/frozenlake"
	"github.com/agenttrainer/agenttrainer/envs/tasks"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

func TestGroupAdvantages(t *testing.T) {
	returns := []float64{1, 0, 0, 1, 2, 2, 2, 2}
	tests := []struct {
		estimator string
		want      []float64
	}{
		// GRPO: (r − mean)/(std + 1e-6) with the unbiased std (≈0.5774 in group one).
		{"grpo", []float64{0.866025, -0.866025, -0.866025, 0.866025, 0, 0, 0, 0}},
		// RLOO: r minus the mean of the other three.
		{"rloo", []float64{2.0 / 3, -2.0 / 3, -2.0 / 3, 2.0 / 3, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		adv := make([]float32, len(returns))
		groupAdvantages(returns, 4, tc.estimator, adv)
		for i, w := range tc.want {
			if math.Abs(float64(adv[i])-w) > 1e-5 {
				t.Errorf("%s: advantage[%d] = %v, want %v", tc.estimator, i, adv[i], w)
			}
		}
	}
}

// TestGroupedFrozenLakeWithValidation trains briefly with GRPO on task
// files: no critic parameters are saved, every record carries the
// validation figures, and episode steps (not padded rows) are counted.
func TestGroupedFrozenLakeWithValidation(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, seed int64, exclude []envs.Params) ([]envs.Params, string) {
		rows, err := frozenlake.GenerateFrozenLakeTasks(frozenlake.FrozenLakeTaskOptions{N: 20, Size: 4, P: 0.8, MaxSteps: 30, Seed: seed, Exclude: exclude})
		if err != nil {
			t.Fatal(err)
		}
		f, _ := os.Create(filepath.Join(dir, name))
		defer f.Close()
		if err := tasks.WriteTasks(f, "jsonl", []string{"seed", "size", "p", "is_slippery", "max_steps"}, rows); err != nil {
			t.Fatal(err)
		}
		return rows, f.Name()
	}
	trainRows, trainFile := write("train.jsonl", 1, nil)
	_, valFile := write("val.jsonl", 2, trainRows)
	cfg := testConfig(t, "env.id=FrozenLake-v1", `data.train_files=["`+trainFile+`"]`, `data.val_files=["`+valFile+`"]`,
		"ppo.adv_estimator=grpo", "ppo.group_size=4", "env.num_envs=8", "ppo.num_steps=30", "ppo.total_timesteps=3000", "trainer.test_freq=2")
	sum, recs := train(t, cfg, filepath.Join(dir, "run"))
	if sum.Last.Step < 3000 || sum.Last.Step > 3000+8*30 {
		t.Fatalf("stopped at step %d for total_timesteps 3000", sum.Last.Step)
	}
	validated := 0
	for _, r := range recs {
		if r["value_loss"] != nil || r["explained_variance"] != nil {
			t.Fatalf("a run without a critic reports value figures: %v", r)
		}
		if v, ok := r["val_success_rate"].(float64); ok {
			validated++
			if v < 0 || v > 1 {
				t.Fatalf("val_success_rate %v", v)
			}
		}
	}
	if validated < len(recs)/2 {
		t.Fatalf("%d of %d records validated with test_freq 2", validated, len(recs))
	}
	tensors, _, err := runstore.ReadSafetensors(sum.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tensors["critic.0.weight"]; ok {
		t.Fatal("a GRPO agent saved a critic")
	}
}

// TestGroupedShortEpisodesSkipUpdates: GRPO keeps only the steps inside
// episodes, so FrozenLake's short ones leave some iterations fewer samples
// than minibatches. Such an update is skipped — its losses undefined, said
// once in the log — and the run trains to the end (it used to die with "the
// policy loss became NaN").
func TestGroupedShortEpisodesSkipUpdates(t *testing.T) {
	cfg := testConfig(t, "env.id=FrozenLake-v1", "ppo.adv_estimator=grpo", "env.num_envs=4", "ppo.num_steps=16",
		"ppo.num_minibatches=16", "ppo.total_timesteps=3000", "trainer.log_every_steps=0")
	dir := t.TempDir()
	tr, err := New(cfg, Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := tr.Subscribe(1 << 16)
	sum, err := tr.Run(context.Background())
	if err != nil || sum.State != StateDone || sum.Last.Step < 3000 {
		t.Fatalf("run ended %v at step %d: %v", sum.State, sum.Last.Step, err)
	}
	said := 0
	for e := range events {
		if strings.Contains(e.Message, "minibatches, so its update is skipped") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the skipped update was said %d times, want once", said)
	}
	skipped, trained := 0, 0
	for _, r := range readRecords(t, filepath.Join(dir, runstore.MetricsFile)) {
		switch loss := r["policy_loss"].(type) {
		case nil:
			skipped++
			if r["entropy"] != nil || r["grad_norm"] != nil {
				t.Errorf("iteration %v: a skipped update with figures %v, %v", r["iter"], r["entropy"], r["grad_norm"])
			}
		case float64:
			trained++
			if math.IsNaN(loss) {
				t.Errorf("iteration %v: policy loss %v", r["iter"], loss)
			}
		}
	}
	if skipped == 0 || trained == 0 {
		t.Errorf("%d iterations skipped their update and %d trained; this configuration should give both", skipped, trained)
	}
}
