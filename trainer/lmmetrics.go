package trainer

import "github.com/agenttrainer/agenttrainer/trainer/runstore"

// The figures of language-model runs, named as TRL and verl name them, in
// the metric registry so that every sink (metrics.jsonl, TensorBoard, the
// progress line, the app) shows them. Only language-model records carry
// them (Optional), so numeric runs' rows and lines are as they were.
func init() {
	for _, m := range []runstore.Metric{
		{Name: "reward", Label: "reward", Tag: "lm/reward", Grid: true, Figure: true, Progress: 8, Better: runstore.Higher},
		{Name: "reward_std", Label: "reward std", Tag: "lm/reward_std"},
		{Name: "frac_reward_zero_std", Label: "zero-std groups", Tag: "lm/frac_reward_zero_std", Figure: true},
		{Name: "success_rate", Label: "success", Tag: "lm/success_rate", Grid: true, Figure: true, Progress: 8, Better: runstore.Higher},
		{Name: "completions/mean_length", Label: "length", Tag: "completions/mean_length", Grid: true, Figure: true},
		{Name: "completions/min_length", Label: "min length", Tag: "completions/min_length"},
		{Name: "completions/max_length", Label: "max length", Tag: "completions/max_length"},
		{Name: "completions/clipped_ratio", Label: "truncated", Tag: "completions/clipped_ratio", Better: runstore.Lower},
		{Name: "episodes/masked_frac", Label: "masked", Tag: "episodes/masked_frac", Better: runstore.Lower},
		{Name: "episodes/prefix_mismatches", Label: "prefix mismatches", Tag: "episodes/prefix_mismatches", Integer: true, Better: runstore.Lower},
		{Name: "turns/mean", Label: "turns", Tag: "turns/mean", Figure: true},
		{Name: "groups/kept", Label: "groups kept", Tag: "groups/kept", Integer: true},
		{Name: "groups/gen_batches", Label: "gen batches", Tag: "groups/gen_batches", Integer: true},
		{Name: "kl", Label: "KL to ref", Tag: "lm/kl", Grid: true, Figure: true, Optional: true},
		{Name: "critic/kl_in_reward", Label: "KL in reward", Tag: "critic/kl_in_reward", Optional: true},
		{Name: "loss", Label: "loss", Tag: "lm/loss", Optional: true},
		{Name: "clip_ratio/low_mean", Label: "clip low", Tag: "clip_ratio/low_mean", Optional: true},
		{Name: "clip_ratio/high_mean", Label: "clip high", Tag: "clip_ratio/high_mean", Optional: true},
		{Name: "clip_ratio/region_mean", Label: "clipped", Tag: "clip_ratio/region_mean", Optional: true},
		{Name: "actor/pg_clipfrac_lower", Label: "dual clip", Tag: "actor/pg_clipfrac_lower", Optional: true},
		{Name: "tokens_per_s/generation", Label: "gen tok/s", Tag: "perf/tokens_per_s_generation", Figure: true, Progress: 9, Better: runstore.Higher},
		{Name: "tokens_per_s/training", Label: "train tok/s", Tag: "perf/tokens_per_s_training", Figure: true, Better: runstore.Higher},
		{Name: "timing_s/gen", Label: "gen s", Tag: "timing_s/gen", Better: runstore.Lower},
		{Name: "timing_s/ref", Label: "ref s", Tag: "timing_s/ref", Better: runstore.Lower},
		{Name: "timing_s/values", Label: "values s", Tag: "timing_s/values", Better: runstore.Lower},
		{Name: "timing_s/update", Label: "update s", Tag: "timing_s/update", Better: runstore.Lower},
		// The value head's (algorithm.adv_estimator = gae), verl's names.
		{Name: "critic/vf_loss", Label: "vf loss", Tag: "critic/vf_loss", Grid: true, Figure: true, Better: runstore.Lower},
		{Name: "critic/vf_clipfrac", Label: "vf clipped", Tag: "critic/vf_clipfrac"},
		{Name: "critic/vpred_mean", Label: "value", Tag: "critic/vpred_mean", Figure: true},
		{Name: "critic/vf_explained_var", Label: "vf explained var", Tag: "critic/vf_explained_var", Figure: true, Better: runstore.Higher},
		{Name: "critic/returns/mean", Label: "return (GAE)", Tag: "critic/returns_mean"},
		{Name: "critic/values/mean", Label: "value (rollout)", Tag: "critic/values_mean"},
		{Name: "critic/grad_norm", Label: "vf grad norm", Tag: "critic/grad_norm"},
		{Name: "val/pass_at_1", Label: "val pass@1", Tag: "val/pass_at_1", Grid: true, Figure: true, Better: runstore.Higher, Optional: true},
		{Name: "val/pass_at_k", Label: "val pass@k", Tag: "val/pass_at_k", Figure: true, Better: runstore.Higher, Optional: true},
		{Name: "val/k", Label: "val k", Tag: "val/k", Integer: true, Optional: true},
	} {
		m.Optional = true // only language-model runs' records carry them
		runstore.DeclareMetric(m)
	}
}
