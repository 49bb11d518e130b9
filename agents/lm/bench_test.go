package lm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// benchmark reports a work's rates over b.N runs after one warm-up run.
func benchmark(b *testing.B, w *BenchWork, err error) {
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Run(0); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Run(i + 1); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(w.Tokens/sec, "tokens/s")
	b.ReportMetric(w.FLOPs/sec/1e9, "GFLOP/s")
	if w.Bytes > 0 {
		b.ReportMetric(w.Bytes/sec/1e9, "GB/s")
	}
}

// BenchmarkTrain is one training step of each shape (NewTrainWork).
func BenchmarkTrain(b *testing.B) {
	for _, s := range BenchShapes {
		b.Run(s.Name, func(b *testing.B) {
			dev := gpu.NewCPU(0)
			defer dev.Close()
			w, err := NewTrainWork(dev, s, 0)
			benchmark(b, w, err)
		})
	}
}

// BenchmarkGenerate is batched sampling (64 sequences at once) and batch-1
// decoding (NewGenerateWork).
func BenchmarkGenerate(b *testing.B) {
	for _, s := range BenchShapes {
		for _, batch := range []int{64, 1} {
			b.Run(fmt.Sprintf("%s/batch=%d", s.Name, batch), func(b *testing.B) {
				dev := gpu.NewCPU(0)
				defer dev.Close()
				w, err := NewGenerateWork(dev, s, batch, BenchPrompt, BenchNewTokens, 0)
				benchmark(b, w, err)
			})
		}
	}
}

func repeat(n, times int) []int {
	out := make([]int, times)
	for i := range out {
		out[i] = n
	}
	return out
}

// BenchmarkGenerateGroups is an RL rollout's shape on the 20M model: 64
// completions of 128-token prompts, 32 new tokens each, the prompts all
// different or in 8 groups of 8 (GRPO's n = 8), which prefill each prompt
// once and copy its cache to the rest of the group.
func BenchmarkGenerateGroups(b *testing.B) {
	const completions, promptLen, newTokens = 64, 128, 32
	for _, group := range []int{1, 8} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) {
			dev := gpu.NewCPU(0)
			defer dev.Close()
			m, err := benchModel(dev, BenchShapes[1], 0)
			if err != nil {
				b.Fatal(err)
			}
			g, err := m.NewGenerator(completions, promptLen+newTokens)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(4, 4))
			distinct := testPrompts(r, m.Config.VocabSize, repeat(promptLen, completions/group)...)
			prompts := make([][]int32, completions)
			for i := range prompts {
				prompts[i] = distinct[i/group]
			}
			opt := SampleOptions{MaxNewTokens: newTokens, Temperature: 1}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				opt.Seed = uint64(i)
				if _, err := g.Generate(prompts, opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(completions*newTokens*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
