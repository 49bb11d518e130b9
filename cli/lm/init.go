package lm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/internal/safetensors"
)

// InitOptions are `lm init`'s flags: a model's shape and where to write it.
type InitOptions struct {
	Arch                                                  hf.Arch
	Hidden, Layers, Heads, KVHeads, Intermediate, HeadDim int
	MaxPositions                                          int
	Tied                                                  bool
	// Vocab is "char" (a character tokenizer made here) or a directory
	// whose tokenizer files are copied.
	Vocab string
	Seed  uint64
	DType safetensors.DType
	Out   string
}

func parseInit(args []string) (*InitOptions, error) {
	o := &InitOptions{}
	var arch, dtype string
	fs := cmdutil.NewFlags("lm init", "--arch qwen2|qwen3|llama [options] --out DIR",
		"make a language model from scratch (random weights, as transformers initialises them) in the Hugging Face layout")
	fs.StringVar(&arch, "arch", "", "the model family: qwen2 (q/k/v biases), qwen3 (q/k norms) or llama (Llama-3, SmolLM)")
	fs.IntVar(&o.Hidden, "hidden", 256, "hidden size (the residual stream's width)")
	fs.IntVar(&o.Layers, "layers", 4, "decoder layers")
	fs.IntVar(&o.Heads, "heads", 4, "attention (query) heads")
	fs.IntVar(&o.KVHeads, "kv-heads", 0, "key/value heads, dividing --heads (0: half the heads when even, else all)")
	fs.IntVar(&o.Intermediate, "intermediate", 0, "the MLP's width (0: 8/3 of --hidden, rounded up to a multiple of 32)")
	fs.IntVar(&o.HeadDim, "head-dim", 0, "width of a head (0: --hidden / --heads)")
	fs.IntVar(&o.MaxPositions, "max-positions", 4096, "the context: the most tokens a sequence may hold")
	fs.BoolVar(&o.Tied, "tied", true, "the output head shares the token embedding (tie_word_embeddings)")
	fs.StringVar(&o.Vocab, "vocab", "char", "the tokenizer: `char` (printable ASCII, tab, newline and ChatML's special tokens, with a ChatML chat template) or a model directory whose tokenizer files are copied (the vocabulary size is taken from it)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the initial weights")
	fs.StringVar(&dtype, "dtype", "f32", "how the weights are stored: f32 or bf16")
	fs.StringVar(&o.Out, "out", "", "the model directory to write (must not exist, or be empty)")
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, cmdutil.Usagef("lm init: unexpected argument %q", rest[0])
	}
	if arch == "" {
		return nil, &cmdutil.UsageError{Err: errors.New("lm init needs --arch: qwen2, qwen3 or llama"), Usage: fs.Usage()}
	}
	if o.Arch, err = hf.ParseArch(arch); err != nil {
		return nil, cmdutil.Usagef("lm init: --arch: %v", err)
	}
	if o.Out == "" {
		return nil, &cmdutil.UsageError{Err: errors.New("lm init needs --out DIR, the model directory to write"), Usage: fs.Usage()}
	}
	switch strings.ToLower(dtype) {
	case "f32", "float32":
		o.DType = safetensors.F32
	case "bf16", "bfloat16":
		o.DType = safetensors.BF16
	default:
		return nil, cmdutil.Usagef("lm init: --dtype %q: choose f32 or bf16", dtype)
	}
	for _, f := range []struct {
		name string
		v    int
		min  int
	}{{"hidden", o.Hidden, 1}, {"layers", o.Layers, 1}, {"heads", o.Heads, 1}, {"kv-heads", o.KVHeads, 0},
		{"intermediate", o.Intermediate, 0}, {"head-dim", o.HeadDim, 0}, {"max-positions", o.MaxPositions, 2}} {
		if f.v < f.min {
			return nil, cmdutil.Usagef("lm init: --%s must be at least %d, not %d", f.name, f.min, f.v)
		}
	}
	if o.KVHeads == 0 {
		o.KVHeads = o.Heads
		if o.Heads%2 == 0 {
			o.KVHeads = o.Heads / 2
		}
	}
	if o.Heads%o.KVHeads != 0 {
		return nil, cmdutil.Usagef("lm init: --kv-heads %d must divide --heads %d", o.KVHeads, o.Heads)
	}
	if o.HeadDim == 0 && o.Hidden%o.Heads != 0 {
		return nil, cmdutil.Usagef("lm init: --hidden %d is not a multiple of --heads %d; give --head-dim", o.Hidden, o.Heads)
	}
	if o.Intermediate == 0 {
		o.Intermediate = (8*o.Hidden/3 + 31) &^ 31
	}
	return o, nil
}

