package sft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/envs/tasks"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// Shape is a from-scratch model's size.
type Shape struct {
	Arch                                         string
	Hidden, Intermediate, Layers, Heads, KVHeads int
	Context                                      int // max_position_embeddings
}

// DefaultShape is the small Llama-style model the presets start from.
var DefaultShape = Shape{Arch: "llama", Hidden: 128, Intermediate: 384, Layers: 2, Heads: 4, KVHeads: 4, Context: 4096}

// Job is a whole supervised run: data, model, training, evaluation and
// the model directory it writes.
type Job struct {
	Data          string  // JSONL transcripts
	HeldOut       string  // JSONL transcripts for the held-out loss ("": HeldOutFrac of Data)
	HeldOutFrac   float64 // used when HeldOut is ""
	SkipBad       bool    // skip malformed transcripts (counted) instead of failing
	Model         string  // model directory to start from ("": a new model)
	Shape         Shape   // a new model's shape (char tokenizer)
	InitSeed      uint64
	Out           string // model directory to write ("": none)
	MaxLength     int    // tokens per example (0: the model's context)
	Train         TrainOptions
	Threads       int
	TimeLimit     time.Duration // stop training after this long, keeping what was learnt (0: none)
	Eval          *EvalOptions  // nil: no task evaluation
	EvalTasksFile string
	Log           io.Writer
}

// Outcome is what a job measured.
type Outcome struct {
	Result          Result
	TrainExamples   int
	HeldOutExamples int
	Skipped         []BadLine
	Params          int
	Eval            *Evaluation
}

// Setup is a model with its tokenizer, renderer and end-of-turn id.
type Setup struct {
	Model     *lm.Model
	Tokenizer *tokenizer.Tokenizer
	Renderer  chat.Renderer
	EndOfTurn int
}

// Open loads dir, or makes a new model of shape with the character
// tokenizer when dir is "". The renderer is ChatML (the prefix-preserving
// format the RL trainer uses for multi-turn episodes).
func Open(dev gpu.Device, dir string, shape Shape, seed uint64) (*Setup, error) {
	s := &Setup{Renderer: chat.NewChatML(chat.ChatMLOptions{})}
	var err error
	if dir != "" {
		if s.Model, err = lm.Load(dev, dir, lm.LoadOptions{}); err != nil {
			return nil, err
		}
		if s.Tokenizer, err = tokenizer.Load(dir); err != nil {
			return nil, err
		}
	} else {
		if s.Tokenizer, err = tokenizer.NewChar("", nil); err != nil {
			return nil, err
		}
		arch, err := hf.ParseArch(shape.Arch)
		if err != nil {
			return nil, err
		}
		cfg, err := hf.NewConfig(arch, s.Tokenizer.VocabSize(), shape.Hidden, shape.Intermediate, shape.Layers, shape.Heads, shape.KVHeads, 0, true)
		if err != nil {
			return nil, err
		}
		if shape.Context > 0 {
			cfg.MaxPositions = shape.Context
		}
		if s.Model, err = lm.New(dev, cfg, 0); err != nil {
			return nil, err
		}
		s.Model.Init(seed)
	}
	id, ok := s.Tokenizer.TokenID("<|im_end|>")
	if !ok {
		return nil, errors.New("the tokenizer has no <|im_end|> token to end a ChatML turn with")
	}
	s.EndOfTurn = id
	return s, nil
}

// Save writes the model and its tokenizer into dir.
func (s *Setup) Save(dir string) error {
	if err := s.Model.Save(dir, hf.SaveOptions{From: s.Model.Source}); err != nil {
		return err
	}
	if s.Model.Source == "" {
		return s.Tokenizer.Save(dir)
	}
	return nil
}

func (j *Job) logf(format string, args ...any) {
	if j.Log != nil {
		fmt.Fprintf(j.Log, format, args...)
	}
}

