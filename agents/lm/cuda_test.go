//go:build cuda

package lm

import (
	"math"
	"slices"
	"testing"

	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/internal/numtest"
)

// The whole model on the CUDA device (on a GPU, or on the CPU stand-in in
// CI) against the CPU device: log-probabilities, every gradient, and
// greedy generation; the value head's values and gradients with them.
func TestCUDAModelMatchesCPU(t *testing.T) {
	g, err := gpu.OpenCUDA(0)
	if err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	defer g.Close()
	c := gpu.NewCPU(0)
	defer c.Close()
	b := testBatch(t)
	for _, name := range parityModels {
		mc, mg := loadTest(t, c, name), loadTest(t, g, name)
		var logp, vals [2][]float32
		var grads, vgrads [2][]float32
		for i, m := range []*Model{mc, mg} {
			p, err := m.NewPass(b.Rows*b.Seq, b.Rows*b.Seq)
			if err != nil {
				t.Fatal(err)
			}
			v := m.NewValueHead()
			w := make([]float32, m.Config.Hidden)
			for j := range w {
				w[j] = float32(math.Sin(float64(3 * j)))
			}
			if err := v.Set(w, []float32{0.1}); err != nil {
				t.Fatal(err)
			}
			s, err := p.Forward(b, ForwardOptions{Entropy: true, Temperature: 0.8, Values: v})
			if err != nil {
				t.Fatal(err)
			}
			logp[i], vals[i] = s.LogProbs, s.Values
			dl, de, dv := make([]float32, len(s.LogProbs)), make([]float32, len(s.LogProbs)), make([]float32, len(s.LogProbs))
			for j := range dl {
				dl[j], de[j], dv[j] = float32(math.Sin(float64(j))), float32(math.Cos(float64(j)))*0.3, float32(j%3)-1
			}
			m.ZeroGrad()
			v.ZeroGrad()
			if err := p.BackwardScores(ScoreGrads{LogP: dl, Entropy: de, Values: dv}); err != nil {
				t.Fatal(err)
			}
			grads[i], vgrads[i] = make([]float32, m.NumParams()), make([]float32, v.Len())
			m.Dev.Download(grads[i], m.Grads)
			m.Dev.Download(vgrads[i], v.Grads)
		}
		le, _ := numtest.RelErr(logp[1], logp[0])
		ge, at := numtest.RelErr(grads[1], grads[0])
		ve, _ := numtest.RelErr(vals[1], vals[0])
		vge, _ := numtest.RelErr(vgrads[1], vgrads[0])
		t.Logf("%s: log-probs relative error %.2g, gradients %.2g, values %.2g, value-head gradients %.2g", name, le, ge, ve, vge)
		if le > 1e-5 || ge > 1e-4 || ve > 1e-5 || vge > 1e-4 {
			t.Fatalf("%s: log-probs differ by %.3g, gradients by %.3g (parameter %d), values by %.3g, value-head gradients by %.3g", name, le, ge, at, ve, vge)
		}
		var out [2][]Completion
		// Repeated prompts: the generator copies their caches (Copy of
		// views on the device).
		prompts := [][]int32{{1, 2, 3}, {4, 5, 6, 7, 8, 9}, {4, 5, 6, 7, 8, 9}, {10}, {1, 2, 3}}
		for i, m := range []*Model{mc, mg} {
			gen, err := m.NewGenerator(3, 32)
			if err != nil {
				t.Fatal(err)
			}
			if out[i], err = gen.Generate(prompts, SampleOptions{MaxNewTokens: 12}); err != nil {
				t.Fatal(err)
			}
		}
		for k := range prompts {
			if !slices.Equal(out[0][k].Tokens, out[1][k].Tokens) {
				t.Fatalf("%s prompt %d: greedy %v on the CPU, %v on CUDA", name, k, out[0][k].Tokens, out[1][k].Tokens)
			}
			if e, _ := numtest.RelErr(out[1][k].LogProbs, out[0][k].LogProbs); e > 1e-4 {
				t.Fatalf("%s prompt %d: log-probs differ by %.3g", name, k, e)
			}
		}
	}
}
