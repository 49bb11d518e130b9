// Package hf reads and writes language models in the Hugging Face layout:
// config.json (Qwen2/2.5, Qwen3, Llama-3 and SmolLM, which is Llama),
// model.safetensors or shards with model.safetensors.index.json in F32,
// BF16 or F16, generation_config.json, and the tokenizer files beside
// them. Tensor names and [out, in] shapes are transformers' own, so a
// model this package writes is one PyTorch code loads by name.
package hf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Arch is a model family: the layers differ in their biases and norms.
type Arch string

// The families this package reads.
const (
	Qwen2 Arch = "qwen2" // q/k/v biases
	Qwen3 Arch = "qwen3" // per-head q/k RMSNorm, explicit head_dim
	Llama Arch = "llama" // Llama-3 (llama3 RoPE scaling) and SmolLM
)

// archClass is the class transformers names in "architectures".
var archClass = map[Arch]string{Qwen2: "Qwen2ForCausalLM", Qwen3: "Qwen3ForCausalLM", Llama: "LlamaForCausalLM"}

// ParseArch maps a family name (qwen2, qwen3, llama; smollm is llama) to
// an Arch.
func ParseArch(name string) (Arch, error) {
	switch strings.ToLower(name) {
	case "qwen2", "qwen2.5":
		return Qwen2, nil
	case "qwen3":
		return Qwen3, nil
	case "llama", "llama3", "smollm", "smollm2":
		return Llama, nil
	}
	return "", fmt.Errorf("unknown architecture %q (choose qwen2, qwen3 or llama)", name)
}

// Rope is the rotary embedding: its base and the llama3 rescaling of its
// frequencies (Type "llama3"), or none (Type "").
type Rope struct {
	Theta          float64
	Type           string  // "" (default) or "llama3"
	Factor         float64 // llama3: how much longer the context is
	LowFreqFactor  float64
	HighFreqFactor float64
	OriginalMax    int // original_max_position_embeddings
}

// Config is a model's shape and its family's options, read from
// config.json.
type Config struct {
	Arch         Arch
	VocabSize    int
	Hidden       int // hidden_size
	Intermediate int // intermediate_size (the MLP's width)
	Layers       int // num_hidden_layers
	Heads        int // num_attention_heads
	KVHeads      int // num_key_value_heads
	HeadDim      int // head_dim, or hidden_size / num_attention_heads
	RMSNormEps   float64
	Rope         Rope
	MaxPositions int  // max_position_embeddings
	Tied         bool // tie_word_embeddings: lm_head is the embedding

	QKVBias bool // q/k/v projections carry biases (Qwen2; attention_bias elsewhere)
	OBias   bool // the output projection carries one (attention_bias of Llama and Qwen3)
	MLPBias bool // gate/up/down carry biases (Llama's mlp_bias)
	QKNorm  bool // per-head RMSNorm of q and k before RoPE (Qwen3)

	BOS   int   // bos_token_id, −1 when none
	EOS   []int // eos_token_id (one or several)
	Pad   int   // pad_token_id, −1 when none
	DType string

	raw map[string]json.RawMessage // every key of the file, written back
}

// Limits on a config's numbers: far beyond any released model, and small
// enough that no size computed from them overflows.
const (
	maxVocab  = 1 << 22
	maxWidth  = 1 << 17
	maxLayers = 1 << 10
	maxHeads  = 1 << 10
)

// fileConfig is config.json's fields as transformers spells them; pointers
// tell a missing key from a zero.
type fileConfig struct {
	Architectures  []string         `json:"architectures"`
	ModelType      string           `json:"model_type"`
	VocabSize      *int             `json:"vocab_size"`
	Hidden         *int             `json:"hidden_size"`
	Intermediate   *int             `json:"intermediate_size"`
	Layers         *int             `json:"num_hidden_layers"`
	Heads          *int             `json:"num_attention_heads"`
	KVHeads        *int             `json:"num_key_value_heads"`
	HeadDim        *int             `json:"head_dim"`
	HiddenAct      *string          `json:"hidden_act"`
	RMSNormEps     *float64         `json:"rms_norm_eps"`
	RopeTheta      *float64         `json:"rope_theta"`
	RopeScaling    *json.RawMessage `json:"rope_scaling"`
	RopeParameters *json.RawMessage `json:"rope_parameters"`
	MaxPositions   *int             `json:"max_position_embeddings"`
	Tied           *bool            `json:"tie_word_embeddings"`
	AttentionBias  *bool            `json:"attention_bias"`
	MLPBias        *bool            `json:"mlp_bias"`
	SlidingWindow  *bool            `json:"use_sliding_window"`
	Pretraining    *int             `json:"pretraining_tp"`
	BOS            *json.RawMessage `json:"bos_token_id"`
	EOS            *json.RawMessage `json:"eos_token_id"`
	Pad            *json.RawMessage `json:"pad_token_id"`
	DType          *string          `json:"torch_dtype"`
	DTypeV5        *string          `json:"dtype"`
}

