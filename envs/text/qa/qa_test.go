package qa

import (
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

func TestVerifiers(t *testing.T) {
	for _, tt := range []struct {
		reward, answer, response string
		want                     float64
	}{
		{"exact", "Paris", "Paris", 1},
		{"exact", "Paris", "  Paris\n", 1},
		{"exact", "Paris", "<think>hmm</think> Paris", 1},
		{"exact", "Paris", "paris", 0},
		{"numeric", "1234.5", "The total is $1,234.50.", 1},
		{"numeric", "42", "41 or maybe 42", 1},
		{"numeric", "42", "42 or maybe 41", 0},
		{"numeric", "-3", "x = -3", 1},
		{"numeric", "0.1", "1e-1", 1},
		{"numeric", "7", "no idea", 0},
		{"math", "\\frac{1}{2}", "so \\boxed{0.5}", 1},
		{"math", "12", "\\boxed{3\\times 4}", 0}, // rLLM: an integer answer must be written as one
		{"math", "12", "12", 0},                  // no box, no answer
	} {
		e, err := text.Make(ID, envs.Params{"question": "q?", "answer": tt.answer, "reward": tt.reward}, nil)
		if err != nil {
			t.Fatal(err)
		}
		obs, _, _ := e.Reset(nil)
		if obs != "q?" {
			t.Fatalf("observation %q", obs)
		}
		_, r, done, _, err := e.Step(tt.response)
		if err != nil || !done || r != tt.want {
			t.Errorf("%s(%q, %q) = %v (done %v, %v), want %v", tt.reward, tt.response, tt.answer, r, done, err, tt.want)
		}
		if _, _, _, _, err := e.Step("again"); err == nil {
			t.Error("a second answer was accepted")
		}
	}
}

func TestOracleAnswersAreRight(t *testing.T) {
	for _, reward := range []string{"exact", "numeric", "math"} {
		for _, ans := range []string{"42", "\\frac{3}{4}", "-7"} {
			if reward == "numeric" && strings.Contains(ans, "frac") {
				continue
			}
			e, err := New(envs.Params{"problem": "p", "ground_truth": ans, "reward": reward})
			if err != nil {
				t.Fatal(err)
			}
			e.Reset(nil)
			sol, ok := e.Solution()
			if _, r, _, _, _ := e.Step(sol); !ok || r != 1 || !e.Succeeded() {
				t.Errorf("%s: the oracle's %q for %q scored %v", reward, sol, ans, r)
			}
		}
	}
}

func TestMalformedQuestionRows(t *testing.T) {
	for _, tt := range []struct {
		row  envs.Params
		want string
	}{
		{envs.Params{"answer": "4"}, "needs a question"},
		{envs.Params{"question": 7, "answer": "4"}, "question must be text"},
		{envs.Params{"question": "  ", "answer": "4"}, "question is empty"},
		{envs.Params{"question": "q", "answer": "4", "reward": "bleu"}, `unknown reward function "bleu"`},
	} {
		if _, err := text.Make(ID, tt.row, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.row, err, tt.want)
		}
	}
	// A row without an answer builds (the question can be shown) but
	// cannot be scored: an error for that episode.
	e, _ := New(envs.Params{"question": "q"})
	e.Reset(nil)
	if _, _, _, _, err := e.Step("\\boxed{1}"); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("scoring without an answer: %v", err)
	}
	// A verifier that panics is an error, not a crash.
	text.RegisterReward("test_panics", "panics", func(envs.Params, string) (text.Reward, error) { panic("boom") })
	e, _ = New(envs.Params{"question": "q", "answer": "1", "reward": "test_panics"})
	e.Reset(nil)
	if _, _, _, _, err := e.Step("1"); err == nil || !strings.Contains(err.Error(), "test_panics failed: boom") {
		t.Errorf("a panicking verifier: %v", err)
	}
}

// Hostile answers stay cheap: deep nesting, huge powers, long input.
func TestHostileMathAnswers(t *testing.T) {
	for _, resp := range []string{
		"\\boxed{" + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000) + "}",
		"\\boxed{9^9^9^9}",
		"\\boxed{(x+1)^100000}",
		"\\boxed{" + strings.Repeat("\\frac{1}{", 3000) + "2" + strings.Repeat("}", 3000) + "}",
		"\\boxed{" + strings.Repeat("1+", 100000) + "1}",
		"\\boxed{\xff\xfe}",
		"\\boxed{" + strings.Repeat("{", 100000),
	} {
		r, err := RewardMath(envs.Params{"answer": "2"}, resp)
		if err != nil || r.Reward != 0 {
			t.Errorf("%.40q: %v %v", resp, r.Reward, err)
		}
	}
}
