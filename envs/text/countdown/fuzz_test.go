package countdown

import (
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

// FuzzCountdownReward feeds arbitrary answers to rLLM's countdown reward
// (Python's eval semantics included): 0, 0.1 or 1, never a panic or a hang.
func FuzzCountdownReward(f *testing.F) {
	for _, s := range []string{"<answer>(1 + 2) * 3</answer>", "<answer>2**3**2</answer>", "<answer>7 // 3 - 2</answer>", "<answer>(-8)**(1/3)</answer>", "<answer>9**9**9</answer>"} {
		f.Add(s)
	}
	task := envs.Params{"target": 9, "nums": []any{1, 2, 3}}
	f.Fuzz(func(t *testing.T, response string) {
		r, err := reward(task, response, true)
		if err != nil || (r.Reward != 0 && r.Reward != 0.1 && r.Reward != 1) {
			t.Fatalf("reward %v, %v", r.Reward, err)
		}
	})
}
