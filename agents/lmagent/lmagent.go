// Package lmagent registers the `lm` agent: a decoder-only language model
// (agents/lm) that plays text environments. Its [agent] keys name either a
// Hugging Face model directory (agent.model) or a from-scratch
// architecture (agent.arch and the sizes, with a character vocabulary or a
// tokenizer directory); Open builds the model, its tokenizer and its chat
// format for the trainer. The agent cannot act on numeric observations:
// asked to, it says so (a config error), as the trainer does for a numeric
// agent on a text environment.
package lmagent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/agents/dist"
	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// Name is the agent's registered name.
const Name = "lm"

// Charset is the from-scratch character vocabulary: printable ASCII,
// tab and newline, and the glyphs the text environments draw with
// (FrozenLake's √ for the player on the goal).
const Charset = tokenizer.DefaultCharset + "√×÷−"

func init() {
	agents.Register(agents.Spec{
		Name:         Name,
		Observes:     agents.Text,
		Description:  "decoder-only language model (Qwen2/Qwen3/Llama) for text environments: a Hugging Face directory or a from-scratch architecture",
		Keys:         Keys(),
		New:          func(agents.Build) (agents.Agent, error) { return nil, errNumeric },
		Distribution: func(envs.Space) (dist.Distribution, error) { return nil, errNumeric },
		Requires: func(dev gpu.Device) error {
			if _, ok := dev.(gpu.TransformerOps); !ok {
				return errors.New("the device has no transformer operations")
			}
			return nil
		},
		Estimate: func(w agents.Workload) agents.Estimate {
			c, err := ArchConfig(w.Config)
			if err != nil {
				return agents.Estimate{}
			}
			p := float64(c.Params())
			return agents.Estimate{Params: p, Widest: float64(c.VocabSize) * float64(c.Hidden),
				Weights: agents.MemoryPart{Name: fmt.Sprintf("the %s model's weights", c.Arch), Fix: "a smaller agent.hidden_size or agent.num_hidden_layers", Bytes: 4 * p},
				FLOPs:   6 * p}
		},
	})
}

// errNumeric is the lm agent's answer to a numeric environment.
var errNumeric = errors.New("the lm agent plays text environments (TextFrozenLake-v0, Arithmetic-v0, Countdown-v0, QA-v0, …), not numeric observations: pick a text env.id, or a numeric agent such as mlp")

// Keys are the agent's [agent] keys.
func Keys() []agents.Key {
	return []agents.Key{
		{Name: "model", Default: "", Doc: "lm: a Hugging Face model directory (config.json, model.safetensors, tokenizer.json) to train; empty: a from-scratch model of agent.arch and the sizes below."},
		{Name: "arch", Default: "qwen3", Check: "oneof=qwen2|qwen3|llama", Doc: "lm: the architecture of a from-scratch model: qwen2, qwen3 or llama."},
		{Name: "hidden_size", Default: int64(64), Check: "[8,131072]", Doc: "lm: a from-scratch model's width (hidden_size); a multiple of num_attention_heads."},
		{Name: "num_hidden_layers", Default: int64(2), Check: "[1,1024]", Doc: "lm: a from-scratch model's decoder layers."},
		{Name: "num_attention_heads", Default: int64(4), Check: "[1,1024]", Doc: "lm: a from-scratch model's query heads."},
		{Name: "num_key_value_heads", Default: int64(2), Check: "[1,1024]", Doc: "lm: a from-scratch model's key/value heads (grouped-query attention); divides num_attention_heads."},
		{Name: "intermediate_size", Default: int64(256), Check: "[1,524288]", Doc: "lm: a from-scratch model's MLP width."},
		{Name: "rope_theta", Default: 0.0, Check: "[0,1e12]", Doc: "lm: a from-scratch model's rotary base (0: the architecture's, 10,000 for llama, 1,000,000 for qwen2/qwen3). A small base (100) gives a short-context model more rotary frequencies that tell near positions apart."},
		{Name: "vocab", Default: "char", Doc: "lm: a from-scratch model's vocabulary: \"char\" (one token a character) or a directory holding a tokenizer.json."},
		{Name: "chat_format", Default: "auto", Check: "oneof=auto|chatml|llama3|template", Doc: "lm: how chats become text: \"chatml\" or \"llama3\" (prefix-preserving, what multi-turn RL needs), \"template\" (the model's own chat_template), \"auto\" (llama3 for Llama-3 tokenizers, else chatml)."},
	}
}

// ArchConfig is the model configuration of a from-scratch agent (its
// vocabulary size taken from agent.vocab), or of agent.model's directory.
func ArchConfig(c agents.Config) (*hf.Config, error) {
	if dir := c.String("model"); dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			return nil, fmt.Errorf("agent.model: %s is not a model directory: %v", dir, err)
		}
		return hf.ParseConfig(b, filepath.Join(dir, "config.json"))
	}
	tok, err := vocabTokenizer(c.String("vocab"))
	if err != nil {
		return nil, err
	}
	return archConfig(c, tok.VocabSize())
}

