package trainer

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/textagent"
	"github.com/agenttrainer/agenttrainer/agents/lmagent"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/internal/numtest"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/lmrl"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// lmConfig is a tiny language-model run on 1-digit addition (short
// prompts, one turn), quick on a loaded CPU.
func lmConfig(t testing.TB, overrides ...string) config.Config {
	t.Helper()
	cfg := config.Default()
	base := []string{"env.id=Arithmetic-v0", "agent.name=lm", "trainer.device=cpu", "trainer.threads=1",
		"agent.hidden_size=16", "agent.intermediate_size=32", "agent.num_attention_heads=2", "agent.num_key_value_heads=1", "agent.num_hidden_layers=1",
		"data.train_batch_size=2", "rollout.n=3", "data.max_response_length=6", "data.max_prompt_length=256",
		"trainer.total_training_steps=2", "trainer.test_freq=2", "data.val_batch_size=2", "rollout.val_n=2", "rollout.val_temperature=1.0",
		"env.args={digits=1}", "trainer.save_interval_s=0"}
	if err := cfg.ApplyArgs(append(base, overrides...)); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestLMRefusesMismatchedEnvAndAgent(t *testing.T) {
	for _, c := range []struct {
		overrides []string
		key, want string
	}{
		{[]string{"env.id=CartPole-v1"}, "env.id", "text environments"},
		{[]string{"agent.name=mlp"}, "agent.name", "needs a language model"},
		{[]string{"agent.hidden_size=30", "agent.num_attention_heads=4"}, "agent.hidden_size", "multiple"},
		{[]string{"data.max_prompt_length=5000"}, "data.max_prompt_length", "context"},
	} {
		_, err := New(lmConfig(t, c.overrides...), Options{})
		var ce *config.Error
		if err == nil || !errors.As(err, &ce) || ce.Key != c.key || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a config error on %s saying %q", c.overrides, err, c.key, c.want)
		}
	}
	// The agent itself refuses numeric observations, for callers of agents.New.
	if _, err := agents.New(lmagent.Name, agents.Build{}); err == nil || !strings.Contains(err.Error(), "text environments") {
		t.Errorf("agents.New(lm) on numbers: %v", err)
	}
}

