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
// greedy generation.
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
		var logp [2][]float32
		var grads [2][]float32
		for i, m := range []*Model{mc, mg} {
			p, err := m.NewPass(b.Rows*b.Seq, b.Rows*b.Seq)
			if err != nil {
				t.Fatal(err)
			}
			s, err := p.Forward(b, ForwardOptions{Entropy: true, Temperature: 0.8})
			if err != nil {
				t.Fatal(err)
			}
			logp[i] = s.LogProbs
			dl, de := make([]float32, len(s.LogProbs)), make([]float32, len(s.LogProbs))
			for j := range dl {
				dl[j], de[j] = float32(math.Sin(float64(j))), float32(math.Cos(float64(j)))*0.3
			}
			m.ZeroGrad()
			if err := p.Backward(dl, de); err != nil {
				t.Fatal(err)
			}
			grads[i] = make([]float32, m.NumParams())
			m.Dev.Download(grads[i], m.Grads)
		}
		le, _ := numtest.RelErr(logp[1], logp[0])
		ge, at := numtest.RelErr(grads[1], grads[0])
		t.Logf("%s: log-probs relative error %.2g, gradients %.2g", name, le, ge)
		if le > 1e-5 || ge > 1e-4 {
			t.Fatalf("%s: log-probs differ by %.3g, gradients by %.3g (parameter %d)", name, le, ge, at)
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
