package lm

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
)

// GenerateOptions are `lm generate`'s flags. Temperature, TopP and TopK
// are nil when not given: the model's generation_config.json decides, or
// the defaults (1, off, off).
type GenerateOptions struct {
	Model     string
	Prompt    string
	Chat      bool
	System    string
	MaxTokens int
	// Temperature, TopP, TopK: nil when not given on the command line.
	Temperature, TopP *float64
	TopK              *int
	Seed              *uint64
	Stop              []string
	chatFlags
	deviceFlags
}

func parseGenerate(args []string) (*GenerateOptions, error) {
	o := &GenerateOptions{}
	var temp, topP float64
	var topK int
	var seed uint64
	var stops stopList
	fs := cmdutil.NewFlags("lm generate", "--model DIR --prompt TEXT [--chat] [--max-tokens N] [--temperature T] [--top-p P] [--top-k K] [--seed S] [--stop STR]...",
		"generate a completion of a prompt, streamed to standard output as it is sampled")
	fs.StringVar(&o.Model, "model", "", "the model `directory`")
	fs.StringVar(&o.Prompt, "prompt", "", "the prompt `text` (with --chat: the user's message)")
	fs.BoolVar(&o.Chat, "chat", false, "the prompt is a user's message, rendered by the chat format with the assistant's turn opened")
	fs.StringVar(&o.System, "system", "", "with --chat: a system message first")
	fs.IntVar(&o.MaxTokens, "max-tokens", 256, "the most tokens to generate")
	fs.Float64Var(&temp, "temperature", 1, "sampling temperature; 0 picks the likeliest token (default: generation_config.json's, else 1)")
	fs.Float64Var(&topP, "top-p", 1, "keep the likeliest tokens holding this much probability; 1: all (default: generation_config.json's)")
	fs.IntVar(&topK, "top-k", 0, "keep the K likeliest tokens; 0: all (default: generation_config.json's)")
	fs.Uint64Var(&seed, "seed", 0, "seed of the sampling (default: a random one, printed at the end)")
	fs.Var(&stops, "stop", "end the completion where this `text` appears (it is not printed); repeatable")
	o.chatFlags.add(fs)
	o.deviceFlags.add(fs)
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "temperature":
			o.Temperature = &temp
		case "top-p":
			o.TopP = &topP
		case "top-k":
			o.TopK = &topK
		case "seed":
			o.Seed = &seed
		}
	})
	o.Stop = stops
	switch {
	case len(rest) > 0:
		return nil, cmdutil.Usagef("lm generate: unexpected argument %q (give the prompt with --prompt)", rest[0])
	case o.Model == "":
		return nil, &cmdutil.UsageError{Err: errors.New("lm generate needs --model DIR"), Usage: fs.Usage()}
	case o.Prompt == "":
		return nil, &cmdutil.UsageError{Err: errors.New("lm generate needs --prompt TEXT"), Usage: fs.Usage()}
	case o.MaxTokens < 1:
		return nil, cmdutil.Usagef("lm generate: --max-tokens must be at least 1, not %d", o.MaxTokens)
	case o.Temperature != nil && !(temp >= 0 && !math.IsInf(temp, 0)):
		return nil, cmdutil.Usagef("lm generate: --temperature must be 0 (greedy) or positive, not %v", temp)
	case o.TopP != nil && !(topP > 0 && topP <= 1):
		return nil, cmdutil.Usagef("lm generate: --top-p must lie in (0, 1], not %v", topP)
	case o.TopK != nil && topK < 0:
		return nil, cmdutil.Usagef("lm generate: --top-k must be 0 (all) or positive, not %d", topK)
	case !o.Chat && (o.System != "" || len(o.Vars) > 0):
		return nil, cmdutil.Usagef("lm generate: --system and --var apply to --chat only")
	}
	if err := o.chatFlags.check("generate"); err != nil {
		return nil, err
	}
	return o, o.deviceFlags.check("generate")
}

// stopList is --stop's texts.
type stopList []string