// TestLMTrainResume trains two iterations, checks what the run directory
// holds, then resumes it for a third.
func TestLMTrainResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg := lmConfig(t, "algorithm.adv_estimator=rloo", "actor.use_kl_loss=true", "actor.entropy_coeff=0.01", "actor.ppo_mini_batch_size=3", "actor.ppo_micro_batch_size=2")
	tr, err := New(cfg, Options{RunDir: dir, Device: gpu.NewCPU(1)})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := tr.Run(context.Background())
	tr.Close()
	if err != nil || sum.State != StateDone || sum.Iterations != 2 {
		t.Fatalf("run: %v, %+v", err, sum)
	}
	ms, err := runstore.ReadMetrics(dir)
	if err != nil || len(ms) != 2 {
		t.Fatalf("metrics: %v, %d rows", err, len(ms))
	}
	for _, name := range []string{"reward", "frac_reward_zero_std", "completions/mean_length", "tokens_per_s/generation", "timing_s/update", "kl"} {
		if v, ok := ms[1].Value(name); !ok || math.IsNaN(v) {
			t.Errorf("the last row lacks %s (%v)", name, v)
		}
	}
	if v, ok := ms[1].Value("val/pass_at_k"); !ok || v < 0 || v > 1 {
		t.Errorf("the validating row's val/pass_at_k: %v %v", v, ok)
	}
	trs, err := runstore.ReadTranscripts(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Two iterations of one train group of 3, and one validation group of 2.
	splits := map[string]int{}
	for _, x := range trs {
		splits[x.Split]++
		if len(x.Messages) == 0 || x.Termination == "" {
			t.Errorf("a transcript without messages or termination: %+v", x)
		}
	}
	if splits["train"] != 6 || splits["val"] != 2 {
		t.Errorf("transcripts by split %v, want 6 train and 2 val", splits)
	}
	if _, err := os.Stat(filepath.Join(dir, "model", "config.json")); err != nil {
		t.Errorf("no model/ directory: %v", err)
	}
	// Resume for a third iteration.
	tr2, err := Resume(dir, []string{"trainer.total_training_steps=3"}, Options{Device: gpu.NewCPU(1)})
	if err != nil {
		t.Fatal(err)
	}
	sum, err = tr2.Run(context.Background())
	tr2.Close()
	if err != nil || sum.Iterations != 3 {
		t.Fatalf("resumed run: %v, %+v", err, sum)
	}
	if ms, _ = runstore.ReadMetrics(dir); len(ms) != 3 || ms[2].Iter != 3 {
		t.Errorf("after resuming: %d rows", len(ms))
	}
	// eval plays the validation tasks with the saved policy.
	var frames int
	res, err := Evaluate(context.Background(), dir, EvalOptions{Episodes: 2, Samples: 2, Frame: func(f Frame) error {
		frames++
		if !strings.Contains(f.Caption, "model: ") {
			t.Errorf("a frame without the model's words: %q", f.Caption)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Transcripts) != 4 || res.Samples != 2 || res.PassK < 0 || res.PassK > 1 || frames < 4 || !strings.HasSuffix(res.Checkpoint, "step-3.safetensors") {
		t.Errorf("eval: %d transcripts, samples %d, pass@k %v, %d frames, checkpoint %s", len(res.Transcripts), res.Samples, res.PassK, frames, res.Checkpoint)
	}
}

// TestLMLossGradient checks the loss's gradient through the model's
// backward pass against central differences of the loss, on the
// parameters with the largest gradients: clipped ratios kept away from
// their kinks, an entropy bonus and a k3 KL term to a reference; and with
// a value head (gae), the policy loss plus vf_coef times the clipped value
// loss, whose gradient reaches the trunk and the head.
func TestLMLossGradient(t *testing.T) {
	for _, withCritic := range []bool{false, true} {
		name := "policy"
		if withCritic {
			name = "policy and value"
		}
		t.Run(name, func(t *testing.T) { lmLossGradient(t, withCritic) })
	}
}

func lmLossGradient(t *testing.T, withCritic bool) {
	dev := gpu.NewCPU(1)
	c := agents.Config{}
	for _, k := range lmagent.Keys() {
		c[k.Name] = k.Default
	}
	c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"] = int64(8), int64(16), int64(1), int64(2), int64(1)
	pol, err := lmagent.Open(c, dev, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := pol.Model
	// Two rows: a prompt, two answer segments with environment tokens
	// (mask 0) between them.
	seqs := []*lmSeq{
		{ids: []int32{5, 6, 7, 8, 9, 10, 11, 12}, start: 3, mask: []uint8{1, 1, 0, 0, 1}},
		{ids: []int32{20, 21, 22, 23, 24}, start: 2, mask: []uint8{1, 0, 1}},
	}
	b := microBatch(seqs)
	pass, err := m.NewPass(batchTokens(b), batchTokens(b))
	if err != nil {
		t.Fatal(err)
	}
	var head *lm.ValueHead
	if withCritic {
		head = m.NewValueHead()
		w := make([]float32, m.Config.Hidden)
		for i := range w {
			w[i] = float32(math.Sin(float64(i)+0.5)) * 0.8
		}
		if err := head.Set(w, []float32{0.2}); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := pass.Forward(b, lm.ForwardOptions{Entropy: true, Values: head})
	if err != nil {
		t.Fatal(err)
	}
	idx := scoredIndex(seqs)
	for _, s := range seqs {
		s.oldLogp, s.refLogp, s.adv = make([]float32, len(s.mask)), make([]float32, len(s.mask)), make([]float64, len(s.mask))
		s.values, s.ret = make([]float32, len(s.mask)), make([]float64, len(s.mask))
	}
	for k, at := range idx {
		s := seqs[at[0]]
		off := 0.05 * float64(k%3-1) // ratios 0.95 … 1.05, inside the clip
		s.oldLogp[at[1]] = sc.LogProbs[k] - float32(off)
		s.refLogp[at[1]] = sc.LogProbs[k] - 0.3
		s.adv[at[1]] = []float64{1, -0.5, 0.7}[at[0]%2+k%2]
		if withCritic {
			// Old values 0.3 from the current ones, either way: token 0's
			// loss is the clipped term's (flat), the others' unclipped.
			s.values[at[1]] = sc.Values[k] + float32(0.3*float64(k%2*2-1))
			s.ret[at[1]] = float64(sc.Values[k]) + []float64{1.5, -0.7, 0.4}[k%3]
		}
	}
	loss := lmrl.Loss{ClipLow: 0.2, ClipHigh: 0.28, ClipC: 3, EntCoef: 0.05, KLCoef: 0.2, KLType: "k3", AggMode: "seq-mean-token-mean"}
	w, _ := loss.Weights([]int{seqs[0].scored(), seqs[1].scored()})
	critic := func(st *lmrl.ValueStats) *criticLoss {
		if !withCritic {
			return nil
		}
		vl := lmrl.ValueLoss{ClipRange: 0.2, AggMode: "token-mean"}
		vw, _ := lmrl.Loss{AggMode: vl.AggMode}.Weights([]int{seqs[0].scored(), seqs[1].scored()})
		return &criticLoss{head: head, loss: vl, coef: 0.5, w: vw, st: st}
	}
	m.ZeroGrad()
	var st lmrl.Stats
	var vst lmrl.ValueStats
	_, sg, err := microLoss(pass, b, seqs, w, loss, &st, critic(&vst))
	if err != nil {
		t.Fatal(err)
	}
	if withCritic && (vst.Tokens != 5 || vst.ClipFrac == 0 || vst.ClipFrac == vst.Tokens) {
		t.Fatalf("value stats %+v: want 5 tokens, some clipped, some not", vst)
	}
	if err := pass.BackwardScores(sg); err != nil {
		t.Fatal(err)
	}
	n := m.Params.Len()
	params, grads := make([]float32, n), make([]float32, n)
	dev.Download(params, m.Params)
	dev.Download(grads, m.Grads)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return math.Abs(float64(grads[order[a]])) > math.Abs(float64(grads[order[b]])) })
	pick := order[:24]
	x, g := make([]float64, len(pick)), make([]float32, len(pick))
	for i, j := range pick {
		x[i], g[i] = float64(params[j]), grads[j]
	}
	f := func() float64 {
		p := append([]float32(nil), params...)
		for i, j := range pick {
			p[j] = float32(x[i])
		}
		dev.Upload(m.Params, p)
		var st lmrl.Stats
		var vst lmrl.ValueStats
		v, _, err := microLoss(pass, b, seqs, w, loss, &st, critic(&vst))
		if err != nil {
			t.Fatal(err)
		}
		return v + 0.5*vst.Loss
	}
	numtest.Gradient(f, x, g, 2e-3, 2e-4, 3e-2, func(i int, analytic float32, numeric float64) {
		t.Errorf("parameter %d: gradient %g, central difference %g", pick[i], analytic, numeric)
	})
	if g[0] == 0 {
		t.Fatal("the loss has no gradient at all")
	}
}

func lmForward() lm.ForwardOptions { return lm.ForwardOptions{Entropy: true} }

func trajectoriesWithReward(r float64) []*textagent.Trajectory {
	return []*textagent.Trajectory{{Reward: r, Steps: []*textagent.Step{{Reward: r}}}}
}

// TestMicroBatchMasks: only the model's own tokens are scored (trained
// on); the environment's tokens inside a response and the prompt are not.
func TestMicroBatchMasks(t *testing.T) {
	s := &lmSeq{ids: []int32{1, 2, 3, 4, 5, 6, 7}, start: 3, mask: []uint8{1, 0, 0, 1}}
	b := microBatch([]*lmSeq{s, {ids: []int32{9, 8}, start: 1, mask: []uint8{1}}})
	// Row 0: position 2 predicts id 4 (mask 1), 3 and 4 predict the
	// environment's 5 and 6 (mask 0), 5 predicts 7 (mask 1).
	want := []int32{-1, -1, 4, -1, -1, 7, -1, 8, -1, -1, -1, -1, -1, -1}
	for i := range want {
		if b.Targets[i] != want[i] {
			t.Fatalf("targets %v, want %v", b.Targets, want)
		}
	}
	if b.Mask[7] != 1 || b.Mask[8] != 1 || b.Mask[9] != 0 {
		t.Errorf("padding mask %v", b.Mask)
	}
	if got := scoredIndex([]*lmSeq{s}); len(got) != 2 || got[0] != [2]int{0, 0} || got[1] != [2]int{0, 3} {
		t.Errorf("scored %v, want the response's tokens 0 and 3", got)
	}
}

// TestDAPOFilter: with algorithm.filter_groups, groups whose samples all
// earned the same reward are not trained on.
func TestDAPOFilter(t *testing.T) {
	ep := func(r float64) *textrl.Episode {
		return &textrl.Episode{Trajectories: trajectoriesWithReward(r), Rows: []textrl.Row{{PromptIDs: []int{1}, ResponseIDs: []int{2, 3}, Mask: []uint8{1, 1}, LogProbs: []float32{-1, -1}}}}
	}
	groups := [][]*textrl.Episode{{ep(1), ep(1)}, {ep(0), ep(1)}, {ep(0), ep(0)}}
	var kept [][]*textrl.Episode
	for _, g := range groups {
		if !lmrl.ZeroStd(rewardsOf(g)) {
			kept = append(kept, g)
		}
	}
	if len(kept) != 1 || kept[0][0].Reward() != 0 {
		t.Fatalf("kept %d groups", len(kept))
	}
	seqs, owner := buildSeqs(kept)
	tr := &Trainer{cfg: lmConfig(t)}
	var kl float64
	if err := tr.assignAdvantages(kept, seqs, owner, &kl); err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 2 || !(seqs[0].adv[0] < 0 && seqs[1].adv[1] > 0) {
		t.Errorf("advantages of the mixed group: %v %v", seqs[0].adv, seqs[1].adv)
	}
}

// The warm-start hook runs once on the policy before the first iteration,
// and the reference policy is the warm-started one.
func TestLMWarmStart(t *testing.T) {
	calls := 0
	WarmStartFor = func(cfg config.Config) (func(context.Context, WarmStart) error, error) {
		return func(_ context.Context, w WarmStart) error {
			calls++
			if w.Policy == nil || w.RunDir == "" || w.Config.Agent.Name != "lm" {
				t.Errorf("warm start given %+v", w)
			}
			m := w.Policy.Model
			host := make([]float32, m.Params.Len())
			m.Dev.Download(host, m.Params)
			host[0] += 0.5 // a visible change
			m.Dev.Upload(m.Params, host)
			return nil
		}, nil
	}
	defer func() { WarmStartFor = nil }()
	dir := filepath.Join(t.TempDir(), "run")
	tr, err := New(lmConfig(t, "trainer.total_training_steps=1", "trainer.test_freq=0", "actor.use_kl_loss=true"), Options{RunDir: dir, Device: gpu.NewCPU(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ref := make([]float32, tr.lmr.ref.Params.Len())
	tr.dev.Download(ref, tr.lmr.ref.Params)
	if calls != 1 || ref[0] < 0.4 {
		t.Errorf("%d warm starts; the reference's first weight %v (want the warm-started one)", calls, ref[0])
	}
	// A resumed run neither warms up again nor loses the warm-started
	// reference: the checkpoint carries it.
	tr2, err := Resume(dir, []string{"trainer.total_training_steps=2"}, Options{Device: gpu.NewCPU(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	if _, err := tr2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ref2 := make([]float32, tr2.lmr.ref.Params.Len())
	tr2.dev.Download(ref2, tr2.lmr.ref.Params)
	if calls != 1 || ref2[0] != ref[0] {
		t.Errorf("after resuming: %d warm starts; the reference's first weight %v, was %v", calls, ref2[0], ref[0])
	}
}

// A language-model run takes live edits of its sampling, learning rate,
// clip and KL coefficients (recorded in edits.jsonl and config.toml) and
// refuses keys that only apply when a run starts; it pauses and resumes.
func TestLMLiveEditsAndPause(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	tr, err := New(lmConfig(t, "trainer.total_training_steps=3", "trainer.test_freq=0"), Options{RunDir: dir, Device: gpu.NewCPU(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.Pause()
	done := make(chan error, 1)
	go func() { _, err := tr.Run(context.Background()); done <- err }()
	for _, kv := range [][2]string{{"rollout.temperature", "0.5"}, {"rollout.top_p", "0.9"}, {"ppo.learning_rate", "1e-4"},
		{"actor.clip_ratio_high", "0.28"}, {"actor.kl_loss_coef", "0.01"}, {"algorithm.kl_coef", "0.02"}} {
		if err := tr.Edit(kv[0], kv[1]); err != nil {
			t.Errorf("live edit %s=%s: %v", kv[0], kv[1], err)
		}
	}
	if err := tr.Edit("trainer.total_training_steps", "3"); err != nil {
		t.Errorf("raising nothing: %v", err)
	}
	tr.stepsDone.Store(2) // as if two iterations were done: lowering the total to them would end the run unannounced
	if err := tr.Edit("trainer.total_training_steps", "2"); err == nil || !strings.Contains(err.Error(), "already done") {
		t.Errorf("total_training_steps lowered to what was done: %v", err)
	}
	tr.stepsDone.Store(0)
	if err := tr.Edit("rollout.n", "8"); err == nil || !strings.Contains(err.Error(), "only when a run starts") {
		t.Errorf("rollout.n edited live: %v", err)
	}
	tr.Resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cfg, err := runstore.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rollout.Temperature != 0.5 || cfg.Actor.ClipRatioHigh != 0.28 || cfg.PPO.LearningRate != 1e-4 {
		t.Errorf("config.toml after the edits: temperature %v, clip_ratio_high %v, lr %v", cfg.Rollout.Temperature, cfg.Actor.ClipRatioHigh, cfg.PPO.LearningRate)
	}
	edits, err := os.ReadFile(filepath.Join(dir, runstore.EditsFile))
	if err != nil || strings.Count(string(edits), "\n") != 7 {
		t.Errorf("edits.jsonl: %v\n%s", err, edits)
	}
}

// per_step: a two-turn episode's row holds two answer segments; each gets
// the advantage of its own turn's return to go, the other sample's row its
// own.
func TestPerStepAdvantages(t *testing.T) {
	ep := func(r1, r2 float64) *textrl.Episode {
		traj := &textagent.Trajectory{Reward: r1 + r2, Steps: []*textagent.Step{{Reward: r1}, {Reward: r2}}}
		return &textrl.Episode{Trajectories: []*textagent.Trajectory{traj}, Rows: []textrl.Row{{Steps: []int{0, 1},
			PromptIDs: []int{1}, ResponseIDs: []int{2, 3, 9, 4}, Mask: []uint8{1, 1, 0, 1}, LogProbs: []float32{-1, -1, 0, -1}}}}
	}
	groups := [][]*textrl.Episode{{ep(1, 0), ep(0, 0)}}
	seqs, owner := buildSeqs(groups)
	tr := &Trainer{cfg: lmConfig(t, "algorithm.stepwise_advantage=per_step", "algorithm.adv_estimator=drgrpo")}
	var kl float64
	if err := tr.assignAdvantages(groups, seqs, owner, &kl); err != nil {
		t.Fatal(err)
	}
	// Returns 1 and 0, mean 0.5. Sample 0: turn 1's return to go 1 → 0.5,
	// turn 2's 0 → −0.5; sample 1: −0.5 both. The environment's token: 0.
	want := [][]float64{{0.5, 0.5, 0, -0.5}, {-0.5, -0.5, 0, -0.5}}
	for i, s := range seqs {
		for j := range want[i] {
			if math.Abs(s.adv[j]-want[i][j]) > 1e-9 {
				t.Fatalf("sample %d advantages %v, want %v", i, s.adv, want[i])
			}
		}
	}
}
