package sft

import (
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// JobFromConfig is the supervised phase a run's [sft] section describes:
// trainer.seed orders the batches and initialises a new model, and
// sft.eval_tasks are played in env.id with env.args.
func JobFromConfig(c config.Config) Job {
	s := c.SFT
	seed := uint64(c.Trainer.Seed)
	j := Job{
		Data: s.Data, HeldOut: s.HeldOut, HeldOutFrac: s.HeldOutFraction, SkipBad: s.SkipBad,
		Model: s.Model, InitSeed: seed + 1, Out: s.Out, MaxLength: s.MaxLength, Threads: c.Trainer.Threads,
		Shape: Shape{Arch: s.Arch, Hidden: s.Hidden, Intermediate: s.Intermediate, Layers: s.Layers, Heads: s.Heads, KVHeads: s.KVHeads, Context: s.Context},
		Train: TrainOptions{Epochs: s.Epochs, BatchTokens: s.BatchTokens, LearningRate: s.LearningRate, WarmupRatio: s.WarmupRatio,
			MinLRRatio: s.MinLRRatio, WeightDecay: s.WeightDecay, Beta1: DefaultTrainOptions.Beta1, Beta2: DefaultTrainOptions.Beta2,
			Eps: DefaultTrainOptions.Eps, MaxGradNorm: s.MaxGradNorm, Seed: seed},
		TimeLimit: time.Duration(s.TimeLimitS * float64(time.Second)),
	}
	if s.EvalTasks != "" {
		j.EvalTasksFile = s.EvalTasks
		j.Eval = &EvalOptions{Workflow: textrl.MultiTurnOptions{Env: c.Env.ID, EnvArgs: envs.Params(c.Env.Args)}, MaxResponseLength: s.EvalMaxResponse, Seed: c.Trainer.Seed}
	}
	return j
}