type ropeFields struct {
	RopeType       string   `json:"rope_type"`
	Type           string   `json:"type"`
	RopeTheta      *float64 `json:"rope_theta"`
	Factor         *float64 `json:"factor"`
	LowFreqFactor  *float64 `json:"low_freq_factor"`
	HighFreqFactor *float64 `json:"high_freq_factor"`
	OriginalMax    *int     `json:"original_max_position_embeddings"`
	Partial        *float64 `json:"partial_rotary_factor"`
}

// ParseConfig reads config.json's bytes; name is the file, for messages.
func ParseConfig(b []byte, name string) (*Config, error) {
	fail := func(format string, a ...any) (*Config, error) {
		return nil, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, a...))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fail("not a JSON object: %v", err)
	}
	var f fileConfig
	if err := json.Unmarshal(b, &f); err != nil {
		return fail("%v", err)
	}
	c := &Config{raw: raw, BOS: -1, Pad: -1}
	arch, err := archOf(f)
	if err != nil {
		return fail("%v", err)
	}
	c.Arch = arch
	for _, req := range []struct {
		key string
		v   *int
		dst *int
		max int
	}{
		{"vocab_size", f.VocabSize, &c.VocabSize, maxVocab},
		{"hidden_size", f.Hidden, &c.Hidden, maxWidth},
		{"intermediate_size", f.Intermediate, &c.Intermediate, maxWidth * 4},
		{"num_hidden_layers", f.Layers, &c.Layers, maxLayers},
		{"num_attention_heads", f.Heads, &c.Heads, maxHeads},
	} {
		if req.v == nil {
			return fail("%s is missing", req.key)
		}
		if *req.v < 1 || *req.v > req.max {
			return fail("%s is %d; it must be between 1 and %d", req.key, *req.v, req.max)
		}
		*req.dst = *req.v
	}
	c.KVHeads = c.Heads
	if f.KVHeads != nil {
		c.KVHeads = *f.KVHeads
	}
	if c.KVHeads < 1 || c.KVHeads > c.Heads || c.Heads%c.KVHeads != 0 {
		return fail("num_key_value_heads is %d; it must divide num_attention_heads (%d)", c.KVHeads, c.Heads)
	}
	if f.HeadDim != nil {
		c.HeadDim = *f.HeadDim
	} else {
		if c.Hidden%c.Heads != 0 {
			return fail("hidden_size %d is not a multiple of num_attention_heads %d; give head_dim", c.Hidden, c.Heads)
		}
		c.HeadDim = c.Hidden / c.Heads
	}
	if c.HeadDim < 2 || c.HeadDim%2 != 0 || c.HeadDim > 1024 {
		return fail("head_dim is %d; rotary embeddings need an even head_dim of at most 1024", c.HeadDim)
	}
	if f.HiddenAct != nil && *f.HiddenAct != "silu" {
		return fail("hidden_act is %q; only silu (SwiGLU) is supported", *f.HiddenAct)
	}
	if f.SlidingWindow != nil && *f.SlidingWindow {
		return fail("use_sliding_window is true; sliding-window attention is not supported")
	}
	if f.Pretraining != nil && *f.Pretraining > 1 {
		return fail("pretraining_tp is %d; only 1 is supported", *f.Pretraining)
	}
	c.RMSNormEps = 1e-6
	if f.RMSNormEps != nil {
		c.RMSNormEps = *f.RMSNormEps
	}
	if !(c.RMSNormEps > 0 && c.RMSNormEps < 1) {
		return fail("rms_norm_eps is %v; it must lie in (0, 1)", c.RMSNormEps)
	}
	c.MaxPositions = map[Arch]int{Llama: 2048, Qwen2: 32768, Qwen3: 32768}[arch]
	if f.MaxPositions != nil {
		c.MaxPositions = *f.MaxPositions
	}
	if c.MaxPositions < 1 || c.MaxPositions > 1<<24 {
		return fail("max_position_embeddings is %d; it must be between 1 and %d", c.MaxPositions, 1<<24)
	}
	if c.Rope, err = parseRope(f); err != nil {
		return fail("%v", err)
	}
	if f.Tied != nil {
		c.Tied = *f.Tied
	}
	switch arch {
	case Qwen2:
		c.QKVBias = true
	case Qwen3:
		c.QKNorm = true
	}
	if arch != Qwen2 && f.AttentionBias != nil && *f.AttentionBias {
		c.QKVBias, c.OBias = true, true
	}
	if arch == Llama && f.MLPBias != nil && *f.MLPBias {
		c.MLPBias = true
	}
	if c.BOS, err = optionalID(f.BOS, "bos_token_id", c.VocabSize); err != nil {
		return fail("%v", err)
	}
	if c.Pad, err = optionalID(f.Pad, "pad_token_id", c.VocabSize); err != nil {
		return fail("%v", err)
	}
	if c.EOS, err = idList(f.EOS, "eos_token_id", c.VocabSize); err != nil {
		return fail("%v", err)
	}
	switch {
	case f.DType != nil:
		c.DType = *f.DType
	case f.DTypeV5 != nil:
		c.DType = *f.DTypeV5
	}
	return c, nil
}

