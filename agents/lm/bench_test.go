package lm

import (
	"fmt"
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
