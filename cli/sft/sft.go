// Package sft is `agenttrainer sft`: supervised warm start of a language
// model on chat transcripts (trainer/sft), writing a model directory that
// RL training and `lm generate` load, and optionally playing held-out
// tasks with it.
package sft

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/envs"
	_ "github.com/agenttrainer/agenttrainer/envs/builtin" // the text worlds
	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/trainer/sft"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// Options are the command's flags.
type Options struct {
	Job       sft.Job
	EvalEnv   string
	EvalTasks string
	EvalMaxR  int
	JSON      string
	TimeLimit time.Duration
}

// Parse reads the command line.
func Parse(args []string) (Options, error) {
	o := Options{Job: sft.Job{Shape: sft.DefaultShape, Train: sft.DefaultTrainOptions, InitSeed: 1}}
	j := &o.Job
	fs := cmdutil.NewFlags("sft", "--data FILE.jsonl --out DIR [--model DIR] [options]",
		"supervised warm start: train a language model on the assistant turns of chat transcripts (`agenttrainer data demos`), writing a model directory")
	fs.StringVar(&j.Data, "data", "", "transcripts `file` (JSONL of {\"messages\": [...]})")
	fs.StringVar(&j.HeldOut, "heldout", "", "held-out transcripts `file` for the held-out loss")
	fs.Float64Var(&j.HeldOutFrac, "heldout-frac", 0.05, "fraction of --data held out when --heldout is not given")
	fs.BoolVar(&j.SkipBad, "skip-bad", false, "skip malformed transcripts (counted and listed) instead of failing on the first")
	fs.StringVar(&j.Model, "model", "", "model `dir` to start from (default: a new model with the character tokenizer)")
	fs.StringVar(&j.Out, "out", "", "model `dir` to write")
	fs.StringVar(&j.Shape.Arch, "arch", j.Shape.Arch, "a new model's architecture: llama, qwen2 or qwen3")
	fs.IntVar(&j.Shape.Hidden, "hidden", j.Shape.Hidden, "a new model's hidden size")
	fs.IntVar(&j.Shape.Intermediate, "intermediate", j.Shape.Intermediate, "a new model's MLP width")
	fs.IntVar(&j.Shape.Layers, "layers", j.Shape.Layers, "a new model's layers")
	fs.IntVar(&j.Shape.Heads, "heads", j.Shape.Heads, "a new model's attention heads")
	fs.IntVar(&j.Shape.KVHeads, "kv-heads", j.Shape.KVHeads, "a new model's key/value heads")
	fs.IntVar(&j.Shape.Context, "context", j.Shape.Context, "a new model's context (max_position_embeddings)")
	fs.Uint64Var(&j.InitSeed, "init-seed", 1, "a new model's initialisation seed")
	fs.IntVar(&j.MaxLength, "max-length", 0, "tokens per transcript at most (0: the model's context)")
	fs.IntVar(&j.Train.Epochs, "epochs", j.Train.Epochs, "passes over the data")
	fs.IntVar(&j.Train.BatchTokens, "batch-tokens", j.Train.BatchTokens, "padded tokens per step (rows × longest row)")
	fs.Float64Var(&j.Train.LearningRate, "lr", j.Train.LearningRate, "peak learning rate")
	fs.Float64Var(&j.Train.WarmupRatio, "warmup-ratio", j.Train.WarmupRatio, "fraction of steps warming up linearly")
	fs.Float64Var(&j.Train.MinLRRatio, "min-lr-ratio", j.Train.MinLRRatio, "the cosine's floor as a fraction of --lr")
	fs.Float64Var(&j.Train.WeightDecay, "weight-decay", j.Train.WeightDecay, "AdamW's decoupled weight decay")
	fs.Float64Var(&j.Train.MaxGradNorm, "max-grad-norm", j.Train.MaxGradNorm, "gradient clipping (0: none)")
	fs.Uint64Var(&j.Train.Seed, "seed", 1, "seed of the batches' order and the held-out split")
	fs.IntVar(&j.Train.EvalEvery, "eval-every", 0, "steps between held-out losses (0: each epoch)")
	fs.IntVar(&j.Threads, "threads", 0, "CPU threads (0: all)")
	fs.StringVar(&o.EvalEnv, "eval-env", "", "text environment `ID` to play --eval-tasks in after training")
	fs.StringVar(&o.EvalTasks, "eval-tasks", "", "held-out task `file` to play once each")
	fs.IntVar(&o.EvalMaxR, "eval-max-response", 64, "tokens per answer when playing")
	fs.StringVar(&o.JSON, "json", "", "write the outcome as JSON to `file`")
	fs.DurationVar(&o.TimeLimit, "time-limit", 0, "stop training after this long, keeping what was learnt (0: none)")
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return o, err
	}
	if len(rest) > 0 {
		return o, cmdutil.Usagef("sft takes no arguments besides its flags, got %q", rest[0])
	}
	if j.Data == "" {
		return o, cmdutil.Usagef("sft needs --data FILE.jsonl (write one with `agenttrainer data demos`)")
	}
	if (o.EvalEnv == "") != (o.EvalTasks == "") {
		return o, cmdutil.Usagef("--eval-env and --eval-tasks go together")
	}
	if o.EvalEnv != "" {
		j.Eval = &sft.EvalOptions{Workflow: textrl.MultiTurnOptions{Env: o.EvalEnv, AgentArgs: envs.Params{}}, MaxResponseLength: o.EvalMaxR, Seed: 1}
		j.EvalTasksFile = o.EvalTasks
	}
	return o, nil
}

// Run trains, saves and evaluates.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	o.Job.Log = stdout
	o.Job.TimeLimit = o.TimeLimit
	out, err := o.Job.Run(ctx)
	if err != nil {
		return err
	}
	r := out.Result
	fmt.Fprintf(stdout, "sft: %d steps in %.0fs (%.0f trained tokens/s), train loss %.4f, held-out loss %.4f%s\n",
		r.Steps, r.Elapsed.Seconds(), r.TokensPerSec, r.TrainLoss, r.HeldOutLoss, map[bool]string{true: " (stopped by the time limit)"}[r.StoppedEarly])
	if e := out.Eval; e != nil {
		fmt.Fprintf(stdout, "eval: %d episodes, success %.1f%%, reward %.3f, turns %.2f (%.2f when solved), invalid actions %.1f%%, %v, %.0fs\n",
			e.Episodes, 100*e.Success, e.MeanReward, e.MeanTurns, e.SuccessTurns, 100*e.Invalid, e.Terminations, e.Elapsed.Seconds())
	}
	if o.JSON != "" {
		rec := map[string]any{"steps": r.Steps, "train_seconds": r.Elapsed.Seconds(), "train_loss": r.TrainLoss,
			"heldout_loss": finite(r.HeldOutLoss), "params": out.Params, "train_examples": out.TrainExamples, "skipped": len(out.Skipped)}
		if e := out.Eval; e != nil {
			rec["eval"] = map[string]any{"episodes": e.Episodes, "success": e.Success, "reward": e.MeanReward, "turns": e.MeanTurns,
				"success_turns": finite(e.SuccessTurns), "invalid": e.Invalid, "terminations": e.Terminations}
		}
		b, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			return err
		}
		if err := atomicfile.Write(o.JSON, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func finite(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}
