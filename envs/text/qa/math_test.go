package qa

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

type mathCase struct {
	Response    string   `json:"response"`
	GroundTruth any      `json:"ground_truth"`
	Extracted   *string  `json:"extracted"`
	Reward      float64  `json:"reward"`
	IsCorrect   bool     `json:"is_correct"`
	Mathd       []string `json:"mathd"`
	Normalize   []string `json:"normalize"`
	GradeMathd  *bool    `json:"grade_mathd"`
	GradeSympy  *bool    `json:"grade_sympy"`
}

func loadMathCases(t *testing.T) []mathCase {
	b, err := os.ReadFile("testdata/rllm_math.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Cases []mathCase }
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Cases) < 60 {
		t.Fatalf("only %d recorded cases", len(rec.Cases))
	}
	return rec.Cases
}

// knownDivergences are the recorded cases where the answer differs from
// rLLM's because sympy is not ported (see equalExpressions), keyed by
// response and ground truth.
var knownDivergences = map[[2]string]string{}

// TestMathRewardAsRLLM replays testdata/rllm_math.json, recorded from
// rLLM's math_reward.py and math_utils (with sympy 1.11 and pylatexenc
// 2.10) by scripts/rllm-reference/rewards.py: the extraction, both
// normalisations and both gradings, and the reward.
func TestMathRewardAsRLLM(t *testing.T) {
	agree := 0
	cases := loadMathCases(t)
	for _, c := range cases {
		task := envs.Params{"ground_truth": number(c.GroundTruth)}
		ans, ok := ExtractAnswer(c.Response)
		if (c.Extracted != nil) != ok || (ok && ans != *c.Extracted) {
			t.Errorf("extract(%q) = %q %v, rLLM %v", c.Response, ans, ok, c.Extracted)
		}
		if c.Mathd != nil {
			truth := c.GroundTruth.(string)
			if t2, ok := ExtractAnswer(truth); ok {
				truth = t2
			}
			if got := []string{MathdNormalize(ans), MathdNormalize(truth)}; got[0] != c.Mathd[0] || got[1] != c.Mathd[1] {
				t.Errorf("mathd_normalize(%q, %q) = %q, rLLM %q", ans, truth, got, c.Mathd)
			}
			if got := []string{Normalize(ans), Normalize(truth)}; got[0] != c.Normalize[0] || got[1] != c.Normalize[1] {
				t.Errorf("_normalize(%q, %q) = %q, rLLM %q", ans, truth, got, c.Normalize)
			}
			if got := GradeMathd(ans, truth); got != *c.GradeMathd {
				t.Errorf("grade_mathd(%q, %q) = %v, rLLM %v", ans, truth, got, *c.GradeMathd)
			}
			if got := GradeSympy(ans, truth); got != *c.GradeSympy {
				key := [2]string{c.Response, truth}
				if _, known := knownDivergences[key]; !known {
					t.Errorf("grade_sympy(%q, %q) = %v, rLLM %v", ans, truth, got, *c.GradeSympy)
				}
			}
		}
		r, err := text.Score("math", RewardMath, task, c.Response)
		if err != nil {
			t.Fatal(err)
		}
		if r.Reward == c.Reward && r.Correct == c.IsCorrect {
			agree++
		} else {
			t.Errorf("reward(%q, %v) = %v, rLLM %v", c.Response, c.GroundTruth, r.Reward, c.Reward)
		}
	}
	t.Logf("%d of %d rewards agree with rLLM's", agree, len(cases))
}

// number turns JSON numbers into int64 or float64 as task files do (6.0
// stays a float, as Python wrote it).
func number(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil && !strings.ContainsAny(x.String(), ".eE") {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = number(x[i])
		}
	}
	return v
}
