package trainer

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/agents/lmagent"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/lmrl"
)

// BenchmarkLMGRPOIteration is one GRPO iteration of a language model at
// its core, without an environment: 64 sequences (8 prompts × rollout.n 8)
// of 128 prompt tokens sample 64 new tokens each (temperature 1, no stop),
// rewards drawn at random become GRPO advantages, and one epoch of one
// mini-batch trains on them (micro-batches of 8, token-mean). It reports
// the generation and training rates in tokens/s (training counts prompt and
// response tokens, all of which go through the passes) and, on the CPU,
// both as fractions of the measured float32 peak, counting 2·params FLOPs
// a generated or prefilled token and 6·params a trained one, attention
// besides. LM_BENCH_DEVICE picks the device (cpu, cuda: the cuda build);
// the SmolLM-135M shape (Llama, 576 wide, 30 layers, 9/3 heads, MLP 1536,
// 49,152 tokens) runs when LM_BENCH_SMOLLM=1, on a GPU in practice.
func BenchmarkLMGRPOIteration(b *testing.B) {
	shapes := []struct {
		name string
		cfg  func() (*hf.Config, error)
	}{
		{"tiny-4M", func() (*hf.Config, error) { return hf.NewConfig(hf.Qwen3, 4096, 256, 768, 4, 4, 2, 0, true) }},
	}
	if os.Getenv("LM_BENCH_SMOLLM") == "1" {
		shapes = append(shapes, struct {
			name string
			cfg  func() (*hf.Config, error)
		}{"smollm-135M", func() (*hf.Config, error) { return hf.NewConfig(hf.Llama, 49152, 576, 1536, 30, 9, 3, 64, true) }})
	}
	spec := os.Getenv("LM_BENCH_DEVICE")
	if spec == "" {
		spec = "cpu"
	}
	dev, info, err := gpu.Open(spec, 0, 1e12)
	if err != nil {
		b.Skipf("device %s: %v", spec, err)
	}
	defer dev.Close()
	var peak gpu.Peak
	if _, isCPU := dev.(*gpu.CPU); isCPU {
		peak = gpu.MeasurePeak(0, time.Second)
	}
	const prompts, n, promptLen, newTokens = 8, 8, 128, 64
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			c, err := s.cfg()
			if err != nil {
				b.Fatal(err)
			}
			m, err := lm.New(dev, c, 0)
			if err != nil {
				b.Fatal(err)
			}
			m.Init(1)
			g, err := m.NewGenerator(prompts*n, promptLen+newTokens)
			if err != nil {
				b.Fatal(err)
			}
			cfg := lmConfig(b, "actor.ppo_micro_batch_size=8", "ppo.learning_rate=1e-5")
			t := &Trainer{cfg: cfg, dev: dev, lmr: &lmRun{pol: &lmagent.Policy{Model: m}, stats: dev.Alloc(1, gpu.NumStats)},
				shuffleRNG: rand.New(rand.NewPCG(1, 2))}
			p := &progress{opt: adam{m: dev.Alloc(1, m.Params.Len()), v: dev.Alloc(1, m.Params.Len())}}
			r := rand.New(rand.NewPCG(3, 4))
			var genS, trainS float64
			var genToks, trainToks float64
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				ps := make([][]int32, prompts*n)
				for i := range prompts {
					ids := make([]int32, promptLen)
					for j := range ids {
						ids[j] = int32(r.IntN(c.VocabSize))
					}
					for k := range n {
						ps[i*n+k] = ids
					}
				}
				start := time.Now()
				comps, err := g.Generate(ps, lm.SampleOptions{MaxNewTokens: newTokens, Temperature: 1, Seed: uint64(it)})
				if err != nil {
					b.Fatal(err)
				}
				genS += time.Since(start).Seconds()
				rewards := make([][]float64, prompts)
				seqs := make([]*lmSeq, len(comps))
				for i, cm := range comps {
					genToks += float64(len(cm.Tokens))
					rewards[i/n] = append(rewards[i/n], float64(r.IntN(2)))
					s := &lmSeq{ids: append(append([]int32(nil), ps[i]...), cm.Tokens...), start: promptLen,
						mask: make([]uint8, len(cm.Tokens)), oldLogp: cm.LogProbs, adv: make([]float64, len(cm.Tokens))}
					for j := range s.mask {
						s.mask[j] = 1
					}
					seqs[i] = s
					trainToks += float64(len(s.ids))
				}
				adv, _ := lmrl.GroupAdvantages(lmrl.GRPO, true, rewards, nil)
				for i, s := range seqs {
					for j := range s.adv {
						s.adv[j] = adv[i/n][i%n]
					}
				}
				start = time.Now()
				if _, _, _, _, _, err := t.lmUpdate(seqs, p, 1e-5); err != nil {
					b.Fatal(err)
				}
				trainS += time.Since(start).Seconds()
			}
			b.ReportMetric(genToks/genS, "gen_tok/s")
			b.ReportMetric(trainToks/trainS, "train_tok/s")
			b.ReportMetric(float64(b.N)/(genS+trainS), "iter/s")
			if peak.GFLOPS > 0 {
				P := float64(c.Params())
				q := float64(c.Heads * c.HeadDim)
				// Attention: 4·layers·context·q FLOPs a token forward (scores
				// and values), the context averaging half the sequence.
				attn := func(ctx float64) float64 { return 4 * float64(c.Layers) * ctx * q }
				seq := float64(promptLen + newTokens)
				genFLOP := float64(prompts*n) * (float64(promptLen)*(2*P+attn(promptLen/2)) + float64(newTokens)*(2*P+attn(promptLen+newTokens/2)))
				trainFLOP := float64(prompts*n) * seq * 3 * (2*P + attn(seq/2))
				b.ReportMetric(genFLOP*float64(b.N)/genS/1e9/peak.GFLOPS, "gen_frac_peak")
				b.ReportMetric(trainFLOP*float64(b.N)/trainS/1e9/peak.GFLOPS, "train_frac_peak")
				b.Logf("%s on %s: peak %.0f GFLOP/s (%s, %d cores)", s.name, info, peak.GFLOPS, peak.Loop, peak.Cores)
			}
		})
	}
}
