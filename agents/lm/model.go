// Package lm is a decoder-only transformer language model on a
// gpu.TransformerOps device: the Qwen2/2.5, Qwen3 and Llama-3 (SmolLM)
// families of agents/lm/hf, with a training pass (forward and backward of
// padded batches to the log-probabilities of chosen tokens), a KV-cache
// generator (batched sampling with temperature, top-k and top-p), and
// Hugging Face checkpoints in and out.
//
// Parameters live in one flat device tensor (and gradients in another), so
// clipping and Adam are one call each, as for the project's other agents.
// Weight matrices are held transposed from transformers' [out, in], as
// [in, out]: a projection is then a plain product x·W, which the CPU's
// kernels run without copying W, and q/k/v and gate/up are each one
// product. Load and Save convert.
package lm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/internal/safetensors"
)

// part places a transformers tensor inside a parameter: a 2-D weight
// [out, in] transposed into columns [col, col+out) of an [in, ·] matrix, a
// vector at element col.
type part struct {
	name string
	col  int
}

// param is one parameter tensor in the flat vector.
type param struct {
	rows, cols int
	off        int
	transposed bool // built from transposed weights (else copied as is)
	parts      []part
}

// layer is one decoder layer's parameters (or their gradients): views of
// the flat tensor; a bias or norm the family lacks is a zero tensor.
type layer struct {
	ln1, wqkv, bqkv, qnorm, knorm, wo, bo, ln2, wgu, bgu, wd, bd gpu.Tensor
}

// weights are the views of the whole model's parameters (or gradients).
type weights struct {
	embed  gpu.Tensor // V×H; a tied model's is head (H×V), read by columns
	head   gpu.Tensor // H×V
	normF  gpu.Tensor
	layers []layer
}

// Model is a language model's parameters on a device.
type Model struct {
	Config *hf.Config
	Dev    gpu.Device
	ops    gpu.TransformerOps

	// Params and Grads are 1×P: every parameter, and its gradient.
	Params, Grads gpu.Tensor
	w, g          weights
	params        []param

	// Source is the directory the model was loaded from ("" when made
	// here): Save copies its tokenizer files.
	Source string
	// MemoryLimit bounds, in bytes, what the model plans to hold with its
	// passes and generators (0: unchecked); estimates are made before
	// anything large is allocated.
	MemoryLimit int64

	cos, sin gpu.Tensor // RoPE tables, grown on demand
}

// dims are the widths a model's layers use.
type dims struct {
	h, q, kv, qkv, inter, vocab, heads, kvHeads, hd int
}

func dimsOf(c *hf.Config) dims {
	q, kv := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	return dims{h: c.Hidden, q: q, kv: kv, qkv: q + 2*kv, inter: c.Intermediate, vocab: c.VocabSize,
		heads: c.Heads, kvHeads: c.KVHeads, hd: c.HeadDim}
}

