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
	"strings"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	_ "github.com/agenttrainer/agenttrainer/envs/builtin" // the text worlds
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/sft"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// Options are the command's flags and the resolved configuration.
type Options struct {
	Config   config.Config
	JSON     string
	EvalOnly bool
}

// Parse reads `agenttrainer sft [--config FILE] [--json FILE] key=value ...`.
func Parse(args []string) (Options, error) {
	var o Options
	var file string
	fs := cmdutil.NewFlags("sft", "[--config FILE] [--json FILE] sft.data=FILE.jsonl [key=value ...]",
		"supervised warm start: train a language model on the assistant turns of chat transcripts (`agenttrainer data demos`) "+
			"with the [sft] keys, write the model directory sft.out, and play sft.eval_tasks in env.id; env.id's preset applies")
	fs.StringVar(&file, "config", "", "TOML config `file` (its [sft] section)")
	fs.StringVar(&o.JSON, "json", "", "write the outcome as JSON to `file`")
	fs.BoolVar(&o.EvalOnly, "eval-only", false, "train nothing: play sft.eval_tasks with agent.model (a model an SFT or RL run wrote)")
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return o, err
	}
	if o.Config, err = config.Resolve(file, rest); err != nil {
		return o, &cmdutil.ConfigError{Err: err}
	}
	if o.EvalOnly {
		if o.Config.SFT.EvalTasks == "" {
			return o, cmdutil.Usagef("--eval-only plays sft.eval_tasks=FILE")
		}
	} else if o.Config.SFT.Data == "" {
		return o, cmdutil.Usagef("sft needs sft.data=FILE.jsonl (write one with `agenttrainer data demos`)")
	}
	if o.Config.Agent.Name != config.LMAgent {
		return o, cmdutil.Usagef("sft trains the lm agent's model: set agent.name=%s (agent.model=DIR to start from a model, else agent.arch, agent.hidden_size, … make one)", config.LMAgent)
	}
	if o.Config.SFT.EvalTasks != "" {
		if _, ok := text.Lookup(o.Config.Env.ID); !ok {
			return o, cmdutil.Usagef("sft.eval_tasks are played in env.id, which must be a text environment (%s), not %q", strings.Join(text.IDs(), ", "), o.Config.Env.ID)
		}
	}
	return o, nil
}

// Run trains, saves and evaluates.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	job := sft.JobFromConfig(o.Config)
	job.Log = stdout
	job.EvalOnly = o.EvalOnly
	out, err := job.Run(ctx)
	if err != nil {
		return err
	}
	r := out.Result
	if !o.EvalOnly {
		fmt.Fprintf(stdout, "sft: %d steps in %.0fs (%.0f trained tokens/s), train loss %.4f, held-out loss %.4f%s\n",
			r.Steps, r.Elapsed.Seconds(), r.TokensPerSec, r.TrainLoss, r.HeldOutLoss, map[bool]string{true: " (stopped by the time limit)"}[r.StoppedEarly])
	}
	if e := out.Eval; e != nil {
		fmt.Fprintf(stdout, "eval: %d episodes, success %.1f%%, reward %.3f, turns %.2f (%.2f when solved, shortest %.2f), invalid actions %.1f%%, %v, %.0fs\n",
			e.Episodes, 100*e.Success, e.MeanReward, e.MeanTurns, e.SuccessTurns, e.OptimalTurns, 100*e.Invalid, e.Terminations, e.Elapsed.Seconds())
		for _, ep := range e.List[:min(3, len(e.List))] {
			fmt.Fprintf(stdout, "  task %v: reward %g, %s\n", ep.Task, ep.Reward(), lastTurns(ep, 2))
		}
	}
	if o.JSON != "" {
		rec := map[string]any{"params": out.Params}
		if !o.EvalOnly {
			rec = map[string]any{"steps": r.Steps, "train_seconds": r.Elapsed.Seconds(), "train_loss": r.TrainLoss,
				"heldout_loss": finite(r.HeldOutLoss), "params": out.Params, "train_examples": out.TrainExamples, "skipped": len(out.Skipped)}
		}
		if e := out.Eval; e != nil {
			rec["eval"] = map[string]any{"episodes": e.Episodes, "success": e.Success, "reward": e.MeanReward, "turns": e.MeanTurns,
				"success_turns": finite(e.SuccessTurns), "optimal_turns": finite(e.OptimalTurns), "invalid": e.Invalid, "terminations": e.Terminations}
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

// lastTurns quotes an episode's last n messages.
func lastTurns(ep *textrl.Episode, n int) string {
	if len(ep.Trajectories) == 0 || ep.Trajectories[0].Last() == nil {
		return "no turns"
	}
	ms := ep.Trajectories[0].Last().ChatCompletions
	var parts []string
	for _, m := range ms[max(0, len(ms)-n):] {
		parts = append(parts, fmt.Sprintf("%s: %q", m.Role, m.Content))
	}
	return strings.Join(parts, " ")
}
