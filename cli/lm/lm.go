// Package lm is `agenttrainer lm`: language models in the Hugging Face layout from the command line — make one from scratch (init), tokenize text and chats, score completions, generate.
package lm

import (
	"bufio"
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
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// Options are `lm`'s command line: exactly one of the subcommands.
type Options struct {
	Init     *InitOptions
	Tokenize *TokenizeOptions
	Score    *ScoreOptions
	Generate *GenerateOptions
	// Stdin is what tokenize and score read (nil: the process's).
	Stdin io.Reader
}

// help is `agenttrainer lm --help`.
const help = "Usage: agenttrainer lm init --arch qwen2|qwen3|llama [options] --out DIR\n" +
	"       agenttrainer lm tokenize --model DIR [--chat [--generation-prompt] [--var k=v]...]\n" +
	"       agenttrainer lm score --model DIR\n" +
	"       agenttrainer lm generate --model DIR --prompt TEXT [--chat] [options]\n\n" +
	"Language models in the Hugging Face layout (Qwen2/2.5, Qwen3, Llama-3, SmolLM): make one from\n" +
	"scratch, tokenize JSON lines of text or chats, score completions (log-probs, teacher-forced),\n" +
	"generate. `agenttrainer lm COMMAND --help` lists a command's options.\n\n" +
	"Bad input (a directory that is not a model, an unknown architecture, a chat template that fails,\n" +
	"ids outside the vocabulary, a prompt longer than the context) exits 2 naming what is wrong.\n\n" +
	"Examples:\n" +
	"  agenttrainer lm init --arch qwen3 --hidden 256 --layers 4 --heads 4 --out tiny\n" +
	"  agenttrainer lm generate --model tiny --prompt \"Once upon a time\" --max-tokens 40 --seed 1\n" +
	"  echo '[{\"role\": \"user\", \"content\": \"hi\"}]' | agenttrainer lm tokenize --model tiny --chat --generation-prompt\n" +
	"  echo '{\"prompt\": \"Once upon\", \"completion\": \" a time\"}' | agenttrainer lm score --model tiny\n"

// Parse reads lm's command line.
func Parse(args []string) (Options, error) {
	var o Options
	if len(args) == 0 {
		return o, &cmdutil.UsageError{Err: errors.New("lm needs a command: init, tokenize, score or generate"), Usage: help}
	}
	var err error
	switch args[0] {
	case "init":
		o.Init, err = parseInit(args[1:])
	case "tokenize":
		o.Tokenize, err = parseTokenize(args[1:])
	case "score":
		o.Score, err = parseScore(args[1:])
	case "generate":
		o.Generate, err = parseGenerate(args[1:])
	case "-h", "-help", "--help", "help":
		return o, &cmdutil.HelpError{Usage: help}
	default:
		return o, &cmdutil.UsageError{Err: fmt.Errorf("lm has no command %q (init, tokenize, score or generate)", args[0]), Usage: help}
	}
	return o, err
}

// Run runs the command Parse read.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	in := o.Stdin
	if in == nil {
		in = os.Stdin
	}
	switch {
	case o.Init != nil:
		return runInit(ctx, *o.Init, stdout)
	case o.Tokenize != nil:
		return runTokenize(ctx, *o.Tokenize, in, stdout)
	case o.Score != nil:
		return runScore(ctx, *o.Score, in, stdout)
	case o.Generate != nil:
		return runGenerate(ctx, *o.Generate, stdout, stderr)
	}
	return &cmdutil.UsageError{Err: errors.New("lm needs a command: init, tokenize, score or generate"), Usage: help}
}

// deviceFlags are the options of the commands that run a model.
type deviceFlags struct {
	Device  string
	Threads int
}

func (d *deviceFlags) add(fs *cmdutil.Flags) {
	fs.StringVar(&d.Device, "device", "cpu", `where the model runs: "cpu", "cuda" or "cuda:N" (a binary built with -tags cuda)`)
	fs.IntVar(&d.Threads, "threads", 0, "CPU threads (0: all cores)")
}

func (d deviceFlags) check(cmd string) error {
	if d.Threads < 0 {
		return cmdutil.Usagef("lm %s: --threads must be 0 (all cores) or more, not %d", cmd, d.Threads)
	}
	return nil
}

// open opens the device.
func (d deviceFlags) open() (gpu.Device, error) {
	dev, _, err := gpu.Open(d.Device, d.Threads, 0)
	if err != nil {
		return nil, cmdutil.Usagef("%s", strings.ReplaceAll(err.Error(), "trainer.device=", "--device "))
	}
	return dev, nil
}

// loadTokenizer reads a model directory's tokenizer; every problem is the
// directory's (exit 2).
func loadTokenizer(dir string) (*tokenizer.Tokenizer, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, &cmdutil.ConfigError{Err: err}
	}
	return tok, nil
}