// layout lists the parameters of cfg in the flat vector.
func layout(c *hf.Config) []param {
	d := dimsOf(c)
	var ps []param
	off := 0
	add := func(rows, cols int, transposed bool, parts ...part) {
		ps = append(ps, param{rows: rows, cols: cols, off: off, transposed: transposed, parts: parts})
		off += rows * cols
	}
	none := func() { ps = append(ps, param{off: off}) } // an absent bias or norm
	if !c.Tied {
		add(d.vocab, d.h, false, part{"model.embed_tokens.weight", 0})
	} else {
		none()
	}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(1, d.h, false, part{p + "input_layernorm.weight", 0})
		add(d.h, d.qkv, true, part{p + "self_attn.q_proj.weight", 0}, part{p + "self_attn.k_proj.weight", d.q}, part{p + "self_attn.v_proj.weight", d.q + d.kv})
		if c.QKVBias {
			add(1, d.qkv, false, part{p + "self_attn.q_proj.bias", 0}, part{p + "self_attn.k_proj.bias", d.q}, part{p + "self_attn.v_proj.bias", d.q + d.kv})
		} else {
			none()
		}
		if c.QKNorm {
			add(1, d.hd, false, part{p + "self_attn.q_norm.weight", 0})
			add(1, d.hd, false, part{p + "self_attn.k_norm.weight", 0})
		} else {
			none()
			none()
		}
		add(d.q, d.h, true, part{p + "self_attn.o_proj.weight", 0})
		if c.OBias {
			add(1, d.h, false, part{p + "self_attn.o_proj.bias", 0})
		} else {
			none()
		}
		add(1, d.h, false, part{p + "post_attention_layernorm.weight", 0})
		add(d.h, 2*d.inter, true, part{p + "mlp.gate_proj.weight", 0}, part{p + "mlp.up_proj.weight", d.inter})
		if c.MLPBias {
			add(1, 2*d.inter, false, part{p + "mlp.gate_proj.bias", 0}, part{p + "mlp.up_proj.bias", d.inter})
		} else {
			none()
		}
		add(d.inter, d.h, true, part{p + "mlp.down_proj.weight", 0})
		if c.MLPBias {
			add(1, d.h, false, part{p + "mlp.down_proj.bias", 0})
		} else {
			none()
		}
	}
	add(1, d.h, false, part{"model.norm.weight", 0})
	head := "lm_head.weight"
	if c.Tied {
		head = "model.embed_tokens.weight"
	}
	add(d.h, d.vocab, true, part{head, 0})
	return ps
}

// paramsPerLayer is the number of entries layout makes for one layer.
const paramsPerLayer = 12

// views binds the layout's parameters to views of flat.
func views(c *hf.Config, ps []param, flat gpu.Tensor) weights {
	view := func(p param) gpu.Tensor {
		if p.rows*p.cols == 0 {
			return gpu.Tensor{}
		}
		return flat.Slice(p.off, p.rows, p.cols)
	}
	var w weights
	w.head = view(ps[len(ps)-1])
	w.normF = view(ps[len(ps)-2])
	w.embed = view(ps[0])
	if c.Tied {
		w.embed = w.head
	}
	for l := 0; l < c.Layers; l++ {
		q := ps[1+l*paramsPerLayer : 1+(l+1)*paramsPerLayer]
		w.layers = append(w.layers, layer{ln1: view(q[0]), wqkv: view(q[1]), bqkv: view(q[2]), qnorm: view(q[3]), knorm: view(q[4]),
			wo: view(q[5]), bo: view(q[6]), ln2: view(q[7]), wgu: view(q[8]), bgu: view(q[9]), wd: view(q[10]), bd: view(q[11])})
	}
	return w
}

// New makes a model of cfg on dev with every parameter zero (Init or Load
// fills them). The device must implement gpu.TransformerOps.
func New(dev gpu.Device, cfg *hf.Config, memoryLimit int64) (*Model, error) {
	return newModel(dev, cfg, memoryLimit, true)
}

// checkModelMemory refuses a model whose weights (and gradients, when
// grads) cannot fit in limit bytes (0: unchecked).
func checkModelMemory(cfg *hf.Config, limit int64, grads bool) error {
	if need := modelBytes(cfg, grads); limit > 0 && need > limit {
		what := "its weights and gradients"
		if !grads {
			what = "its weights"
		}
		return fmt.Errorf("a %s model of %s parameters needs about %s for %s, more than the %s available",
			cfg.Arch, ParamCount(cfg.Params()), bytesText(need), what, bytesText(limit))
	}
	return nil
}

