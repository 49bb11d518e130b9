package countdown

import (
	"encoding/json"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// TestRewardAsRLLM replays testdata/rllm_countdown.json, recorded from
// rLLM's countdown_reward.py by scripts/rllm-reference/rewards.py.
func TestRewardAsRLLM(t *testing.T) {
	b, err := os.ReadFile("testdata/rllm_countdown.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Cases []struct {
			Nums         []any          `json:"nums"`
			Target       any            `json:"target"`
			Solution     string         `json:"solution"`
			ComputeScore *float64       `json:"compute_score"`
			Reward       float64        `json:"reward"`
			IsCorrect    bool           `json:"is_correct"`
			Metadata     map[string]any `json:"metadata"`
			Extracted    *string        `json:"extracted"`
		}
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Cases) < 40 {
		t.Fatalf("only %d recorded cases", len(rec.Cases))
	}
	for _, c := range rec.Cases {
		task := envs.Params{"target": c.Target, "nums": c.Nums}
		got, ok := ExtractSolution(c.Solution)
		if (c.Extracted != nil) != ok || (ok && got != *c.Extracted) {
			t.Errorf("%q: extracted %q (%v), rLLM %v", c.Solution, got, ok, c.Extracted)
		}
		if c.ComputeScore == nil {
			// rLLM pays 0 for a task without target or nums; here the row
			// is refused, which ends the episode with an error.
			if _, err := text.Score("countdown", mustReward(t, "countdown"), task, c.Solution); err == nil {
				t.Errorf("%v: a task without target or nums was scored", task)
			}
			continue
		}
		for name, want := range map[string]float64{"countdown_score": *c.ComputeScore, "countdown": c.Reward} {
			r, err := text.Score(name, mustReward(t, name), task, c.Solution)
			if err != nil {
				t.Fatalf("%q: %v", c.Solution, err)
			}
			if r.Reward != want || r.Correct != c.IsCorrect || r.Info["validation"] != c.Metadata["validation"] {
				t.Errorf("%s(%v, %v, %q) = %v %v %v, rLLM's %v %v %v", name, c.Nums, c.Target, c.Solution, r.Reward, r.Correct, r.Info["validation"], want, c.IsCorrect, c.Metadata["validation"])
			}
		}
	}
}

func mustReward(t *testing.T, name string) text.RewardFunc {
	fn, err := text.LookupReward(name)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// Python's eval on the expressions the pattern lets through.
func TestPyEval(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want string // "" for an error
	}{
		{"2**3**2", "512"}, {"-2**2", "-4"}, {"2**-1", "0.5"}, {"7//2", "3"}, {"-7//2", "-4"}, {"7.5//2", "3"},
		{"1/3*3", "1"}, {"1+-+-1", "2"}, {"9**0.5", "3"}, {"00+1", "1"}, {"01", ""}, {".5+1", "1.5"}, {"1.+.5", "1.5"},
		{"1 .5", ""}, {"1..2", ""}, {"(1\r+2)", "3"}, {"1\r+2", ""}, {"1\f+2", "3"}, {"10**400/1", ""}, {"0**0", "1"},
		{"0.0**-1", ""}, {"1/0.0", ""}, {"1/0", ""}, {"2(3)", ""}, {"()", ""}, {"((2))", "2"}, {"9**9**9", ""},
		{"(1", ""}, {"1)", ""}, {"", ""}, {"+", ""}, {"3*", ""},
	} {
		v, err := pyEval(tt.expr)
		if tt.want == "" {
			if err == nil {
				t.Errorf("eval(%q) = %v, Python raises", tt.expr, v)
			}
			continue
		}
		if err != nil {
			t.Errorf("eval(%q): %v, Python gives %s", tt.expr, err, tt.want)
			continue
		}
		w, _ := new(big.Rat).SetString(tt.want)
		if !closeTo(v, w) {
			t.Errorf("eval(%q) = %+v, Python gives %s", tt.expr, v, tt.want)
		}
	}
}

func TestGenerateAndSolve(t *testing.T) {
	rows, err := Generate(text.GenerateOptions{N: 300, Seed: 1, Args: envs.Params{"count": 3}})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, row := range rows {
		k, err := Key(row)
		if err != nil || keys[k] {
			t.Fatalf("row %v: key %q error %v (duplicate %v)", row, k, err, keys[k])
		}
		keys[k] = true
		e, err := New(row)
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(nil)
		sol, ok := e.Solution()
		if !ok {
			t.Fatalf("no solution for %v", row)
		}
		_, r, done, _, err := e.Step(sol)
		if err != nil || r != 1 || !done || !e.Succeeded() {
			t.Fatalf("%v: the row's own solution %q scored %v (%v)", row, sol, r, err)
		}
		// The search finds one too.
		if s, ok := Solve(e.nums, e.target); !ok || ComputeScore("<answer>"+s+"</answer>", e.target, e.nums, FormatScore, Score) != 1 {
			t.Fatalf("%v: search found %q", row, s)
		}
	}
	val, err := Generate(text.GenerateOptions{N: 100, Seed: 2, Args: envs.Params{"count": 3}, Exclude: keys})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range val {
		if k, _ := Key(row); keys[k] {
			t.Fatalf("validation task %v is in the training set", row)
		}
	}
	if _, err := Generate(text.GenerateOptions{N: 10, Args: envs.Params{"count": 9}}); err == nil {
		t.Error("count 9 was accepted")
	}
	if _, err := Generate(text.GenerateOptions{N: 1000, Args: envs.Params{"count": 2, "max_num": 2, "max_target": 4}}); err == nil || !strings.Contains(err.Error(), "distinct countdown tasks") {
		t.Errorf("an impossible set: %v", err)
	}
}

func TestMalformedRows(t *testing.T) {
	for _, tt := range []struct {
		row  envs.Params
		want string
	}{
		{envs.Params{"nums": []any{1, 2}}, "needs a target"},
		{envs.Params{"target": 3}, "needs nums"},
		{envs.Params{"target": 3, "nums": "1,2"}, "nums must be a list"},
		{envs.Params{"target": 3, "nums": []any{1, "two"}}, `nums[1]: "two" is not a finite number`},
		{envs.Params{"target": "NaN", "nums": []any{1}}, "target"},
		{envs.Params{"target": 3, "nums": []any{}}, "1 to 64 numbers"},
		{envs.Params{"target": 3, "nums": []any{1, 2}, "reward": "f1"}, `unknown reward function "f1"`},
		{envs.Params{"target": 3, "nums": []any{1, 2}, "answer": 3}, `unknown argument "answer"`},
	} {
		if _, err := text.Make(ID, tt.row, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.row, err, tt.want)
		}
	}
}