func archOf(f fileConfig) (Arch, error) {
	if len(f.Architectures) > 1 {
		return "", fmt.Errorf("architectures names %d classes; one is expected", len(f.Architectures))
	}
	for a, class := range archClass {
		if len(f.Architectures) == 1 && f.Architectures[0] == class || len(f.Architectures) == 0 && f.ModelType == string(a) {
			if f.ModelType != "" && f.ModelType != string(a) {
				return "", fmt.Errorf("architectures says %s but model_type says %q", class, f.ModelType)
			}
			return a, nil
		}
	}
	got := f.ModelType
	if len(f.Architectures) == 1 {
		got = f.Architectures[0]
	}
	return "", fmt.Errorf("architecture %q is not supported (Qwen2ForCausalLM, Qwen3ForCausalLM or LlamaForCausalLM)", got)
}

// parseRope reads rope_theta and rope_scaling, or transformers 5's
// rope_parameters which holds both.
func parseRope(f fileConfig) (Rope, error) {
	r := Rope{Theta: 10000}
	if f.RopeTheta != nil {
		r.Theta = *f.RopeTheta
	}
	var raw *json.RawMessage
	key := "rope_scaling"
	switch {
	case f.RopeParameters != nil && !isNull(*f.RopeParameters):
		raw, key = f.RopeParameters, "rope_parameters"
	case f.RopeScaling != nil && !isNull(*f.RopeScaling):
		raw = f.RopeScaling
	}
	if raw != nil {
		var p ropeFields
		if err := json.Unmarshal(*raw, &p); err != nil {
			return r, fmt.Errorf("%s: %v", key, err)
		}
		if p.RopeTheta != nil {
			r.Theta = *p.RopeTheta
		}
		if p.Partial != nil && *p.Partial != 1 {
			return r, fmt.Errorf("%s.partial_rotary_factor is %v; only 1 is supported", key, *p.Partial)
		}
		typ := p.RopeType
		if typ == "" {
			typ = p.Type
		}
		switch typ {
		case "", "default":
		case "llama3":
			r.Type = "llama3"
			for _, v := range []struct {
				name string
				p    *float64
				dst  *float64
			}{{"factor", p.Factor, &r.Factor}, {"low_freq_factor", p.LowFreqFactor, &r.LowFreqFactor}, {"high_freq_factor", p.HighFreqFactor, &r.HighFreqFactor}} {
				if v.p == nil || !(*v.p > 0) || math.IsInf(*v.p, 0) {
					return r, fmt.Errorf("%s.%s must be a positive number for llama3 scaling", key, v.name)
				}
				*v.dst = *v.p
			}
			if r.HighFreqFactor <= r.LowFreqFactor {
				return r, fmt.Errorf("%s: high_freq_factor (%v) must exceed low_freq_factor (%v)", key, r.HighFreqFactor, r.LowFreqFactor)
			}
			if p.OriginalMax == nil || *p.OriginalMax < 1 {
				return r, fmt.Errorf("%s.original_max_position_embeddings must be a positive integer for llama3 scaling", key)
			}
			r.OriginalMax = *p.OriginalMax
		default:
			return r, fmt.Errorf("%s type %q is not supported (default or llama3)", key, typ)
		}
	}
	if !(r.Theta > 1) || math.IsInf(r.Theta, 0) {
		return r, fmt.Errorf("rope_theta is %v; it must be a finite number above 1", r.Theta)
	}
	return r, nil
}

func isNull(m json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(m), []byte("null")) }

func optionalID(m *json.RawMessage, key string, vocab int) (int, error) {
	ids, err := idList(m, key, vocab)
	if err != nil || len(ids) == 0 {
		return -1, err
	}
	if len(ids) > 1 {
		return -1, fmt.Errorf("%s must be one token id, not %d", key, len(ids))
	}
	return ids[0], nil
}

