package qa

import (
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

// FuzzMathReward feeds arbitrary answers and ground truths to rLLM's math
// reward: a verdict in {0, 1, 1.5} or an error, never a panic or a hang.
func FuzzMathReward(f *testing.F) {
	for _, s := range []string{"\\boxed{\\frac{1}{2}}", "\\boxed{x^2+2x+1}", "\\boxed{(1,2)}", "\\boxed{\\sqrt3}", "\\boxed{5!}", "\\boxed{1,000}", "<think>a</think>\\boxed{7 3/4}"} {
		f.Add(s, "0.5")
	}
	f.Fuzz(func(t *testing.T, response, truth string) {
		r, err := RewardMath(envs.Params{"ground_truth": truth}, response)
		if err == nil && r.Reward != 0 && r.Reward != 1 {
			t.Fatalf("reward %v", r.Reward)
		}
		Normalize(response)
		MathdNormalize(response)
	})
}
