package sft

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/agents/lmagent"
	"github.com/agenttrainer/agenttrainer/envs/tasks"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// Job is a supervised phase: data, training, the model directory it
// writes, and an evaluation on held-out tasks.
type Job struct {
	Data        string  // JSONL transcripts
	HeldOut     string  // JSONL transcripts for the held-out loss ("": HeldOutFrac of Data)
	HeldOutFrac float64 // used when HeldOut is ""
	SkipBad     bool    // skip malformed transcripts (counted) instead of failing
	// Agent is the lm agent's [agent] keys: agent.model to start from, or
	// a from-scratch model's shape and vocabulary.
	Agent         agents.Config
	InitSeed      uint64
	Out           string // model directory to write ("": none)
	MaxLength     int    // tokens per example (0: the model's context)
	Train         TrainOptions
	Threads       int
	TimeLimit     time.Duration // stop training after this long, keeping what was learnt (0: none)
	Eval          *EvalOptions  // nil: no task evaluation
	EvalTasksFile string
	// EvalOnly trains nothing: the model is only evaluated.
	EvalOnly bool
	Log      io.Writer
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

// EndOfTurn is the id that ends the policy's answers in its chat format
// (<|im_end|> for ChatML, <|eot_id|> for Llama-3): its first stop id.
func EndOfTurn(p *lmagent.Policy) int { return p.StopIDs[0] }

// Save writes the policy's model into dir, with its tokenizer (a
// from-scratch model's is written; a loaded one's files are copied).
func Save(p *lmagent.Policy, dir string) error {
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return err
	}
	if err := p.Model.Save(dir, hf.SaveOptions{From: p.Model.Source}); err != nil {
		return err
	}
	if p.Model.Source == "" {
		return p.Tokenizer.Save(dir)
	}
	return nil
}

// Run opens the agent's model on the CPU and does the job.
func (j *Job) Run(ctx context.Context) (Outcome, error) {
	dev := gpu.NewCPU(j.Threads)
	defer dev.Close()
	p, err := lmagent.Open(j.Agent, dev, j.InitSeed, 0)
	if err != nil {
		return Outcome{}, err
	}
	return j.RunOn(ctx, p)
}

func (j *Job) logf(format string, args ...any) {
	if j.Log != nil {
		fmt.Fprintf(j.Log, format, args...)
	}
}

// RunOn does the job on a policy already open (a run's, before RL).
func (j *Job) RunOn(ctx context.Context, s *lmagent.Policy) (Outcome, error) {
	var out Outcome
	var err error
	out.Params = s.Model.NumParams()
	maxLen := s.Model.Config.MaxPositions
	if j.MaxLength > 0 {
		maxLen = min(maxLen, j.MaxLength)
	}
	if j.EvalOnly {
		return out, j.evaluate(ctx, s, maxLen, &out)
	}
	enc := Encoder{Renderer: s.Renderer, Tokenizer: s.Tokenizer, EndOfTurn: EndOfTurn(s), MaxLength: maxLen}
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
	// The time limit is the schedule's budget, which Train also stops at
	// (counting the time of a stopped phase it continues).
	j.Train.TimeBudget = j.TimeLimit
	if j.Train.State != "" {
		if _, err := os.Stat(j.Train.State); err == nil {
			j.logf("sft: continuing from %s\n", j.Train.State)
		}
	}
	out.Result, err = Train(ctx, s.Model, train, held, j.Train, func(p Progress) {
		if p.Step == 1 || !math.IsNaN(p.HeldOut) || p.Step%50 == 0 {
			heldOut := "" // measured at evaluation steps only
			if !math.IsNaN(p.HeldOut) {
				heldOut = fmt.Sprintf(" held_out %.4f", p.HeldOut)
			}
			j.logf("step %d/%d epoch %d lr %.2e loss %.4f grad_norm %.3f%s tokens %d %.0fs\n",
				p.Step, p.Steps, p.Epoch, p.LR, p.Loss, p.GradNorm, heldOut, p.Tokens, p.Elapsed.Seconds())
		}
	})
	if err != nil {
		return out, err
	}
	if j.Out != "" {
		if err := Save(s, j.Out); err != nil {
			return out, fmt.Errorf("saving the model: %w", err)
		}
		j.logf("sft: wrote %s\n", j.Out)
	}
	if ctx.Err() != nil { // stopped: no evaluation
		return out, nil
	}
	if err := j.evaluate(ctx, s, maxLen, &out); err != nil {
		return out, err
	}
	return out, nil
}

// evaluate plays the evaluation tasks, if any.
func (j *Job) evaluate(ctx context.Context, s *lmagent.Policy, maxLen int, out *Outcome) error {
	if j.Eval == nil {
		return nil
	}
	rows, err := tasks.LoadTasks(j.EvalTasksFile)
	if err != nil {
		return err
	}
	o := *j.Eval
	o.Tokenizer, o.Renderer, o.StopIDs = s.Tokenizer, s.Renderer, s.StopIDs
	if o.MaxPromptLength == 0 {
		o.MaxPromptLength = maxLen - max(o.MaxResponseLength, 1)
	}
	ev, err := Evaluate(ctx, s.Model, rows, o)
	if err != nil {
		return err
	}
	out.Eval = &ev
	return nil
}
