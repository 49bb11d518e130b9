package trainer

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"

	"github.com/agenttrainer/agenttrainer/agents/lm/textagent"
	"github.com/agenttrainer/agenttrainer/trainer/lmrl"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// gaeEpisode is an episode of one trajectory whose steps earned rewards,
// laid out in rows (each with its mask and its segments' steps).
func gaeEpisode(stepRewards []float64, rows ...textrl.Row) *textrl.Episode {
	traj := &textagent.Trajectory{}
	for _, r := range stepRewards {
		traj.Steps = append(traj.Steps, &textagent.Step{Reward: r})
		traj.Reward += r
	}
	for i := range rows {
		rows[i].PromptIDs = []int{1}
		rows[i].ResponseIDs = make([]int, len(rows[i].Mask))
		rows[i].LogProbs = make([]float32, len(rows[i].Mask))
		for j := range rows[i].LogProbs {
			rows[i].ResponseIDs[j] = 2 + j
			rows[i].LogProbs[j] = -1
		}
	}
	return &textrl.Episode{Trajectories: []*textagent.Trajectory{traj}, Rows: rows}
}

// The trainer's GAE: where rewards sit (the episode's last trained token,
// or each step's answer), episodes split over rows chained into one
// sequence, environment tokens skipped, the in-reward KL per token; the
// returns are checked against hand-computed values, the advantages for
// whitening (mean 0, unbiased std 1 over the trained tokens, 0 elsewhere).
func TestGAEAdvantagesInTheLoop(t *testing.T) {
	// Episode A: two answers in one row with an environment token between
	// (steps earn 0.5 and 1); values 0.2, 0.4, (env), 0.6.
	// Episode B: one answer of two tokens, reward 0; values 0.1, −0.1.
	// Episode C: two rows (a prefix mismatch), steps earn 0 and 1; values 0.5.
	episodes := func() [][]*textrl.Episode {
		return [][]*textrl.Episode{{
			gaeEpisode([]float64{0.5, 1}, textrl.Row{Steps: []int{0, 1}, Mask: []uint8{1, 1, 0, 1}}),
			gaeEpisode([]float64{0}, textrl.Row{Steps: []int{0}, Mask: []uint8{1, 1}}),
		}, {
			gaeEpisode([]float64{0, 1}, textrl.Row{Steps: []int{0}, Mask: []uint8{1, 1}}, textrl.Row{Steps: []int{1}, Mask: []uint8{1}}),
		}}
	}
	values := [][]float32{{0.2, 0.4, 9, 0.6}, {0.1, -0.1}, {0.5, 0.5}, {0.5}}
	cases := []struct {
		name      string
		overrides []string
		kl        bool
		ret       [][]float64 // per sequence, per response token
	}{
		// γ = λ = 1: every token's return is the rewards after it.
		{"broadcast", nil, false, [][]float64{{1.5, 1.5, 0, 1.5}, {0, 0}, {1, 1}, {1}}},
		{"per_step", []string{"algorithm.stepwise_advantage=per_step"}, false, [][]float64{{1.5, 1.5, 0, 1}, {0, 0}, {1, 1}, {1}}},
		// γ = 0.5 (λ = 1: the discounted returns): C's first row bootstraps from its second (returns
		// 0.25, 0.5, 1); A's tokens 1.5·¼, 1.5·½, 1.5.
		{"discounted", []string{"algorithm.gamma=0.5"}, false, [][]float64{{0.375, 0.75, 0, 1.5}, {0, 0}, {0.25, 0.5}, {1}}},
		// k1 KL 0.5 on every token of logp −1 against ref −1.5, coefficient
		// 0.1: each token's reward loses 0.05.
		{"kl in reward", []string{"algorithm.use_kl_in_reward=true", "algorithm.kl_coef=0.1"}, true, [][]float64{{1.35, 1.4, 0, 1.45}, {-0.1, -0.05}, {0.85, 0.9}, {0.95}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			groups := episodes()
			seqs, owner := buildSeqs(groups)
			if len(seqs) != 4 {
				t.Fatalf("%d sequences", len(seqs))
			}
			for i, s := range seqs {
				s.values = values[i]
				if c.kl {
					s.refLogp = make([]float32, len(s.mask))
					for j := range s.refLogp {
						s.refLogp[j] = -1.5
					}
				}
			}
			tr := &Trainer{cfg: lmConfig(t, append([]string{"algorithm.adv_estimator=gae"}, c.overrides...)...)}
			var kl float64
			if err := tr.assignAdvantages(groups, seqs, owner, &kl); err != nil {
				t.Fatal(err)
			}
			var adv []float64
			for i, s := range seqs {
				for j, want := range c.ret[i] {
					if math.Abs(s.ret[j]-want) > 1e-6 {
						t.Fatalf("sequence %d returns %v, want %v", i, s.ret, c.ret[i])
					}
					if s.mask[j] == 1 {
						adv = append(adv, s.adv[j])
					} else if s.adv[j] != 0 {
						t.Fatalf("sequence %d: an environment token's advantage is %g", i, s.adv[j])
					}
				}
			}
			mean, std := lmrl.MeanStd(adv)
			if math.Abs(mean) > 1e-6 || math.Abs(std-1) > 1e-6 {
				t.Fatalf("advantages %v: mean %g, std %g after whitening", adv, mean, std)
			}
			if c.kl && math.Abs(kl-0.5*8/4) > 1e-6 { // 8 tokens of KL 0.5 over 4 sequences
				t.Fatalf("critic/kl_in_reward %g, want 1", kl)
			}
		})
	}
}

