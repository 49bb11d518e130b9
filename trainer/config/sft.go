package config

// SFTConfig is supervised warm start of a language model on chat
// transcripts (trainer/sft): alone (Only), or as a phase before RL in the
// same run, on the lm agent's model ([agent]). Keys follow TRL's
// SFTTrainer where it has them.
type SFTConfig struct {
	Data            string  `toml:"data"`
	HeldOut         string  `toml:"heldout"`
	HeldOutFraction float64 `toml:"heldout_fraction" check:"[0,1)"`
	SkipBad         bool    `toml:"skip_bad"`
	Only            bool    `toml:"only"`
	Epochs          int     `toml:"epochs" check:"[1,100000]"`
	BatchTokens     int     `toml:"batch_tokens" check:"[2,16777216]"`
	LearningRate    float64 `toml:"learning_rate" check:"(0,1]"`
	WarmupRatio     float64 `toml:"warmup_ratio" check:"[0,1)"`
	MinLRRatio      float64 `toml:"min_lr_ratio" check:"[0,1]"`
	WeightDecay     float64 `toml:"weight_decay" check:"[0,1)"`
	MaxGradNorm     float64 `toml:"max_grad_norm" check:">=0"`
	MaxLength       int     `toml:"max_length" check:">=0"`
	TimeLimitS      float64 `toml:"time_limit_s" check:">=0"`
	Out             string  `toml:"out"`
	EvalTasks       string  `toml:"eval_tasks"`
	EvalMaxResponse int     `toml:"eval_max_response" check:"[1,1048576]"`
}
