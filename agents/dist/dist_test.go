package dist

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSamplesFollowTheDistribution draws many actions from one row of each
// distribution: the frequencies (or moments) are the distribution's, each
// sample's log-probability is LogProb's, and the entropy is the Monte Carlo
// estimate of −E[log p].
func TestSamplesFollowTheDistribution(t *testing.T) {
	const n = 60000
	for _, tc := range []struct {
		name   string
		d      Distribution
		out    []float32
		shared []float32
		// freq, for discrete ones: the probability of each action.
		freq []float64
	}{
		{"categorical", NewCategorical(3), []float32{0, float32(math.Log(3)), float32(math.Log(6))}, nil, []float64{0.1, 0.3, 0.6}},
		{"tokens at temperature 2", NewTokens(3, 2), []float32{0, float32(2 * math.Log(3)), float32(2 * math.Log(6))}, nil, []float64{0.1, 0.3, 0.6}},
		{"gaussian", NewGaussian(2), []float32{0.5, -1}, []float32{0, float32(math.Log(0.5))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 8))
			ad := tc.d.ActionDim()
			acts, logp, check := make([]float32, n*ad), make([]float32, n), make([]float64, n)
			outs := make([]float32, n*len(tc.out))
			for i := 0; i < n; i++ {
				copy(outs[i*len(tc.out):], tc.out)
			}
			tc.d.Sample(outs, tc.shared, r, false, acts, logp)
			tc.d.LogProb(f64(outs), f64(tc.shared), acts, check)
			var negLogp float64
			for i := range logp {
				if math.Abs(float64(logp[i])-check[i]) > 1e-5 {
					t.Fatalf("sample %d: log-prob %v, LogProb says %v", i, logp[i], check[i])
				}
				negLogp -= float64(logp[i]) / n
			}
			ent := make([]float64, 1)
			tc.d.Entropy(f64(tc.out), f64(tc.shared), ent)
			if math.Abs(ent[0]-negLogp) > 0.02 {
				t.Errorf("entropy %v, −E[log p] ≈ %v", ent[0], negLogp)
			}
			if tc.freq != nil {
				counts := make([]float64, len(tc.freq))
				for _, a := range acts {
					counts[int(a)]++
				}
				for k, want := range tc.freq {
					if got := counts[k] / n; math.Abs(got-want) > 0.01 {
						t.Errorf("action %d drawn %.3f of the time, want %.3f", k, got, want)
					}
				}
			} else {
				for j := 0; j < ad; j++ {
					var m, v float64
					for i := 0; i < n; i++ {
						m += float64(acts[i*ad+j]) / n
					}
					for i := 0; i < n; i++ {
						d := float64(acts[i*ad+j]) - m
						v += d * d / n
					}
					sd := math.Exp(float64(tc.shared[j]))
					if math.Abs(m-float64(tc.out[j])) > 0.02 || math.Abs(math.Sqrt(v)-sd) > 0.02 {
						t.Errorf("dimension %d: mean %.3f sd %.3f, want %v and %.3f", j, m, math.Sqrt(v), tc.out[j], sd)
					}
				}
			}
			// The mode, deterministically.
			tc.d.Sample(tc.out, tc.shared, r, true, acts[:ad], logp[:1])
			mode := []float32{2}
			if tc.freq == nil {
				mode = tc.out
			}
			for j := range mode {
				if acts[j] != mode[j] {
					t.Errorf("deterministic action %v, want the mode %v", acts[:ad], mode)
				}
			}
		})
	}
}

func TestMaskedEntropy(t *testing.T) {
	d := NewTokens(2, 1)
	out := []float32{0, 0, 0, 100, 5, 5} // entropies log 2, ≈0, log 2
	if got := d.MaskedEntropy(out, []float32{1, 0, 1}); math.Abs(got-math.Log(2)) > 1e-9 {
		t.Errorf("masked entropy %v, want log 2", got)
	}
	if got := d.MaskedEntropy(out, []float32{0, 1, 0}); got > 1e-9 {
		t.Errorf("masked entropy of a certain token %v, want 0", got)
	}
	if got := d.MaskedEntropy(out, []float32{0, 0, 0}); !math.IsNaN(got) {
		t.Errorf("masked entropy of no tokens %v, want NaN", got)
	}
}

func f64(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}
