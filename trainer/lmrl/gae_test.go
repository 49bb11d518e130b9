package lmrl

import (
	"math"
	"strings"
	"testing"
)

// GAE against values worked out by hand from δ_t = r_t + γV_next − V_t,
// A_t = δ_t + γλA_next, skipping mask-0 tokens.
func TestGAEAdvantages(t *testing.T) {
	cases := []struct {
		name            string
		rewards, values []float64
		mask            []uint8
		gamma, lam      float64
		adv, ret        []float64
	}{
		// γ = λ = 1: A_t = (sum of later rewards) − V_t, R_t = 1.
		{"undiscounted", []float64{0, 0, 1}, []float64{0.5, 0.2, 0.4}, []uint8{1, 1, 1}, 1, 1,
			[]float64{0.5, 0.8, 0.6}, []float64{1, 1, 1}},
		// t2: δ = 1 − 0.4 = 0.6; t1: δ = 0.9·0.4 − 0.2 = 0.16, A = 0.16 + 0.45·0.6 = 0.43;
		// t0: δ = 0.9·0.2 − 0.5 = −0.32, A = −0.32 + 0.45·0.43 = −0.1265.
		{"discounted", []float64{0, 0, 1}, []float64{0.5, 0.2, 0.4}, []uint8{1, 1, 1}, 0.9, 0.5,
			[]float64{-0.1265, 0.43, 0.6}, []float64{0.3735, 0.63, 1}},
		// Two turns with the environment's tokens between them: their
		// reward (9) and values (7) are not seen; the first turn's last
		// token bootstraps from the second turn's first.
		// t4: A = 1 − 0.3 = 0.7; t1: δ = 0.5 + 0.9·0.3 − 0.2 = 0.57, A = 0.57 + 0.45·0.7 = 0.885;
		// t0: δ = 0.9·0.2 − 0.1 = 0.08, A = 0.08 + 0.45·0.885 = 0.47825.
		{"multi-turn mask", []float64{0, 0.5, 9, 0, 1}, []float64{0.1, 0.2, 7, 7, 0.3}, []uint8{1, 1, 0, 0, 1}, 0.9, 0.5,
			[]float64{0.47825, 0.885, 0, 0, 0.7}, []float64{0.57825, 1.085, 0, 0, 1}},
		{"trailing environment tokens", []float64{1, 0}, []float64{0.25, 5}, []uint8{1, 0}, 1, 1,
			[]float64{0.75, 0}, []float64{1, 0}},
		// λ = 0: one-step TD errors.
		{"td(0)", []float64{0, 1}, []float64{0.5, 0.25}, []uint8{1, 1}, 1, 0,
			[]float64{-0.25, 0.75}, []float64{0.25, 1}},
		{"all masked", []float64{1, 1}, []float64{3, 3}, []uint8{0, 0}, 1, 1, []float64{0, 0}, []float64{0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			adv, ret, err := GAEAdvantages(c.rewards, c.values, c.mask, c.gamma, c.lam)
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.adv {
				if !near(adv[i], c.adv[i]) || !near(ret[i], c.ret[i]) {
					t.Fatalf("token %d: advantage %g, return %g; want %g, %g", i, adv[i], ret[i], c.adv[i], c.ret[i])
				}
			}
		})
	}
	if _, _, err := GAEAdvantages([]float64{1, 2}, []float64{1}, []uint8{1, 1}, 1, 1); err == nil || !strings.Contains(err.Error(), "one reward, value and mask entry per token") {
		t.Fatalf("mismatched lengths: %v", err)
	}
}

// Whitening uses the masked tokens of the whole batch only: {1, 3, 5} has
// mean 3 and unbiased variance 4; the mask-0 entry keeps its value.
func TestWhitenTokens(t *testing.T) {
	adv := [][]float64{{1, 42, 3}, {5}}
	WhitenTokens(adv, [][]uint8{{1, 0, 1}, {1}})
	s := math.Sqrt(4 + 1e-8)
	want := [][]float64{{-2 / s, 42, 0}, {2 / s}}
	for i := range want {
		for j := range want[i] {
			if !near(adv[i][j], want[i][j]) {
				t.Fatalf("[%d][%d] = %g, want %g", i, j, adv[i][j], want[i][j])
			}
		}
	}
}