func newModel(dev gpu.Device, cfg *hf.Config, memoryLimit int64, grads bool) (*Model, error) {
	ops, ok := dev.(gpu.TransformerOps)
	if !ok {
		return nil, fmt.Errorf("device %s cannot run language models (no transformer operations)", dev.Name())
	}
	// Every model comes through here, so a device whose transformer
	// kernels do not build (NVRTC's message) is refused now, not by a panic
	// in the first pass.
	if err := gpu.PrepareTransformer(dev); err != nil {
		return nil, fmt.Errorf("device %s cannot run language models: %v", dev.Name(), err)
	}
	if err := checkModelMemory(cfg, memoryLimit, grads); err != nil {
		return nil, err
	}
	ps := layout(cfg)
	last := ps[len(ps)-1]
	n := last.off + last.rows*last.cols
	m := &Model{Config: cfg, Dev: dev, ops: ops, params: ps, MemoryLimit: memoryLimit}
	m.Params = dev.Alloc(1, n)
	m.w = views(cfg, ps, m.Params)
	if grads {
		m.Grads = dev.Alloc(1, n)
		m.g = views(cfg, ps, m.Grads)
	}
	return m, nil
}

// HasGrads reports whether the model holds gradients (one loaded with
// LoadOptions.Inference does not).
func (m *Model) HasGrads() bool { return m.Grads.Len() > 0 }

// NumParams is the number of parameters (a tied head counted once).
func (m *Model) NumParams() int { return m.Params.Len() }

// initializerRange is transformers' default std of initial weights.
const initializerRange = 0.02

// Init draws initial parameters as transformers' _init_weights does:
// matrices and the embedding from N(0, 0.02²), biases 0, norm weights 1.
func (m *Model) Init(seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x6c6d)) // "lm"
	host := make([]float32, m.Params.Len())
	for _, p := range m.params {
		v := host[p.off : p.off+p.rows*p.cols]
		isNorm := len(p.parts) == 1 && strings.HasSuffix(p.parts[0].name, "norm.weight")
		switch {
		case isNorm:
			for i := range v {
				v[i] = 1
			}
		case p.rows > 1: // a matrix
			for i := range v {
				v[i] = float32(r.NormFloat64() * initializerRange)
			}
		}
	}
	m.Dev.Upload(m.Params, host)
}

// LoadOptions say how Load reads a model directory.
type LoadOptions struct {
	// MemoryLimit bounds the model's memory (see Model.MemoryLimit).
	MemoryLimit int64
	// Inference leaves out the gradients (half the memory): the model
	// scores and generates but cannot be trained (Backward refuses).
	Inference bool
}

// Load reads a model directory in the Hugging Face layout onto dev. Every
// tensor is checked by name and shape before any is read, non-finite
// values are refused, and the memory is estimated before the weights are
// allocated.
func Load(dev gpu.Device, dir string, opt LoadOptions) (*Model, error) {
	// The config alone first: a model too large for the memory is refused
	// before any weight file is opened.
	cfg, err := hf.ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := checkModelMemory(cfg, opt.MemoryLimit, !opt.Inference); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, hf.ConfigName), err)
	}
	src, err := hf.Open(dir, true)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	m, err := newModel(dev, src.Config, opt.MemoryLimit, !opt.Inference)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	m.Source = dir
	shapes := map[string][]int{}
	for _, t := range src.Config.Tensors() {
		shapes[t.Name] = t.Shape
	}
	var stage, block []float32
	for _, p := range m.params {
		if len(p.parts) == 0 {
			continue
		}
		block = grow(block, p.rows*p.cols)
		for _, pt := range p.parts {
			shape := shapes[pt.name]
			n := 1
			for _, s := range shape {
				n *= s
			}
			stage = grow(stage, n)
			if err := src.Read(pt.name, stage); err != nil {
				return nil, err
			}
			place(block, p, pt, shape, stage)
		}
		m.Dev.Upload(m.Params.Slice(p.off, p.rows, p.cols), block)
	}
	return m, nil
}

// place writes a transformers tensor's values into a parameter's block.
func place(block []float32, p param, pt part, shape []int, vals []float32) {
	if !p.transposed {
		copy(block[pt.col:], vals)
		return
	}
	out, in := shape[0], shape[1]
	for r := 0; r < out; r++ {
		row := vals[r*in : (r+1)*in]
		for c, v := range row {
			block[c*p.cols+pt.col+r] = v
		}
	}
}

