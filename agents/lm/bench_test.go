package lm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// benchShape is a model of the speed table, with random weights: Llama
// layers (SmolLM's family), tied embeddings.
type benchShape struct {
	name                                         string
	vocab, hidden, inter, layers, heads, kvHeads int
	rows, seq                                    int // a training step's batch
}

var benchShapes = []benchShape{
	{"5M", 2048, 256, 688, 6, 4, 2, 8, 256},
	{"20M", 4096, 512, 1408, 6, 8, 4, 8, 256},
	{"SmolLM-135M", 49152, 576, 1536, 30, 9, 3, 2, 256},
}

func benchModel(b *testing.B, dev gpu.Device, s benchShape) *Model {
	cfg, err := hf.NewConfig(hf.Llama, s.vocab, s.hidden, s.inter, s.layers, s.heads, s.kvHeads, 0, true)
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(dev, cfg, 0)
	if err != nil {
		b.Fatal(err)
	}
	m.Init(1)
	return m
}

// layerParams is the parameters a token's products in the layers multiply
// by, and headParams those of the head (for the tokens whose logits are
// computed).
func layerParams(c *hf.Config) float64 {
	d := dimsOf(c)
	return float64(c.Layers * (d.h*d.qkv + d.q*d.h + 3*d.h*d.inter))
}

func headParams(c *hf.Config) float64 { return float64(c.Hidden * c.VocabSize) }

// attnFlops is the forward attention work of one token at context ctx.
func attnFlops(c *hf.Config, ctx float64) float64 {
	return float64(c.Layers) * 4 * float64(c.Heads*c.HeadDim) * ctx
}

// BenchmarkTrain is one training step over rows×seq tokens of random ids:
// forward, backward to every parameter, Adam. tokens/s and GFLOP/s count
// the model's useful work (6 FLOPs per token and layer matrix parameter,
// 6 per scored token and head parameter, three times the causal attention
// forward), not the recomputations.
func BenchmarkTrain(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(s.name, func(b *testing.B) {
			dev := gpu.NewCPU(0)
			defer dev.Close()
			m := benchModel(b, dev, s)
			r := rand.New(rand.NewPCG(1, 1))
			ids := make([]int32, s.rows*s.seq)
			for i := range ids {
				ids[i] = int32(r.IntN(s.vocab))
			}
			batch := Batch{Rows: s.rows, Seq: s.seq, IDs: ids}
			batch.NextTokenTargets()
			p, err := m.NewPass(s.rows*s.seq, s.rows*s.seq)
			if err != nil {
				b.Fatal(err)
			}
			mom, vel := dev.Alloc(1, m.NumParams()), dev.Alloc(1, m.NumParams())
			scored := s.rows * (s.seq - 1)
			grad := make([]float32, scored)
			for i := range grad {
				grad[i] = -1 / float32(scored)
			}
			step := func(i int) {
				if _, err := p.Forward(batch, ForwardOptions{}); err != nil {
					b.Fatal(err)
				}
				m.ZeroGrad()
				if err := p.Backward(grad, nil); err != nil {
					b.Fatal(err)
				}
				dev.Adam(m.Params, m.Grads, mom, vel, gpu.AdamArgs{LR: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: i + 1})
			}
			step(0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				step(i + 1)
			}
			tokens := float64(s.rows*s.seq) * float64(b.N)
			c := m.Config
			flops := 6*tokens*layerParams(c) + 6*float64(scored*b.N)*headParams(c) + 3*tokens*attnFlops(c, float64(s.seq+1)/2)
			b.ReportMetric(tokens/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// genBench is the generation benchmarks' work: prompts of promptLen random
// ids, newTokens sampled each (temperature 1, no stop).
const promptLen, newTokens = 16, 64

// BenchmarkGenerate is batched sampling (64 sequences at once) and batch-1
// decoding: generated tokens/s, GFLOP/s of the useful work (prompt and
// completions), and for batch 1 the bytes read per token (weights and KV
// cache) per second.
func BenchmarkGenerate(b *testing.B) {
	for _, s := range benchShapes {
		for _, batch := range []int{64, 1} {
			b.Run(fmt.Sprintf("%s/batch=%d", s.name, batch), func(b *testing.B) {
				dev := gpu.NewCPU(0)
				defer dev.Close()
				m := benchModel(b, dev, s)
				g, err := m.NewGenerator(batch, promptLen+newTokens)
				if err != nil {
					b.Fatal(err)
				}
				r := rand.New(rand.NewPCG(2, 2))
				prompts := testPrompts(r, s.vocab, repeat(promptLen, batch)...)
				opt := SampleOptions{MaxNewTokens: newTokens, Temperature: 1}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					opt.Seed = uint64(i)
					if _, err := g.Generate(prompts, opt); err != nil {
						b.Fatal(err)
					}
				}
				sec := b.Elapsed().Seconds()
				gen := float64(batch*newTokens) * float64(b.N)
				fed := float64(batch*(promptLen+newTokens-1)) * float64(b.N) // the last token is sampled, not fed
				c := m.Config
				flops := 2*fed*layerParams(c) + 2*gen*headParams(c) + fed*attnFlops(c, float64(promptLen+newTokens)/2)
				b.ReportMetric(gen/sec, "tokens/s")
				b.ReportMetric(flops/sec/1e9, "GFLOP/s")
				if batch == 1 {
					d := dimsOf(c)
					kv := 2 * float64(c.Layers*d.kv) * 4 * (promptLen + newTokens/2)
					b.ReportMetric(gen*(4*float64(m.NumParams())+kv)/sec/1e9, "GB/s")
				}
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