func (s *stopList) String() string { return strings.Join(*s, ", ") }

func (s *stopList) Set(v string) error {
	if v == "" {
		return errors.New("a stop text cannot be empty")
	}
	*s = append(*s, v)
	return nil
}

func runGenerate(ctx context.Context, o GenerateOptions, stdout, stderr io.Writer) error {
	tok, err := loadTokenizer(o.Model)
	if err != nil {
		return err
	}
	text := o.Prompt
	special := true
	if o.Chat {
		r, err := newRenderer(o.Model, tok, o.chatFlags, true)
		if err != nil {
			return err
		}
		var msgs []chat.Message
		if o.System != "" {
			msgs = append(msgs, chat.Message{Role: "system", Content: o.System})
		}
		if text, err = r.render(append(msgs, chat.Message{Role: "user", Content: o.Prompt})); err != nil {
			return cmdutil.Configf("%v", err)
		}
		special = false
	}
	var prompt []int32
	for _, id := range tok.Encode(text, special) {
		prompt = append(prompt, int32(id))
	}
	if len(prompt) == 0 {
		return cmdutil.Usagef("lm generate: the prompt holds no tokens")
	}
	dev, err := o.open()
	if err != nil {
		return err
	}
	defer dev.Close()
	m, err := loadModel(dev, o.Model)
	if err != nil {
		return err
	}
	c := m.Config
	if len(prompt) >= c.MaxPositions {
		return cmdutil.Configf("lm generate: the prompt is %d tokens, and the model's context is %d (prompt and completion); shorten the prompt", len(prompt), c.MaxPositions)
	}
	if tv := tok.VocabSize(); tv > c.VocabSize {
		return cmdutil.Configf("%s: the tokenizer has %d tokens but the model's vocabulary only %d (a tokenizer from another model?)", o.Model, tv, c.VocabSize)
	}
	gen, err := hf.ReadGenerationConfig(o.Model, c.VocabSize)
	if err != nil {
		return cmdutil.Configf("%v", err)
	}
	opt := sampling(o, gen)
	opt.StopIDs = stopIDs(c, gen, tok)
	seed := rand.Uint64()
	if o.Seed != nil {
		seed = *o.Seed
	}
	opt.Seeds = []uint64{seed}
	maxLen := min(c.MaxPositions, len(prompt)+o.MaxTokens)
	g, err := m.NewGenerator(1, maxLen)
	if err != nil {
		return cmdutil.Configf("lm generate: %v", err)
	}

	out := newStreamer(stdout, tok, o.Stop)
	var werr error
	opt.OnToken = func(_ int, id int32, _ float32) {
		if !slices.Contains(opt.StopIDs, id) && werr == nil { // the end-of-sequence token is not printed
			werr = out.add(int(id))
		}
	}
	opt.Stop = func(int, []int32) bool { return out.stopped || werr != nil || ctx.Err() != nil }
	start := time.Now()
	res, err := g.Generate([][]int32{prompt}, opt)
	if err != nil {
		return cmdutil.Configf("lm generate: %v", err)
	}
	if werr == nil {
		werr = out.end()
	}
	if werr != nil {
		return fmt.Errorf("lm generate: writing the completion: %v", werr)
	}
	if err := interrupted(ctx); err != nil {
		return err
	}
	finish := string(res[0].Finish)
	if out.stopped {
		finish = "stop text"
	}
	sec := time.Since(start).Seconds()
	fmt.Fprintf(stderr, "[%d prompt tokens, %d generated (%s), %.1f tokens/s, seed %d]\n", len(prompt), len(res[0].Tokens), finish, float64(len(res[0].Tokens))/sec, seed)
	return nil
}

