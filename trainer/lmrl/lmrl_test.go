package lmrl

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9+1e-6*math.Abs(b) }

func TestGroupAdvantages(t *testing.T) {
	// Group {1, 0, 0, 1}: mean 0.5, unbiased std sqrt(1/3) = 0.57735.
	s := math.Sqrt(1.0 / 3)
	cases := []struct {
		name    string
		est     string
		normStd bool
		groups  [][]float64
		tokens  [][]int
		want    [][]float64
	}{
		{"grpo", GRPO, true, [][]float64{{1, 0, 0, 1}}, nil, [][]float64{{0.5 / (s + eps), -0.5 / (s + eps), -0.5 / (s + eps), 0.5 / (s + eps)}}},
		{"grpo without std (Dr.GRPO)", GRPO, false, [][]float64{{1, 0, 0, 1}}, nil, [][]float64{{0.5, -0.5, -0.5, 0.5}}},
		{"drgrpo", DrGRPO, true, [][]float64{{3, 1}}, nil, [][]float64{{1, -1}}},
		{"grpo equal rewards", GRPO, true, [][]float64{{1, 1, 1}}, nil, [][]float64{{0, 0, 0}}},
		{"rloo", RLOO, false, [][]float64{{1, 0, 0}}, nil, [][]float64{{1 - 0, 0 - 0.5, 0 - 0.5}}},
		{"rloo of one sample", RLOO, false, [][]float64{{5}}, nil, [][]float64{{0}}},
		{"grpo of one sample", GRPO, true, [][]float64{{5}}, nil, [][]float64{{0}}},
		// REINFORCE++ baseline: r − group mean = {1, −1} and {0.5, −0.5};
		// token-weighted (1,1,2,2 tokens) whitening: weighted mean 0,
		// var = (1+1+2·0.25+2·0.25)/(6−1) = 0.6.
		{"reinforce++ baseline", REINFORCE, false, [][]float64{{2, 0}, {1, 0}}, [][]int{{1, 1}, {2, 2}},
			[][]float64{{1 / math.Sqrt(0.6+1e-8), -1 / math.Sqrt(0.6+1e-8)}, {0.5 / math.Sqrt(0.6+1e-8), -0.5 / math.Sqrt(0.6+1e-8)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := GroupAdvantages(c.est, c.normStd, c.groups, c.tokens)
			if err != nil {
				t.Fatal(err)
			}
			for g := range c.want {
				for i := range c.want[g] {
					if !near(got[g][i], c.want[g][i]) {
						t.Errorf("group %d sample %d: %v, want %v", g, i, got[g][i], c.want[g][i])
					}
				}
			}
		})
	}
	if _, err := GroupAdvantages("ppo", true, [][]float64{{1}}, nil); err == nil {
		t.Error("an unknown estimator was accepted")
	}
}

func TestStepAdvantages(t *testing.T) {
	// Two samples: steps {0, 1} (return 1) and {0, 0} (return 0); mean 0.5,
	// std sqrt(0.5). Returns to go: {1, 1} and {0, 0}.
	s := math.Sqrt(0.5)
	got, err := StepAdvantages(GRPO, true, [][][]float64{{{0, 1}, {0, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{0.5 / (s + eps), 0.5 / (s + eps)}, {-0.5 / (s + eps), -0.5 / (s + eps)}}
	for i := range want {
		for k := range want[i] {
			if !near(got[0][i][k], want[i][k]) {
				t.Errorf("sample %d step %d: %v, want %v", i, k, got[0][i][k], want[i][k])
			}
		}
	}
	// A reward that comes early counts for the steps before it only.
	got, _ = StepAdvantages(DrGRPO, false, [][][]float64{{{1, 0}, {0, 0}}})
	if !near(got[0][0][0], 0.5) || !near(got[0][0][1], -0.5) {
		t.Errorf("returns to go of {1, 0} against mean 0.5: %v, want [0.5 -0.5]", got[0][0])
	}
}

func TestZeroStd(t *testing.T) {
	for _, c := range []struct {
		rs   []float64
		want bool
	}{{[]float64{1, 1, 1}, true}, {[]float64{0, 0}, true}, {[]float64{0, 1}, false}, {[]float64{0.1, 0.1, 0}, false}, {[]float64{2}, true}} {
		if got := ZeroStd(c.rs); got != c.want {
			t.Errorf("ZeroStd(%v) = %v", c.rs, got)
		}
	}
}

func TestKL(t *testing.T) {
	lp, ref := -1.0, -1.5 // log ratio 0.5
	for _, c := range []struct {
		kind     string
		kl, grad float64
	}{
		{"k1", 0.5, 1}, {"kl", 0.5, 1},
		{"k2", 0.125, 0.5}, {"mse", 0.125, 0.5},
		{"k3", math.Exp(-0.5) + 0.5 - 1, 1 - math.Exp(-0.5)}, {"low_var_kl", math.Exp(-0.5) + 0.5 - 1, 1 - math.Exp(-0.5)},
	} {
		kl, g, err := KL(c.kind, lp, ref)
		if err != nil || !near(kl, c.kl) || !near(g, c.grad) {
			t.Errorf("%s: kl %v grad %v err %v, want %v %v", c.kind, kl, g, err, c.kl, c.grad)
		}
		// The derivative is the estimator's own.
		h := 1e-6
		k1, _, _ := KL(c.kind, lp+h, ref)
		k0, _, _ := KL(c.kind, lp-h, ref)
		if num := (k1 - k0) / (2 * h); math.Abs(num-g) > 1e-6 {
			t.Errorf("%s: derivative %v, central difference %v", c.kind, g, num)
		}
	}
	if kl, g, _ := KL("k3", 0, 30); kl != 10 || g != 0 {
		t.Errorf("k3 far from the reference: %v %v, want the clamp 10 with no gradient", kl, g)
	}
	if _, _, err := KL("k9", 0, 0); err == nil {
		t.Error("an unknown estimator was accepted")
	}
}

func TestTokenLoss(t *testing.T) {
	l := Loss{ClipLow: 0.2, ClipHigh: 0.28, ClipC: 3, AggMode: "token-mean"}
	ln := math.Log
	cases := []struct {
		name            string
		ratio, adv      float64
		loss, dlogp     float64
		clip, low, high float64
		dual            float64
	}{
		// ratio 1.1 inside [0.8, 1.28]: −A·ratio, gradient −A·ratio.
		{"inside", 1.1, 2, -2.2, -2.2, 0, 0, 0, 0},
		// ratio 1.5 > 1.28 with A > 0: clipped to −A·1.28, no gradient.
		{"clip high", 1.5, 1, -1.28, 0, 1, 0, 1, 0},
		// ratio 1.5 with A < 0: max(1.5, 1.28)·|A| = unclipped, gradient.
		{"above, negative advantage", 1.5, -1, 1.5, 1.5, 0, 0, 0, 0},
		// ratio 0.5 < 0.8 with A < 0: clipped to 0.8·|A|, no gradient.
		{"clip low", 0.5, -1, 0.8, 0, 1, 1, 0, 0},
		// ratio 0.5 with A > 0: −A·0.5 > −A·0.8, unclipped.
		{"below, positive advantage", 0.5, 1, -0.5, -0.5, 0, 0, 0, 0},
		// ratio 5 with A < 0: 5·|A| beyond the dual clip 3·|A|.
		{"dual clip", 5, -1, 3, 0, 0, 0, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var st Stats
			loss, dlogp, dent, err := l.TokenLoss(Token{LogP: ln(c.ratio), OldLogP: 0, Adv: c.adv, Entropy: 1}, &st)
			if err != nil {
				t.Fatal(err)
			}
			if !near(loss, c.loss) || !near(dlogp, c.dlogp) || dent != 0 {
				t.Errorf("loss %v dlogp %v dent %v, want %v %v 0", loss, dlogp, dent, c.loss, c.dlogp)
			}
			if st.ClipFrac != c.clip || st.ClipLow != c.low || st.ClipHigh != c.high || st.DualClip != c.dual {
				t.Errorf("stats %+v, want clip %v low %v high %v dual %v", st, c.clip, c.low, c.high, c.dual)
			}
		})
	}
	// Entropy bonus and KL loss add their own terms.
	l2 := Loss{ClipLow: 0.2, ClipHigh: 0.2, EntCoef: 0.1, KLCoef: 0.5, KLType: "k1", AggMode: "token-mean"}
	var st Stats
	loss, dlogp, dent, _ := l2.TokenLoss(Token{LogP: -1, OldLogP: -1, RefLogP: -2, Adv: 1, Entropy: 2}, &st)
	if want := -1 + 0.5*1 - 0.1*2; !near(loss, want) || !near(dlogp, -1+0.5) || !near(dent, -0.1) || !near(st.KL, 1) {
		t.Errorf("with KL and entropy: loss %v dlogp %v dent %v kl %v, want %v -0.5 -0.1 1", loss, dlogp, dent, st.KL, want)
	}
}

func TestWeights(t *testing.T) {
	tokens := []int{2, 4}
	cases := []struct {
		mode string
		want []float64
	}{
		{"token-mean", []float64{1.0 / 6, 1.0 / 6}},
		{"seq-mean-token-mean", []float64{1.0 / 4, 1.0 / 8}},
		{"seq-mean-token-sum", []float64{0.5, 0.5}},
		{"seq-mean-token-sum-norm", []float64{1.0 / 20, 1.0 / 20}},
	}
	for _, c := range cases {
		w, err := Loss{AggMode: c.mode, NormLength: 10}.Weights(tokens)
		if err != nil {
			t.Fatal(err)
		}
		for i := range w {
			if !near(w[i], c.want[i]) {
				t.Errorf("%s: weights %v, want %v", c.mode, w, c.want)
				break
			}
		}
	}
	if _, err := (Loss{AggMode: "sum"}).Weights(tokens); err == nil {
		t.Error("an unknown loss_agg_mode was accepted")
	}
	// BatchLoss: the aggregated loss of two sequences of token losses.
	// seq-mean-token-mean of per-token losses −A·1 (ratio 1): seq 1 A = 1
	// (2 tokens), seq 2 A = −1 (1 token): (−1 + 1)/2 = 0; token-mean:
	// (−2 + 1)/3.
	seqs := [][]Token{{{Adv: 1}, {Adv: 1}}, {{Adv: -1}}}
	for mode, want := range map[string]float64{"seq-mean-token-mean": 0, "token-mean": -1.0 / 3, "seq-mean-token-sum": (-2 + 1) / 2.0} {
		loss, dl, _, st, err := Loss{AggMode: mode, ClipLow: 0.2, ClipHigh: 0.2}.BatchLoss(seqs)
		if err != nil || !near(loss, want) || st.Tokens != 3 {
			t.Errorf("%s: loss %v (tokens %v, err %v), want %v", mode, loss, st.Tokens, err, want)
		}
		if mode == "token-mean" && (!near(dl[0][0], -1.0/3) || !near(dl[1][0], 1.0/3)) {
			t.Errorf("token-mean gradients %v, want −1/3 on the first sequence and 1/3 on the second", dl)
		}
	}
}