// Run does the job.
func (j *Job) Run(ctx context.Context) (Outcome, error) {
	var out Outcome
	dev := gpu.NewCPU(j.Threads)
	defer dev.Close()
	s, err := Open(dev, j.Model, j.Shape, j.InitSeed)
	if err != nil {
		return out, err
	}
	out.Params = s.Model.NumParams()
	maxLen := s.Model.Config.MaxPositions
	if j.MaxLength > 0 {
		maxLen = min(maxLen, j.MaxLength)
	}
	enc := Encoder{Renderer: s.Renderer, Tokenizer: s.Tokenizer, EndOfTurn: s.EndOfTurn, MaxLength: maxLen}
	load := func(path string) ([]Example, error) {
		ts, bad, err := ReadFile(path, j.SkipBad)
		if err != nil {
			return nil, err
		}
		exs, bad2, err := enc.EncodeAll(ts, j.SkipBad)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out.Skipped = append(out.Skipped, append(bad, bad2...)...)
		for _, b := range append(bad, bad2...) {
			j.logf("skipped %s:%d: %v\n", path, b.Line, b.Err)
		}
		return exs, nil
	}
	train, err := load(j.Data)
	if err != nil {
		return out, err
	}
	var held []Example
	if j.HeldOut != "" {
		if held, err = load(j.HeldOut); err != nil {
			return out, err
		}
	} else if j.HeldOutFrac > 0 {
		if j.HeldOutFrac >= 1 {
			return out, fmt.Errorf("the held-out fraction must be below 1, got %v", j.HeldOutFrac)
		}
		r := rand.New(rand.NewPCG(j.Train.Seed, 0x68656c64)) // "held"
		r.Shuffle(len(train), func(a, b int) { train[a], train[b] = train[b], train[a] })
		k := int(math.Round(j.HeldOutFrac * float64(len(train))))
		if k >= len(train) {
			return out, fmt.Errorf("holding out %d of %d examples leaves none to train on", k, len(train))
		}
		held, train = train[:k], train[k:]
	}
	out.TrainExamples, out.HeldOutExamples = len(train), len(held)
	j.logf("sft: %d parameters, %d training and %d held-out examples, %d skipped\n", out.Params, len(train), len(held), len(out.Skipped))
	trainCtx := ctx
	if j.TimeLimit > 0 {
		var cancel context.CancelFunc
		trainCtx, cancel = context.WithTimeout(ctx, j.TimeLimit)
		defer cancel()
	}
	out.Result, err = Train(trainCtx, s.Model, train, held, j.Train, func(p Progress) {
		if p.Step == 1 || !math.IsNaN(p.HeldOut) || p.Step%50 == 0 {
			j.logf("step %d/%d epoch %d lr %.2e loss %.4f grad_norm %.3f held_out %.4f tokens %d %.0fs\n",
				p.Step, p.Steps, p.Epoch, p.LR, p.Loss, p.GradNorm, p.HeldOut, p.Tokens, p.Elapsed.Seconds())
		}
	})
	if err != nil {
		return out, err
	}
	if j.Out != "" {
		if err := os.MkdirAll(filepath.Dir(j.Out), 0o755); err != nil {
			return out, err
		}
		if err := s.Save(j.Out); err != nil {
			return out, fmt.Errorf("saving the model: %w", err)
		}
		j.logf("sft: wrote %s\n", j.Out)
	}
	if j.Eval != nil {
		rows, err := tasks.LoadTasks(j.EvalTasksFile)
		if err != nil {
			return out, err
		}
		o := *j.Eval
		o.Tokenizer, o.Renderer, o.StopIDs = s.Tokenizer, s.Renderer, []int{s.EndOfTurn}
		if o.MaxPromptLength == 0 {
			o.MaxPromptLength = maxLen - max(o.MaxResponseLength, 1)
		}
		ev, err := Evaluate(ctx, s.Model, rows, o)
		if err != nil {
			return out, err
		}
		out.Eval = &ev
	}
	return out, nil
}

var _ textrl.Tokenizer = (*tokenizer.Tokenizer)(nil)