func archConfig(c agents.Config, vocab int) (*hf.Config, error) {
	arch, err := hf.ParseArch(c.String("arch"))
	if err != nil {
		return nil, fmt.Errorf("agent.arch: %v", err)
	}
	h, heads, kv := int(c.Int("hidden_size")), int(c.Int("num_attention_heads")), int(c.Int("num_key_value_heads"))
	switch {
	case heads < 1 || h%heads != 0:
		return nil, fmt.Errorf("agent.hidden_size: %d is not a multiple of agent.num_attention_heads %d", h, heads)
	case kv < 1 || heads%kv != 0:
		return nil, fmt.Errorf("agent.num_key_value_heads: %d does not divide agent.num_attention_heads %d", kv, heads)
	case (h/heads)%2 != 0:
		return nil, fmt.Errorf("agent.hidden_size: the head size hidden_size/num_attention_heads = %d must be even (rotary embeddings rotate pairs)", h/heads)
	}
	cfg, err := hf.NewConfig(arch, vocab, h, int(c.Int("intermediate_size")), int(c.Int("num_hidden_layers")), heads, kv, 0, true)
	if err != nil {
		return nil, fmt.Errorf("agent.hidden_size: the model these sizes make: %v", err)
	}
	if theta := c.Float("rope_theta"); theta != 0 {
		if err := cfg.Set("rope_theta", theta); err != nil {
			return nil, fmt.Errorf("agent.rope_theta: %v", err)
		}
	}
	return cfg, nil
}

// vocabTokenizer is agent.vocab's tokenizer.
func vocabTokenizer(v string) (*tokenizer.Tokenizer, error) {
	if v == "" || v == "char" {
		return tokenizer.NewChar(Charset, nil)
	}
	tok, err := tokenizer.Load(v)
	if err != nil {
		return nil, fmt.Errorf("agent.vocab: %v", err)
	}
	return tok, nil
}

// Policy is a built lm agent: the model on its device, its tokenizer, its
// chat format and the ids that end an answer.
type Policy struct {
	Model     *lm.Model
	Tokenizer *tokenizer.Tokenizer
	Renderer  chat.Renderer
	StopIDs   []int
	// Format names the chat format in use ("chatml", "llama3", "template").
	Format string
}

// Open builds the agent of c on dev: loads agent.model, or makes a
// from-scratch model initialised from seed. memoryLimit bounds the model's
// plans (0: unchecked).
func Open(c agents.Config, dev gpu.Device, seed uint64, memoryLimit int64) (*Policy, error) {
	p := &Policy{}
	var err error
	if dir := c.String("model"); dir != "" {
		if p.Model, err = lm.Load(dev, dir, lm.LoadOptions{MemoryLimit: memoryLimit}); err != nil {
			return nil, fmt.Errorf("agent.model: %w", err)
		}
		if p.Tokenizer, err = tokenizer.Load(dir); err != nil {
			return nil, fmt.Errorf("agent.model: %w", err)
		}
	} else {
		if p.Tokenizer, err = vocabTokenizer(c.String("vocab")); err != nil {
			return nil, err
		}
		cfg, err := archConfig(c, p.Tokenizer.VocabSize())
		if err != nil {
			return nil, err
		}
		if p.Model, err = lm.New(dev, cfg, memoryLimit); err != nil {
			return nil, err
		}
		p.Model.Init(seed)
	}
	if p.Model.Config.VocabSize < p.Tokenizer.VocabSize() {
		return nil, fmt.Errorf("the tokenizer has %d tokens, more than the model's vocabulary of %d", p.Tokenizer.VocabSize(), p.Model.Config.VocabSize)
	}
	if err := p.chooseFormat(c.String("chat_format")); err != nil {
		return nil, err
	}
	return p, nil
}

// chooseFormat sets the renderer and the stop ids of a chat format.
func (p *Policy) chooseFormat(format string) error {
	tok := p.Tokenizer
	_, isLlama3 := tok.TokenID("<|eot_id|>")
	if format == "auto" {
		format = "chatml"
		if isLlama3 {
			format = "llama3"
		}
	}
	stop := func(names ...string) {
		for _, n := range names {
			if id, ok := tok.TokenID(n); ok {
				p.StopIDs = append(p.StopIDs, id)
			}
		}
		if eos, ok := tok.EOS(); ok && !containsInt(p.StopIDs, eos.ID) {
			p.StopIDs = append(p.StopIDs, eos.ID)
		}
	}
	switch format {
	case "chatml":
		if _, ok := tok.TokenID("<|im_end|>"); !ok {
			return errors.New("agent.chat_format: chatml needs the tokens <|im_start|> and <|im_end|>, which this tokenizer lacks; try llama3 or template")
		}
		p.Renderer = chat.NewChatML(chat.ChatMLOptions{})
		stop("<|im_end|>")
	case "llama3":
		if !isLlama3 {
			return errors.New("agent.chat_format: llama3 needs the token <|eot_id|>, which this tokenizer lacks; try chatml or template")
		}
		p.Renderer = chat.NewLlama3(chat.Llama3Options{})
		stop("<|eot_id|>")
	case "template":
		src := tok.ChatTemplate()
		if strings.TrimSpace(src) == "" {
			return errors.New("agent.chat_format: the tokenizer has no chat_template; use chatml or llama3")
		}
		tmpl, err := chat.Compile(src)
		if err != nil {
			return fmt.Errorf("agent.chat_format: the model's chat_template: %w", err)
		}
		r := templateRenderer{t: tmpl}
		if b, ok := tok.BOS(); ok {
			r.o.BOSToken = b.Token
		}
		if e, ok := tok.EOS(); ok {
			r.o.EOSToken = e.Token
		}
		p.Renderer = r
		stop("<|im_end|>", "<|eot_id|>")
	}
	if len(p.StopIDs) == 0 {
		return fmt.Errorf("agent.chat_format %s: the tokenizer has no end-of-turn or end-of-text token to stop an answer at", format)
	}
	p.Format = format
	return nil
}

type templateRenderer struct {
	t *chat.Template
	o chat.Options
}

func (r templateRenderer) Render(m []chat.Message, gen bool) (string, error) {
	o := r.o
	o.AddGenerationPrompt = gen
	return r.t.Render(m, o)
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