// idList reads a token id or a list of them (eos_token_id may be either).
func idList(m *json.RawMessage, key string, vocab int) ([]int, error) {
	if m == nil || isNull(*m) {
		return nil, nil
	}
	var ids []int
	var one int
	if err := json.Unmarshal(*m, &one); err == nil {
		ids = []int{one}
	} else if err := json.Unmarshal(*m, &ids); err != nil {
		return nil, fmt.Errorf("%s must be a token id or a list of them", key)
	}
	for _, id := range ids {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("%s %d is outside the vocabulary of %d tokens", key, id, vocab)
		}
	}
	return ids, nil
}

// NewConfig is a from-scratch config of arch with the given shape and
// the family's usual options (Qwen2's biases, Qwen3's q/k norms), in the
// form config.json takes.
func NewConfig(arch Arch, vocab, hidden, intermediate, layers, heads, kvHeads, headDim int, tied bool) (*Config, error) {
	if headDim == 0 {
		if heads < 1 || hidden%heads != 0 {
			return nil, fmt.Errorf("hidden size %d is not a multiple of %d heads", hidden, heads)
		}
		headDim = hidden / heads
	}
	f := map[string]any{
		"architectures": []string{archClass[arch]}, "model_type": string(arch),
		"vocab_size": vocab, "hidden_size": hidden, "intermediate_size": intermediate,
		"num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kvHeads,
		"head_dim": headDim, "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
		"max_position_embeddings": 4096, "tie_word_embeddings": tied, "torch_dtype": "float32",
		"initializer_range": 0.02, "attention_dropout": 0.0, "use_cache": true,
	}
	switch arch {
	case Qwen2, Qwen3:
		f["use_sliding_window"] = false
		f["rope_theta"] = 1000000.0
	case Llama:
		f["attention_bias"], f["mlp_bias"] = false, false
	default:
		return nil, fmt.Errorf("unknown architecture %q", arch)
	}
	if arch == Qwen3 {
		f["attention_bias"] = false
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return ParseConfig(b, "new config")
}

// Set changes a key of the config as config.json will hold it, for keys
// this package does not model (the caller's own), or reparses the config
// for one it does.
func (c *Config) Set(key string, value any) error {
	b, err := json.Marshal(value)
	if err != nil {
		return err
	}
	raw := make(map[string]json.RawMessage, len(c.raw)+1)
	for k, v := range c.raw {
		raw[k] = v
	}
	raw[key] = b
	all, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	next, err := ParseConfig(all, "config")
	if err != nil {
		return err
	}
	*c = *next
	return nil
}

// JSON is config.json's content: every key the source held, in
// transformers' sorted, indented form.
func (c *Config) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(c.raw, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Params is the number of parameters (a tied lm_head counted once).
func (c *Config) Params() int64 {
	var n int64
	for _, s := range c.Tensors() {
		n += s.Elements()
	}
	return n
}

// Tensor names a tensor of the model and its shape as transformers stores it.
type Tensor struct {
	Name  string
	Shape []int
}

// Elements is the number of values the tensor holds.
func (t Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// Tensors lists the model's tensors in transformers' module order, with
// their [out, in] shapes; a tied model has no lm_head.weight.
func (c *Config) Tensors() []Tensor {
	h, q, kv := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	out := []Tensor{{"model.embed_tokens.weight", []int{c.VocabSize, h}}}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add := func(name string, shape ...int) { out = append(out, Tensor{p + name, shape}) }
		add("input_layernorm.weight", h)
		add("self_attn.q_proj.weight", q, h)
		if c.QKVBias {
			add("self_attn.q_proj.bias", q)
		}
		add("self_attn.k_proj.weight", kv, h)
		if c.QKVBias {
			add("self_attn.k_proj.bias", kv)
		}
		add("self_attn.v_proj.weight", kv, h)
		if c.QKVBias {
			add("self_attn.v_proj.bias", kv)
		}
		add("self_attn.o_proj.weight", h, q)
		if c.OBias {
			add("self_attn.o_proj.bias", h)
		}
		if c.QKNorm {
			add("self_attn.q_norm.weight", c.HeadDim)
			add("self_attn.k_norm.weight", c.HeadDim)
		}
		add("post_attention_layernorm.weight", h)
		for _, m := range []struct {
			name    string
			out, in int
		}{{"gate_proj", c.Intermediate, h}, {"up_proj", c.Intermediate, h}, {"down_proj", h, c.Intermediate}} {
			add("mlp."+m.name+".weight", m.out, m.in)
			if c.MLPBias {
				add("mlp."+m.name+".bias", m.out)
			}
		}
	}
	out = append(out, Tensor{"model.norm.weight", []int{h}})
	if !c.Tied {
		out = append(out, Tensor{"lm_head.weight", []int{c.VocabSize, h}})
	}
	return out
}

// StopIDs are the ids that end generation by default: eos_token_id.
func (c *Config) StopIDs() []int { return slices.Clone(c.EOS) }