// take reads a transformers tensor's values out of a parameter's block.
func take(vals, block []float32, p param, pt part, shape []int) {
	if !p.transposed {
		copy(vals, block[pt.col:pt.col+len(vals)])
		return
	}
	out, in := shape[0], shape[1]
	for r := 0; r < out; r++ {
		row := vals[r*in : (r+1)*in]
		for c := range row {
			row[c] = block[c*p.cols+pt.col+r]
		}
	}
}

// Tensors returns the parameters as transformers names and shapes them,
// in its module order: what Save writes.
func (m *Model) Tensors() []safetensors.Tensor {
	specs := m.Config.Tensors()
	index := map[string]int{}
	out := make([]safetensors.Tensor, len(specs))
	for i, s := range specs {
		index[s.Name] = i
		out[i] = safetensors.Tensor{Name: s.Name, Shape: s.Shape, Data: make([]float32, s.Elements())}
	}
	var block []float32
	for _, p := range m.params {
		if len(p.parts) == 0 {
			continue
		}
		block = grow(block, p.rows*p.cols)
		m.Dev.Download(block, m.Params.Slice(p.off, p.rows, p.cols))
		for _, pt := range p.parts {
			t := out[index[pt.name]]
			take(t.Data, block, p, pt, t.Shape)
		}
	}
	return out
}

// Save writes the model to dir in the Hugging Face layout (config.json,
// weights, generation_config.json, and the tokenizer files of the
// directory it was loaded from, if any).
func (m *Model) Save(dir string, opt hf.SaveOptions) error {
	if opt.From == "" {
		opt.From = m.Source
	}
	return hf.Save(dir, m.Config, m.Tensors(), opt)
}

func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// rope returns cos and sin tables covering positions [0, n).
func (m *Model) rope(n int) (cos, sin gpu.Tensor) {
	if m.cos.Rows >= n {
		return m.cos, m.sin
	}
	rows := max(n, 2*m.cos.Rows, 256)
	rows = min(rows, max(n, m.Config.MaxPositions))
	cs, sn := ropeTables(m.Config, rows)
	half := m.Config.HeadDim / 2
	m.cos, m.sin = m.Dev.Alloc(rows, half), m.Dev.Alloc(rows, half)
	m.Dev.Upload(m.cos, cs)
	m.Dev.Upload(m.sin, sn)
	return m.cos, m.sin
}

// InvFreq is RoPE's inverse frequencies as transformers computes them in
// float32: base^(−2j/d), then the llama3 rescaling when configured.
func InvFreq(c *hf.Config) []float32 {
	half, d := c.HeadDim/2, float32(c.HeadDim)
	inv := make([]float32, half)
	for j := range inv {
		inv[j] = float32(1 / math.Pow(c.Rope.Theta, float64(float32(2*j)/d)))
	}
	if c.Rope.Type != "llama3" {
		return inv
	}
	r := c.Rope
	old := float64(r.OriginalMax)
	lowWave, highWave := old/r.LowFreqFactor, old/r.HighFreqFactor
	for j, f := range inv {
		wave := 2 * math.Pi / float64(f)
		switch {
		case wave < highWave: // high frequencies: kept
		case wave > lowWave: // low frequencies: divided by the factor
			inv[j] = float32(float64(f) / r.Factor)
		default: // between: a smooth blend
			smooth := (old/wave - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			inv[j] = float32((1-smooth)*float64(f)/r.Factor + smooth*float64(f))
		}
	}
	return inv
}

// ropeTables tabulates cos and sin of p·θ_j for p < rows, the angle rounded
// to float32 as transformers' float32 product rounds it.
func ropeTables(c *hf.Config, rows int) (cos, sin []float32) {
	inv := InvFreq(c)
	half := len(inv)
	cos, sin = make([]float32, rows*half), make([]float32, rows*half)
	for p := 0; p < rows; p++ {
		for j, f := range inv {
			a := float64(float32(p) * f)
			s, co := math.Sincos(a)
			cos[p*half+j], sin[p*half+j] = float32(co), float32(s)
		}
	}
	return cos, sin
}