// checkDir refuses a --model that is not a directory.
func checkDir(dir string) error {
	if dir == "" {
		return cmdutil.Usagef("--model DIR is required: a model directory in the Hugging Face layout")
	}
	st, err := os.Stat(dir)
	if err != nil {
		return cmdutil.Configf("--model %s: %v", dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return cmdutil.Configf("--model %s is not a directory; a model is a directory holding config.json, model.safetensors and tokenizer.json", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); errors.Is(err, fs.ErrNotExist) {
		return cmdutil.Configf("--model %s is not a model directory: it has no config.json (a model directory in the Hugging Face layout holds config.json, model.safetensors and tokenizer.json; `agenttrainer lm init` makes one)", dir)
	}
	return nil
}

// loadModel reads a model directory's weights for inference onto dev,
// within the machine's memory.
func loadModel(dev gpu.Device, dir string) (*lm.Model, error) {
	m, err := lm.Load(dev, dir, lm.LoadOptions{MemoryLimit: cmdutil.MemoryLimit(), Inference: true})
	if err != nil {
		return nil, &cmdutil.ConfigError{Err: err}
	}
	return m, nil
}

// chatFlags choose how a conversation becomes a prompt.
type chatFlags struct {
	Format string // "template" (the model's own), "chatml" or "llama3"
	Vars   vars
}

func (c *chatFlags) add(fs *cmdutil.Flags) {
	fs.StringVar(&c.Format, "format", "template", `chat format: "template" (the model's own chat_template), "chatml" or "llama3"`)
	fs.Var(&c.Vars, "var", "a variable for the chat template, `key=value` (value as JSON if it parses, else a string; e.g. enable_thinking=false); repeatable")
}

func (c chatFlags) check(cmd string) error {
	switch c.Format {
	case "template", "chatml", "llama3":
		return nil
	}
	return cmdutil.Usagef("lm %s: --format %q: choose template, chatml or llama3", cmd, c.Format)
}

// vars are --var's key=value pairs.
type vars map[string]any

func (v *vars) String() string { return "" }

func (v *vars) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, not %q", s)
	}
	if *v == nil {
		*v = vars{}
	}
	(*v)[k] = jsonOrString(val)
	return nil
}

// renderer renders conversations for a tokenizer in the chosen format.
type renderer struct {
	tmpl   *chat.Template
	format chat.Renderer
	opts   chat.Options
	file   string // where the template came from, for messages
}

// newRenderer compiles the model's template (or picks a hand-written
// format); a template that does not compile is the model directory's
// problem (exit 2, naming the file).
func newRenderer(dir string, tok *tokenizer.Tokenizer, c chatFlags, generationPrompt bool) (*renderer, error) {
	r := &renderer{opts: chat.Options{AddGenerationPrompt: generationPrompt, Vars: c.Vars}}
	if t, ok := tok.BOS(); ok {
		r.opts.BOSToken = t.Token
	}
	if t, ok := tok.EOS(); ok {
		r.opts.EOSToken = t.Token
	}
	switch c.Format {
	case "chatml":
		r.format = chat.NewChatML(chat.ChatMLOptions{})
		return r, nil
	case "llama3":
		r.format = chat.NewLlama3(chat.Llama3Options{})
		return r, nil
	}
	r.file = filepath.Join(dir, "tokenizer_config.json")
	if _, err := os.Stat(filepath.Join(dir, "chat_template.jinja")); err == nil {
		r.file = filepath.Join(dir, "chat_template.jinja")
	}
	if tok.ChatTemplate() == "" {
		return nil, cmdutil.Configf("%s has no chat template (tokenizer_config.json's chat_template or chat_template.jinja); use --format chatml or --format llama3", dir)
	}
	t, err := chat.Compile(tok.ChatTemplate())
	if err != nil {
		return nil, cmdutil.Configf("%s: %v", r.file, err)
	}
	r.tmpl = t
	return r, nil
}

// render renders messages; a template error names the template's file.
func (r *renderer) render(msgs []chat.Message) (string, error) {
	if r.format != nil {
		return r.format.Render(msgs, r.opts.AddGenerationPrompt)
	}
	out, err := r.tmpl.Render(msgs, r.opts)
	if err != nil {
		return "", fmt.Errorf("%s: %v", r.file, err)
	}
	return out, nil
}

// maxLine bounds one JSON line of input.
const maxLine = 64 << 20

// lineReader reads JSON lines, numbering them, and says whether more
// input is already at hand (so that batches do not wait for input that has
// not come).
type lineReader struct {
	r    *bufio.Reader
	n    int
	line []byte
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: bufio.NewReaderSize(r, 1<<16)} }

// next returns the next line that is not blank (without its newline), or
// io.EOF.
func (l *lineReader) next() ([]byte, error) {
	for {
		l.line = l.line[:0]
		for {
			chunk, err := l.r.ReadSlice('\n')
			l.line = append(l.line, chunk...)
			if len(l.line) > maxLine {
				return nil, cmdutil.Configf("line %d of the input is longer than %d MiB", l.n+1, maxLine>>20)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF && len(l.line) > 0 {
				break
			}
			if err != nil {
				return nil, err
			}
			break
		}
		l.n++
		if s := strings.TrimSpace(string(l.line)); s != "" {
			return []byte(s), nil
		}
	}
}

// pending reports whether input is buffered (reading more will not wait).
func (l *lineReader) pending() bool { return l.r.Buffered() > 0 }

// lineError is a bad input line: exit 2 naming its number.
func (l *lineReader) errorf(format string, a ...any) error {
	return cmdutil.Configf("line %d of the input: %s", l.n, fmt.Sprintf(format, a...))
}

// interrupted turns a cancelled context into the interrupted error.
func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return fmt.Errorf("lm: %w", cmdutil.ErrInterrupted)
	}
	return nil
}
