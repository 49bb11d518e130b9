package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/internal/safetensors"
)

// The files of a model directory besides the weights.
const (
	ConfigName     = "config.json"
	GenerationName = "generation_config.json"
)

// TokenizerFiles are the tokenizer and chat-template files a model
// directory may hold; Save copies them from the source directory.
var TokenizerFiles = []string{
	"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
	"vocab.json", "merges.txt", "tokenizer.model", "chat_template.jinja", "chat_template.json",
}

// maxConfig bounds config.json and generation_config.json (a few KB).
const maxConfig = 1 << 20

// Model is an opened model directory: its config, and its weights checked
// by name, shape and dtype but not yet read.
type Model struct {
	Dir    string
	Config *Config
	set    *safetensors.Set
	tied   string // the file of a tied model's redundant lm_head.weight, checked on Read
}

// Open reads dir's config.json and opens its weights, checking before any
// value is read that every tensor the config calls for is there with its
// shape, and that none is left over. finite refuses NaN and infinite
// values when they are read.
func Open(dir string, finite bool) (*Model, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	set, err := safetensors.OpenDir(dir, safetensors.Options{Finite: finite})
	if err != nil {
		return nil, err
	}
	m := &Model{Dir: dir, Config: cfg, set: set}
	if err := m.check(); err != nil {
		set.Close()
		return nil, err
	}
	return m, nil
}

// ReadConfig reads and checks dir's config.json alone (no weights are
// opened): what a memory estimate needs before a model is loaded.
func ReadConfig(dir string) (*Config, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("model directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory; a model is a directory holding config.json and model.safetensors", dir)
	}
	cfgPath := filepath.Join(dir, ConfigName)
	b, err := readSmall(cfgPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s has no config.json: not a model directory in the Hugging Face layout", dir)
		}
		return nil, err
	}
	return ParseConfig(b, cfgPath)
}

// check compares the weights' names and shapes with the config's.
func (m *Model) check() error {
	want := map[string]Tensor{}
	for _, t := range m.Config.Tensors() {
		want[t.Name] = t
	}
	for _, t := range m.Config.Tensors() {
		e, f, ok := m.set.Lookup(t.Name)
		if !ok {
			return fmt.Errorf("%s: tensor %s is missing (the config calls for it with shape %v)", m.Dir, t.Name, t.Shape)
		}
		if !slices.Equal(e.Shape, t.Shape) {
			return fmt.Errorf("%s: tensor %s has shape %v; the config calls for %v", f.Path, t.Name, e.Shape, t.Shape)
		}
	}
	for _, name := range m.set.Names() {
		if _, ok := want[name]; ok || ignored.MatchString(name) {
			continue
		}
		e, f, _ := m.set.Lookup(name)
		if name == "lm_head.weight" && m.Config.Tied && slices.Equal(e.Shape, []int{m.Config.VocabSize, m.Config.Hidden}) {
			m.tied = f.Path // allowed when equal to the embedding: Read checks
			continue
		}
		return fmt.Errorf("%s: tensor %s is not part of a %s model with this config (a different architecture or a wrong config.json?)", f.Path, name, m.Config.Arch)
	}
	return nil
}

// ignored are buffers older checkpoints saved that carry no parameters.
var ignored = regexp.MustCompile(`^model\.layers\.[0-9]+\.self_attn\.rotary_emb\.inv_freq$`)

// Float32Bytes is the memory the weights take as float32.
func (m *Model) Float32Bytes() int64 { return m.Config.Params() * 4 }

// Read reads the named tensor (one of Config.Tensors) into dst as float32.
func (m *Model) Read(name string, dst []float32) error {
	if err := m.set.Read(name, dst); err != nil {
		return err
	}
	if name == "model.embed_tokens.weight" && m.tied != "" {
		head := make([]float32, len(dst))
		if err := m.set.Read("lm_head.weight", head); err != nil {
			return err
		}
		for i := range head {
			if head[i] != dst[i] {
				return fmt.Errorf("%s: tensor lm_head.weight differs from model.embed_tokens.weight at index %d, but config.json ties them (tie_word_embeddings)", m.tied, i)
			}
		}
	}
	return nil
}

// DType is the dtype the weights are stored in (that of the embedding).
func (m *Model) DType() safetensors.DType {
	e, _, _ := m.set.Lookup("model.embed_tokens.weight")
	return e.DType
}

// Close closes the weight files.
func (m *Model) Close() error { return m.set.Close() }

// SaveOptions say how Save writes the weights.
type SaveOptions struct {
	DType    safetensors.DType // F32 (the default), BF16 or F16
	MaxShard int64             // bytes per shard; 0: one file
	// From is the directory the model came from: its tokenizer files and
	// generation_config.json are copied when present.
	From string
}

