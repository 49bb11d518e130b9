package sft

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lmagent"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// JobFromConfig is the supervised phase a run's [sft] section describes,
// on the lm agent of [agent]: trainer.seed orders the batches and
// initialises a new model, and sft.eval_tasks are played in env.id with
// env.args and the validation temperature.
func JobFromConfig(c config.Config) Job {
	s := c.SFT
	seed := uint64(c.Trainer.Seed)
	j := Job{
		Data: s.Data, HeldOut: s.HeldOut, HeldOutFrac: s.HeldOutFraction, SkipBad: s.SkipBad,
		Agent: c.Agent.Params, InitSeed: seed, Out: s.Out, MaxLength: s.MaxLength, Threads: c.Trainer.Threads,
		Train: TrainOptions{Epochs: s.Epochs, BatchTokens: s.BatchTokens, LearningRate: s.LearningRate, WarmupRatio: s.WarmupRatio,
			MinLRRatio: s.MinLRRatio, WeightDecay: s.WeightDecay, Beta1: DefaultTrainOptions.Beta1, Beta2: DefaultTrainOptions.Beta2,
			Eps: DefaultTrainOptions.Eps, MaxGradNorm: s.MaxGradNorm, Seed: seed},
		TimeLimit: time.Duration(s.TimeLimitS * float64(time.Second)),
	}
	if s.EvalTasks != "" {
		j.EvalTasksFile = s.EvalTasks
		j.Eval = &EvalOptions{Workflow: textrl.MultiTurnOptions{Env: c.Env.ID, EnvArgs: envs.Params(c.Env.Args),
			Agent: c.Workflow.Agent, AgentArgs: envs.Params(c.Workflow.AgentArgs)},
			MaxResponseLength: s.EvalMaxResponse, Temperature: c.Rollout.ValTemp, Seed: c.Trainer.Seed}
	}
	return j
}

// WarmStart runs the [sft] phase of c on a run's policy before RL
// (trainer.Trainer.SetWarmStart's hook), writing the model to sft.out or
// runDir/sft-model. Its progress is kept in runDir/trainer.WarmStartState
// (every trainer.save_interval_s, and when it stops), so that a run
// stopped in the phase continues it on --resume.
func WarmStart(ctx context.Context, p *lmagent.Policy, c config.Config, runDir string, logf func(string, ...any)) (Outcome, error) {
	j := JobFromConfig(c)
	if j.Out == "" {
		j.Out = filepath.Join(runDir, "sft-model")
	}
	j.Train.State = filepath.Join(runDir, trainer.WarmStartState)
	j.Train.SaveEvery = time.Duration(c.Trainer.SaveEveryS * float64(time.Second))
	j.Log = logWriter(logf)
	return j.RunOn(ctx, p)
}

// logWriter turns a printf-style logger into a writer of lines.
type logWriter func(string, ...any)

func (l logWriter) Write(b []byte) (int, error) {
	if l != nil {
		l("%s", string(b))
	}
	return len(b), nil
}

// The supervised phase before RL: every language-model run whose config
// names sft.data trains on it first (train, detached runs, the app).
func init() {
	trainer.WarmStartFor = func(c config.Config) (func(context.Context, trainer.WarmStart) error, error) {
		if c.SFT.Data == "" {
			return nil, nil
		}
		if c.SFT.Only {
			return nil, &config.Error{Key: "sft.only", Msg: "a supervised phase alone runs with `agenttrainer sft`; train runs RL after it (set sft.only = false)"}
		}
		if _, err := os.Stat(c.SFT.Data); err != nil {
			return nil, &config.Error{Key: "sft.data", Msg: err.Error()}
		}
		return func(ctx context.Context, w trainer.WarmStart) error {
			out, err := WarmStart(ctx, w.Policy, w.Config, w.RunDir, w.Logf)
			if err == nil && w.Logf != nil {
				w.Logf("sft: %d steps, train loss %.4f, held-out loss %.4f\n", out.Result.Steps, out.Result.TrainLoss, out.Result.HeldOutLoss)
			}
			return err
		}, nil
	}
}
