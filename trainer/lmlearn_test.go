package trainer

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// vowelEnv pays the fraction of an answer's characters that are vowels:
// a task a from-scratch model can learn in seconds, so that a test can
// see the loss push the policy the right way.
type vowelEnv struct{}

func (vowelEnv) Reset(envs.Params) (string, text.Info, error) { return "Say vowels.", nil, nil }
func (vowelEnv) Step(a string) (string, float64, bool, text.Info, error) {
	if a == "" {
		return "", 0, true, nil, nil
	}
	n := 0
	for _, r := range a {
		if strings.ContainsRune("aeiou", r) {
			n++
		}
	}
	return "", float64(n) / float64(len([]rune(a))), true, nil, nil
}

func init() {
	text.Register(text.Spec{ID: "VowelText-v0", Description: "test: pays the vowels of an answer", Agent: "single_turn", MaxTurns: 1,
		Columns: []string{"id"}, New: func(envs.Params) (text.Env, error) { return vowelEnv{}, nil }})
}

// Every estimator and loss learns: on a task whose reward grows with the
// vowels of a short answer, the mean reward of the last iterations is well
// above that of the first (a random model's answers are about 5 % vowels).
func TestLMGRPOLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for a few seconds")
	}
	for _, c := range []struct {
		name      string
		overrides []string
	}{
		{"grpo", nil},
		{"drgrpo", []string{"algorithm.adv_estimator=drgrpo", "actor.loss_agg_mode=seq-mean-token-sum-norm"}},
		{"dapo", []string{"algorithm.filter_groups=true", "algorithm.max_num_gen_batches=2", "actor.clip_ratio_high=0.28"}},
		{"rloo", []string{"algorithm.adv_estimator=rloo", "actor.loss_agg_mode=seq-mean-token-mean"}},
		{"reinforce++", []string{"algorithm.adv_estimator=reinforce_plus_plus_baseline", "actor.use_kl_loss=true"}},
		{"kl in reward, two epochs", []string{"algorithm.use_kl_in_reward=true", "actor.ppo_epochs=2", "actor.ppo_mini_batch_size=16"}},
		// PPO proper: GAE with the value head on the trunk.
		{"gae", []string{"algorithm.adv_estimator=gae"}},
		{"gae, λ 0.95, two epochs", []string{"algorithm.adv_estimator=gae", "algorithm.lam=0.95", "actor.ppo_epochs=2", "actor.ppo_mini_batch_size=16"}},
		// One sample per task: GRPO's groups of one have no advantage, the
		// critic's baseline still gives one.
		{"gae, rollout.n 1", []string{"algorithm.adv_estimator=gae", "rollout.n=1", "data.train_batch_size=32"}},
	} {
		t.Run(c.name, func(t *testing.T) { learnVowels(t, c.overrides) })
	}
}

func learnVowels(t *testing.T, overrides []string) {
	cfg := lmConfig(t, append([]string{"env.id=VowelText-v0", "env.args={}", "data.train_batch_size=4", "rollout.n=8", "data.max_response_length=4",
		"trainer.total_training_steps=30", "trainer.test_freq=0", "ppo.learning_rate=3e-2", "ppo.anneal_lr=false", "actor.ppo_micro_batch_size=32",
		"agent.hidden_size=32", "agent.intermediate_size=64", "trainer.log_every_steps=0"}, overrides...)...)
	rows := []envs.Params{{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}}
	dir := filepath.Join(t.TempDir(), "run")
	tr, err := New(cfg, Options{RunDir: dir, Device: gpu.NewCPU(1), TrainTasks: rows})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var rewards, values, vfLoss []float64
	events, stop := tr.Subscribe(1 << 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range events {
			if e.Kind == EventMetrics {
				v, _ := e.Metrics.Value("reward")
				rewards = append(rewards, v)
				if v, ok := e.Metrics.Value("critic/values/mean"); ok {
					values = append(values, v)
				}
				if v, ok := e.Metrics.Value("critic/vf_loss"); ok {
					vfLoss = append(vfLoss, v)
				}
			}
		}
	}()
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	stop()
	if len(rewards) != 30 {
		t.Fatalf("%d metrics rows", len(rewards))
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	first, last := mean(rewards[:5]), mean(rewards[25:])
	t.Logf("reward: first 5 iterations %.3f, last 5 %.3f", first, last)
	if last < first+0.2 {
		t.Errorf("GRPO did not learn: reward %.3f in the first iterations, %.3f in the last", first, last)
	}
	if len(values) > 0 {
		// The value head learns too: its estimate before the update
		// follows the reward (every token's return, γ = 1) and its loss
		// falls.
		if len(values) != 30 || len(vfLoss) != 30 {
			t.Fatalf("%d value and %d value-loss figures in 30 rows", len(values), len(vfLoss))
		}
		v0, v1 := mean(values[:5]), mean(values[25:])
		l0, l1 := mean(vfLoss[:5]), mean(vfLoss[25:])
		t.Logf("value: first 5 iterations %.3f, last 5 %.3f; value loss %.4f → %.4f", v0, v1, l0, l1)
		if math.Abs(v1-last) > 0.15 || l1 > l0/2 {
			t.Errorf("the value head did not learn: value %.3f against reward %.3f at the end, loss %.4f → %.4f", v1, last, l0, l1)
		}
	}
}
