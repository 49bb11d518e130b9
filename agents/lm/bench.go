package lm

import (
	"fmt"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// BenchShape is a model of the speed table, with random weights: Llama
// layers (SmolLM's family), tied embeddings; Rows×Seq is a training
// step's batch.
type BenchShape struct {
	Name                                         string
	Vocab, Hidden, Inter, Layers, Heads, KVHeads int
	Rows, Seq                                    int
}

// BenchShapes are the speed table's models: about 5M and 20M parameters,
// and SmolLM-135M's shape.
var BenchShapes = []BenchShape{
	{"5M", 2048, 256, 688, 6, 4, 2, 8, 256},
	{"20M", 4096, 512, 1408, 6, 8, 4, 8, 256},
	{"SmolLM-135M", 49152, 576, 1536, 30, 9, 3, 2, 256},
}

// The generation benchmarks' work: prompts of BenchPrompt random ids,
// BenchNewTokens sampled each (temperature 1, no stop).
const BenchPrompt, BenchNewTokens = 16, 64

// BenchWork is one unit of benchmark work on a model of random weights,
// run again and again; Tokens, FLOPs (useful work, not recomputations) and
// Bytes (weights and KV cache read, for batch-1 decoding; 0 otherwise) are
// per run.
type BenchWork struct {
	Model                *Model
	Tokens, FLOPs, Bytes float64
	run                  func(i int) error
}

// Run does the work once; i varies the seed.
func (w *BenchWork) Run(i int) error { return w.run(i) }

func benchModel(dev gpu.Device, s BenchShape, memLimit int64) (*Model, error) {
	cfg, err := hf.NewConfig(hf.Llama, s.Vocab, s.Hidden, s.Inter, s.Layers, s.Heads, s.KVHeads, 0, true)
	if err != nil {
		return nil, err
	}
	m, err := New(dev, cfg, memLimit)
	if err != nil {
		return nil, err
	}
	m.Init(1)
	return m, nil
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

// NewTrainWork is one training step over Rows×Seq tokens of random ids:
// forward, backward to every parameter, Adam. FLOPs count 6 per token and
// layer matrix parameter, 6 per scored token and head parameter, and three
// times the causal attention forward.
func NewTrainWork(dev gpu.Device, s BenchShape, memLimit int64) (*BenchWork, error) {
	m, err := benchModel(dev, s, memLimit)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(1, 1))
	ids := make([]int32, s.Rows*s.Seq)
	for i := range ids {
		ids[i] = int32(r.IntN(s.Vocab))
	}
	batch := Batch{Rows: s.Rows, Seq: s.Seq, IDs: ids}
	batch.NextTokenTargets()
	p, err := m.NewPass(s.Rows*s.Seq, s.Rows*s.Seq)
	if err != nil {
		return nil, err
	}
	mom, vel := dev.Alloc(1, m.NumParams()), dev.Alloc(1, m.NumParams())
	scored := s.Rows * (s.Seq - 1)
	grad := make([]float32, scored)
	for i := range grad {
		grad[i] = -1 / float32(scored)
	}
	tokens := float64(s.Rows * s.Seq)
	c := m.Config
	w := &BenchWork{Model: m, Tokens: tokens,
		FLOPs: 6*tokens*layerParams(c) + 6*float64(scored)*headParams(c) + 3*tokens*attnFlops(c, float64(s.Seq+1)/2)}
	w.run = func(i int) error {
		if _, err := p.Forward(batch, ForwardOptions{}); err != nil {
			return err
		}
		m.ZeroGrad()
		if err := p.Backward(grad, nil); err != nil {
			return err
		}
		dev.Adam(m.Params, m.Grads, mom, vel, gpu.AdamArgs{LR: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: i + 1})
		return nil
	}
	return w, nil
}

// NewGenerateWork is sampling newTokens for each of batch prompts of
// promptLen random ids at once (temperature 1, each token's log-prob, no
// stop) through a KV cache. Tokens counts the generated ones; FLOPs the
// useful work of prompts and completions; Bytes, for batch 1, the weights
// and the mean KV cache read per generated token.
func NewGenerateWork(dev gpu.Device, s BenchShape, batch, promptLen, newTokens int, memLimit int64) (*BenchWork, error) {
	m, err := benchModel(dev, s, memLimit)
	if err != nil {
		return nil, err
	}
	g, err := m.NewGenerator(batch, promptLen+newTokens)
	if err != nil {
		return nil, err
	}
	if promptLen < 1 || newTokens < 1 {
		return nil, fmt.Errorf("a generation benchmark needs a prompt and new tokens")
	}
	r := rand.New(rand.NewPCG(2, 2))
	prompts := make([][]int32, batch)
	for i := range prompts {
		prompts[i] = make([]int32, promptLen)
		for k := range prompts[i] {
			prompts[i][k] = int32(r.IntN(s.Vocab))
		}
	}
	c := m.Config
	gen := float64(batch * newTokens)
	fed := float64(batch * (promptLen + newTokens - 1)) // the last token is sampled, not fed
	w := &BenchWork{Model: m, Tokens: gen,
		FLOPs: 2*fed*layerParams(c) + 2*gen*headParams(c) + fed*attnFlops(c, float64(promptLen+newTokens)/2)}
	if batch == 1 {
		d := dimsOf(c)
		kv := 2 * float64(c.Layers*d.kv) * 4 * float64(promptLen+newTokens/2)
		w.Bytes = gen * (4*float64(m.NumParams()) + kv)
	}
	opt := SampleOptions{MaxNewTokens: newTokens, Temperature: 1}
	w.run = func(i int) error {
		opt.Seed = uint64(i)
		out, err := g.Generate(prompts, opt)
		if err != nil {
			return err
		}
		for _, o := range out {
			if len(o.Tokens) != newTokens {
				return fmt.Errorf("generated %d tokens, want %d", len(o.Tokens), newTokens)
			}
		}
		return nil
	}
	return w, nil
}