// A gae run keeps its value head: the checkpoint and model/ hold it, a
// resumed run continues from it, and a new run given model/ as agent.model
// starts from it; the critic's figures reach metrics.jsonl.
func TestLMGAEResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	// The vowel task pays something from the start (arithmetic would pay
	// a random model 0 everywhere, leaving nothing for the critic to learn).
	gae := []string{"env.id=VowelText-v0", "env.args={}", "algorithm.adv_estimator=gae", "algorithm.lam=0.9", "critic.lr=0.01", "trainer.test_freq=0"}
	rows := []envs.Params{{"id": 1}, {"id": 2}}
	tr, err := New(lmConfig(t, gae...), Options{RunDir: dir, Device: gpu.NewCPU(1), TrainTasks: rows})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	head := func(tr *Trainer) []float32 {
		v := tr.lmr.value
		out := make([]float32, v.Len())
		tr.dev.Download(out, v.Params)
		return out
	}
	trained := head(tr)
	tr.Close()
	if slices.Equal(trained, make([]float32, len(trained))) {
		t.Fatal("two iterations left the value head at 0")
	}
	ms, err := runstore.ReadMetrics(dir)
	if err != nil || len(ms) != 2 {
		t.Fatalf("metrics: %v, %d rows", err, len(ms))
	}
	for _, name := range []string{"critic/vf_loss", "critic/vf_clipfrac", "critic/vpred_mean", "critic/returns/mean", "critic/values/mean", "critic/grad_norm", "value_loss", "timing_s/values"} {
		if v, ok := ms[1].Value(name); !ok || math.IsNaN(v) {
			t.Errorf("the last row lacks %s (%v)", name, v)
		}
	}
	if _, ok := ms[1].Value("critic/vf_explained_var"); !ok {
		t.Error("the last row lacks critic/vf_explained_var")
	}
	tr2, err := Resume(dir, []string{"trainer.total_training_steps=3"}, Options{Device: gpu.NewCPU(1), TrainTasks: rows})
	if err != nil {
		t.Fatal(err)
	}
	if got := head(tr2); !slices.Equal(got, trained) {
		t.Fatalf("the resumed value head %v is not the trained one %v", got[:3], trained[:3])
	}
	if sum, err := tr2.Run(context.Background()); err != nil || sum.Iterations != 3 {
		t.Fatalf("resumed run: %v, %+v", err, sum)
	}
	resumed := head(tr2)
	tr2.Close()
	fresh, err := New(lmConfig(t, append(gae, "agent.model="+filepath.Join(dir, "model"))...),
		Options{RunDir: filepath.Join(t.TempDir(), "run2"), Device: gpu.NewCPU(1), TrainTasks: rows})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got := head(fresh); !slices.Equal(got, resumed) {
		t.Fatalf("a run from model/ starts with value head %v, not the saved %v", got[:3], resumed[:3])
	}
}