// sampling is the flags' sampling settings, each one not given taken from
// generation_config.json where it says.
func sampling(o GenerateOptions, gen *hf.GenerationConfig) lm.SampleOptions {
	opt := lm.SampleOptions{MaxNewTokens: o.MaxTokens, Temperature: 1}
	if gen != nil {
		if gen.Temperature != nil && *gen.Temperature >= 0 {
			opt.Temperature = *gen.Temperature
		}
		if gen.TopP != nil && *gen.TopP > 0 && *gen.TopP <= 1 {
			opt.TopP = *gen.TopP
		}
		if gen.TopK != nil && *gen.TopK >= 0 {
			opt.TopK = *gen.TopK
		}
	}
	if o.Temperature != nil {
		opt.Temperature = *o.Temperature
	}
	if o.TopP != nil {
		opt.TopP = *o.TopP
	}
	if o.TopK != nil {
		opt.TopK = *o.TopK
	}
	return opt
}

// stopIDs are the ids that end a completion: config.json's and
// generation_config.json's eos_token_id and the tokenizer's end token.
func stopIDs(c *hf.Config, gen *hf.GenerationConfig, tok *tokenizer.Tokenizer) []int32 {
	var ids []int32
	add := func(id int) {
		if id >= 0 && id < c.VocabSize && !slices.Contains(ids, int32(id)) {
			ids = append(ids, int32(id))
		}
	}
	for _, id := range c.EOS {
		add(id)
	}
	if gen != nil {
		for _, id := range gen.EOS {
			add(id)
		}
	}
	if t, ok := tok.EOS(); ok {
		add(t.ID)
	}
	return ids
}

// streamer prints a completion as its tokens come: whole characters only
// (the stream decoder holds back a character's first bytes), and nothing
// that could be the start of a stop text until it is known not to be. On
// a terminal the characters a terminal would act on (escape sequences a
// model might write) are shown escaped; elsewhere the text is written as
// it is.
type streamer struct {
	w       io.Writer
	dec     *tokenizer.StreamDecoder
	stops   []string
	pending string // decoded, not yet printed
	stopped bool
	tty     bool
	last    byte
}

func newStreamer(w io.Writer, tok *tokenizer.Tokenizer, stops []string) *streamer {
	s := &streamer{w: w, dec: tok.NewStreamDecoder(tokenizer.DecodeOptions{}), stops: stops}
	if f, ok := w.(*os.File); ok && term.IsTerminal(f.Fd()) {
		s.tty = true
	}
	return s
}

func (s *streamer) add(id int) error {
	if s.stopped {
		return nil
	}
	s.pending += s.dec.Add(id)
	return s.emit(false)
}

// end prints what is held back (an incomplete character as U+FFFD), and a
// newline on a terminal.
func (s *streamer) end() error {
	if !s.stopped {
		s.pending += s.dec.Flush()
		if err := s.emit(true); err != nil {
			return err
		}
	}
	if s.tty && s.last != '\n' {
		_, err := io.WriteString(s.w, "\n")
		return err
	}
	return nil
}

// emit prints pending up to a stop text (and stops there), or up to the
// longest tail that could begin one.
func (s *streamer) emit(final bool) error {
	cut, hold := len(s.pending), 0
	for _, st := range s.stops {
		if i := strings.Index(s.pending, st); i >= 0 && i < cut {
			cut, s.stopped = i, true
		}
	}
	if !s.stopped && !final {
		for _, st := range s.stops {
			for k := min(len(st)-1, len(s.pending)); k > hold; k-- {
				if strings.HasSuffix(s.pending, st[:k]) {
					hold = k
					break
				}
			}
		}
		cut -= hold
	}
	text := s.pending[:cut]
	s.pending = s.pending[cut:]
	if text == "" {
		return nil
	}
	s.last = text[len(text)-1]
	if s.tty {
		text = cleanForTerminal(text)
	}
	_, err := io.WriteString(s.w, text)
	return err
}

// cleanForTerminal escapes what a terminal would act on, keeping newlines
// and tabs.
func cleanForTerminal(s string) string {
	parts := strings.Split(s, "\t")
	for i, p := range parts {
		parts[i] = termtext.CleanText(p)
	}
	return strings.Join(parts, "\t")
}