func runInit(ctx context.Context, o InitOptions, stdout io.Writer) error {
	if err := checkOut(o.Out); err != nil {
		return err
	}
	tok, eos, bos, err := initTokenizer(o.Vocab)
	if err != nil {
		return err
	}
	cfg, err := hf.NewConfig(o.Arch, tok.VocabSize(), o.Hidden, o.Intermediate, o.Layers, o.Heads, o.KVHeads, o.HeadDim, o.Tied)
	if err != nil {
		return cmdutil.Configf("lm init: %v", strings.TrimPrefix(err.Error(), "new config: "))
	}
	for _, kv := range []struct {
		key string
		v   any
	}{{"max_position_embeddings", o.MaxPositions}, {"eos_token_id", eos}, {"bos_token_id", bos}} {
		if err := cfg.Set(kv.key, kv.v); err != nil {
			return cmdutil.Configf("lm init: %v", strings.TrimPrefix(err.Error(), "config: "))
		}
	}
	dev := gpu.NewCPU(0)
	defer dev.Close()
	m, err := lm.New(dev, cfg, cmdutil.MemoryLimit())
	if err != nil {
		return cmdutil.Configf("lm init: %v", err)
	}
	m.Init(o.Seed)
	if err := interrupted(ctx); err != nil {
		return err
	}

	// Written beside the target and renamed into place: a model directory
	// appears whole or not at all.
	parent := filepath.Dir(o.Out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return cmdutil.Configf("lm init: --out %s: %v", o.Out, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(o.Out)+".tmp-")
	if err != nil {
		return cmdutil.Configf("lm init: --out %s: %v", o.Out, err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	from := ""
	if o.Vocab != "char" {
		from = o.Vocab
	}
	if err := m.Save(tmp, hf.SaveOptions{DType: o.DType, From: from}); err != nil {
		return fmt.Errorf("lm init: %v", err)
	}
	if from == "" {
		if err := tok.Save(tmp); err != nil {
			return fmt.Errorf("lm init: %v", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("lm init: %v", err)
	}
	os.Remove(o.Out) // an empty directory, checked above
	if err := os.Rename(tmp, o.Out); err != nil {
		return fmt.Errorf("lm init: %v", err)
	}
	vocab := fmt.Sprintf("%d tokens from %s", cfg.VocabSize, o.Vocab)
	if from == "" {
		vocab = fmt.Sprintf("%d characters and specials", cfg.VocabSize)
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %s parameters (hidden %d, %d layers, %d heads and %d key-value heads of %d, intermediate %d, context %d, vocabulary of %s), %s weights, seed %d\n",
		o.Out, cfg.Arch, lm.ParamCount(cfg.Params()), cfg.Hidden, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.Intermediate, cfg.MaxPositions,
		vocab, map[safetensors.DType]string{safetensors.F32: "float32", safetensors.BF16: "bfloat16"}[o.DType], o.Seed)
	return nil
}

// checkOut refuses an --out that exists and is not an empty directory.
func checkOut(out string) error {
	st, err := os.Stat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return cmdutil.Configf("lm init: --out %s: %v", out, err)
	}
	if !st.IsDir() {
		return cmdutil.Configf("lm init: --out %s exists and is not a directory", out)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return cmdutil.Configf("lm init: --out %s: %v", out, err)
	}
	if len(entries) > 0 {
		return cmdutil.Configf("lm init: --out %s exists and is not empty; choose a new directory (nothing is overwritten)", out)
	}
	return nil
}

// initTokenizer makes the character tokenizer (with ChatML's template) or
// reads the one in dir, and returns it with the ids that end a sequence
// and the one that begins it (nil: none).
func initTokenizer(vocab string) (tok *tokenizer.Tokenizer, eos []int, bos any, err error) {
	if vocab == "char" {
		tok, err = tokenizer.NewChar("", nil)
		if err != nil {
			return nil, nil, nil, err
		}
		tok.SetChatTemplate(chat.ChatMLTemplate)
		for _, s := range []string{"<|endoftext|>", "<|im_end|>"} {
			id, _ := tok.TokenID(s)
			eos = append(eos, id)
		}
		return tok, eos, nil, nil
	}
	st, err := os.Stat(vocab)
	if err != nil || !st.IsDir() {
		return nil, nil, nil, cmdutil.Configf("lm init: --vocab %s: want char or a directory holding tokenizer.json", vocab)
	}
	if tok, err = tokenizer.Load(vocab); err != nil {
		return nil, nil, nil, cmdutil.Configf("lm init: --vocab: %v", err)
	}
	if t, ok := tok.EOS(); ok {
		eos = append(eos, t.ID)
	}
	if t, ok := tok.BOS(); ok {
		bos = t.ID
	}
	return tok, eos, bos, nil
}