// Save writes a model directory: config.json, the weights (tensors named
// and shaped as cfg.Tensors lists them, in that order), and
// generation_config.json and the tokenizer files from opt.From, or a
// generation_config.json made from the config. Every file is written
// atomically.
func Save(dir string, cfg *Config, tensors []safetensors.Tensor, opt SaveOptions) error {
	specs := cfg.Tensors()
	if len(tensors) != len(specs) {
		return fmt.Errorf("save: %d tensors for a model of %d", len(tensors), len(specs))
	}
	for i, s := range specs {
		t := tensors[i]
		if t.Name != s.Name || !slices.Equal(t.Shape, s.Shape) || int64(len(t.Data)) != s.Elements() {
			return fmt.Errorf("save: tensor %d is %s %v (%d values); the model's is %s %v", i, t.Name, t.Shape, len(t.Data), s.Name, s.Shape)
		}
	}
	dtype := opt.DType
	if dtype == "" {
		dtype = safetensors.F32
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out := *cfg
	if err := out.Set("torch_dtype", map[safetensors.DType]string{safetensors.F32: "float32", safetensors.BF16: "bfloat16", safetensors.F16: "float16"}[dtype]); err != nil {
		return err
	}
	delete(out.raw, "dtype")
	cj, err := out.JSON()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, ConfigName), cj, 0o644); err != nil {
		return err
	}
	if err := safetensors.WriteDir(dir, tensors, map[string]string{"format": "pt"}, dtype, opt.MaxShard); err != nil {
		return err
	}
	copied := false
	if opt.From != "" && !sameDir(opt.From, dir) {
		for _, name := range append([]string{GenerationName}, TokenizerFiles...) {
			ok, err := copyFile(filepath.Join(opt.From, name), filepath.Join(dir, name))
			if err != nil {
				return err
			}
			copied = copied || ok && name == GenerationName
		}
	}
	if _, err := os.Stat(filepath.Join(dir, GenerationName)); copied || err == nil {
		return nil
	}
	gen := map[string]any{"_from_model_config": true}
	if cfg.BOS >= 0 {
		gen["bos_token_id"] = cfg.BOS
	}
	switch len(cfg.EOS) {
	case 0:
	case 1:
		gen["eos_token_id"] = cfg.EOS[0]
	default:
		gen["eos_token_id"] = cfg.EOS
	}
	if cfg.Pad >= 0 {
		gen["pad_token_id"] = cfg.Pad
	}
	gj, _ := json.MarshalIndent(gen, "", "  ")
	return atomicfile.Write(filepath.Join(dir, GenerationName), append(gj, '\n'), 0o644)
}

func sameDir(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// copyFile copies a regular file of at most maxTokenizerFile bytes,
// reporting whether src existed.
func copyFile(src, dst string) (bool, error) {
	st, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() {
		return false, fmt.Errorf("%s is not a regular file", src)
	}
	if st.Size() > maxTokenizerFile {
		return false, fmt.Errorf("%s is %d bytes, more than the %d a tokenizer file may have", src, st.Size(), maxTokenizerFile)
	}
	f, err := os.Open(src)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return true, atomicfile.Stream(dst, 0o644, func(w io.Writer) error {
		_, err := io.Copy(w, io.LimitReader(f, maxTokenizerFile))
		return err
	})
}

// maxTokenizerFile bounds a copied tokenizer file (Qwen's tokenizer.json
// is 11 MB, Llama-3's 9 MB).
const maxTokenizerFile = 256 << 20

// readSmall reads a config-sized regular file.
func readSmall(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxConfig {
		return nil, fmt.Errorf("%s is not a regular file of at most %d bytes", path, maxConfig)
	}
	return os.ReadFile(path)
}

// GenerationConfig is what generation_config.json says about stopping
// and sampling; fields are absent when the file does not give them.
type GenerationConfig struct {
	EOS         []int
	Temperature *float64
	TopP        *float64
	TopK        *int
}

// ReadGenerationConfig reads dir's generation_config.json, when there is
// one (nil, nil otherwise).
func ReadGenerationConfig(dir string, vocab int) (*GenerationConfig, error) {
	path := filepath.Join(dir, GenerationName)
	b, err := readSmall(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f struct {
		EOS         *json.RawMessage `json:"eos_token_id"`
		Temperature *float64         `json:"temperature"`
		TopP        *float64         `json:"top_p"`
		TopK        *int             `json:"top_k"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	g := &GenerationConfig{Temperature: f.Temperature, TopP: f.TopP, TopK: f.TopK}
	if g.EOS, err = idList(f.EOS, "eos_token_id", vocab); err != nil {
		return nil, fmt.Errorf("%s: %v", path, strings.TrimSpace(err.Error()))
	}
	return g, nil
}