func TestValueTokenLoss(t *testing.T) {
	l := ValueLoss{ClipRange: 0.5}
	cases := []struct {
		name        string
		v, old, ret float64
		loss, dv    float64
		clipped     bool
	}{
		{"inside the clip range", 1, 0.8, 2, 0.5, -1, false},
		// vc = 1.3: (2−0)² = 4 > 1.69, the unclipped term.
		{"outside, moving toward the return", 2, 0.8, 0, 2, 2, false},
		// vc = 1.3: (1.3−3)² = 2.89 > 1: the clipped term, flat in v.
		{"outside, past the return", 2, 0.8, 3, 1.445, 0, true},
		{"below the range", 0, 0.8, -1, 0.845, 0, true},
	}
	for _, c := range cases {
		loss, dv, clipped := l.TokenLoss(c.v, c.old, c.ret)
		if !near(loss, c.loss) || !near(dv, c.dv) || clipped != c.clipped {
			t.Errorf("%s: loss %g, dv %g, clipped %v; want %g, %g, %v", c.name, loss, dv, clipped, c.loss, c.dv, c.clipped)
		}
	}
}

// The aggregated value loss's gradient matches central differences under
// every aggregation, and its figures count what they say.
func TestValueBatchLoss(t *testing.T) {
	v := [][]float64{{0.1, 2.2, -0.4}, {1.5}, {0.3, 0.9}}
	old := [][]float64{{0, 1.5, 0}, {1.4}, {0.3, 0.2}}
	ret := [][]float64{{1, 3, -1}, {0}, {0.2, 2}}
	for _, mode := range []string{"token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"} {
		l := ValueLoss{ClipRange: 0.5, AggMode: mode, NormLength: 4}
		loss, dv, st, err := l.BatchLoss(v, old, ret)
		if err != nil {
			t.Fatal(err)
		}
		if st.Tokens != 6 || !near(st.VPred, 0.1+2.2-0.4+1.5+0.3+0.9) || !near(st.Loss, loss) {
			t.Fatalf("%s: stats %+v", mode, st)
		}
		for i := range v {
			for j := range v[i] {
				const h = 1e-6
				v[i][j] += h
				up, _, _, _ := l.BatchLoss(v, old, ret)
				v[i][j] -= 2 * h
				down, _, _, _ := l.BatchLoss(v, old, ret)
				v[i][j] += h
				if num := (up - down) / (2 * h); math.Abs(num-dv[i][j]) > 1e-6 {
					t.Errorf("%s: d loss/d v[%d][%d] = %g, central difference %g", mode, i, j, dv[i][j], num)
				}
			}
		}
	}
	// token-mean by hand: per-token ½·max terms:
	// (0.1: vc 0.1) ½·0.81; (2.2: vc 2.0) max(0.64, 1) → ½·1, clipped;
	// (−0.4: vc −0.4) ½·0.36; (1.5) ½·2.25; (0.3) ½·0.01; (0.9: vc 0.7) max(1.21, 1.69) → ½·1.69, clipped.
	loss, _, st, _ := ValueLoss{ClipRange: 0.5, AggMode: "token-mean"}.BatchLoss(v, old, ret)
	if want := 0.5 * (0.81 + 1 + 0.36 + 2.25 + 0.01 + 1.69) / 6; !near(loss, want) || st.ClipFrac != 2 {
		t.Fatalf("token-mean loss %g (want %g), %g clipped (want 2)", loss, want, st.ClipFrac)
	}
	if _, _, _, err := (ValueLoss{AggMode: "token-mean"}).BatchLoss([][]float64{{1}}, [][]float64{{1, 2}}, [][]float64{{1}}); err == nil {
		t.Fatal("mismatched lengths were accepted")
	}
}

func TestExplainedVariance(t *testing.T) {
	ret := []float64{1, 2, 3}
	if ev := ExplainedVariance(ret, []float64{1, 2, 3}); !near(ev, 1) {
		t.Fatalf("perfect values: %g", ev)
	}
	if ev := ExplainedVariance(ret, []float64{0, 0, 0}); !near(ev, 0) {
		t.Fatalf("constant values: %g", ev)
	}
	if ev := ExplainedVariance([]float64{2, 2}, []float64{1, 0}); !math.IsNaN(ev) {
		t.Fatalf("constant returns: %g, want NaN", ev)
	}
}
