package countdown

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/internal/pystr"
)

func init() {
	text.RegisterReward("countdown_score", "countdown: 1 right, 0.1 an <answer> that is wrong or uses the wrong numbers, 0 none (rLLM's compute_score)",
		func(task envs.Params, response string) (text.Reward, error) { return reward(task, response, true) })
	text.RegisterReward("countdown", "countdown as rLLM's countdown_reward_fn pays it: 1 right, 0 otherwise (partial credit reported, not paid)",
		func(task envs.Params, response string) (text.Reward, error) { return reward(task, response, false) })
}

// FormatScore and Score are compute_score's defaults.
const (
	FormatScore = 0.1
	Score       = 1.0
)

var answerTag = regexp.MustCompile(`<answer>(.*?)</answer>`)

// ExtractSolution is rLLM's extract_solution: after the first
// "Assistant:" (or "<|im_start|>assistant"), the stripped text of the last
// <answer>…</answer> on one line; ok is false when there is none.
func ExtractSolution(s string) (string, bool) {
	if _, after, found := strings.Cut(s, "Assistant:"); found {
		s = after
	} else if _, after, found := strings.Cut(s, "<|im_start|>assistant"); found {
		s = after
	}
	m := answerTag.FindAllStringSubmatch(s, -1)
	if len(m) == 0 {
		return "", false
	}
	return pystr.Strip(m[len(m)-1][1]), true
}

var digitRun = regexp.MustCompile(`\p{Nd}+`)

// ValidateEquation is rLLM's validate_equation: the numbers written in
// the equation (runs of decimal digits of any script, as Python's \d reads
// them) are the available numbers, each used once.
func ValidateEquation(eq string, available []*big.Rat) bool {
	var used []*big.Rat
	for _, run := range digitRun.FindAllString(eq, -1) {
		v := new(big.Int)
		for _, r := range run {
			v.Mul(v, big.NewInt(10))
			v.Add(v, big.NewInt(int64(pystr.Digit(r))))
		}
		used = append(used, new(big.Rat).SetInt(v))
	}
	if len(used) != len(available) {
		return false
	}
	cmp := func(a, b *big.Rat) int { return a.Cmp(b) }
	a := slices.SortedFunc(slices.Values(available), cmp)
	slices.SortFunc(used, cmp)
	for i := range a {
		if a[i].Cmp(used[i]) != 0 {
			return false
		}
	}
	return true
}

// allowedChars is evaluate_equation's pattern ^[\d+\-*/().\s]+$.
func allowedChars(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(unicode.Is(unicode.Nd, r) || strings.ContainsRune("+-*/().", r) || pystr.IsSpace(r)) {
			return false
		}
	}
	return true
}

// EvaluateEquation is rLLM's evaluate_equation: the pattern check, then
// Python's eval of the expression; ok is false where rLLM gets None (or a
// value that is no number).
func EvaluateEquation(eq string) (pyNum, bool) {
	if !allowedChars(eq) {
		return pyNum{}, false
	}
	v, err := pyEval(eq)
	return v, err == nil
}

// ComputeScore is rLLM's compute_score for target and numbers: score for
// an answer that uses each number once and evaluates within 1e-5 of the
// target, formatScore for any other answer in <answer> tags, 0 without
// one.
func ComputeScore(solution string, target *big.Rat, numbers []*big.Rat, formatScore, score float64) float64 {
	eq, ok := ExtractSolution(solution)
	if !ok {
		return 0
	}
	if !ValidateEquation(eq, numbers) {
		return formatScore
	}
	v, ok := EvaluateEquation(eq)
	if !ok {
		return formatScore
	}
	if closeTo(v, target) {
		return score
	}
	return formatScore
}

// closeTo is abs(result − target) < 1e-5 with Python's arithmetic: exact
// for an integer result and an integer target, in floats otherwise.
func closeTo(v pyNum, target *big.Rat) bool {
	switch v.kind {
	case 'i':
		if target.IsInt() {
			d := new(big.Rat).Sub(new(big.Rat).SetInt(v.i), target)
			return d.Abs(d).Cmp(big.NewRat(1, 100000)) < 0
		}
		f, err := v.toFloat()
		if err != nil {
			return false
		}
		t, _ := target.Float64()
		return math.Abs(f-t) < 1e-5
	case 'f':
		t, _ := target.Float64()
		return math.Abs(v.f-t) < 1e-5
	case 'c':
		t, _ := target.Float64()
		c := v.c - complex(t, 0)
		return math.Hypot(real(c), imag(c)) < 1e-5
	}
	return false
}

// taskNumbers reads a countdown task's target and nums (rLLM's columns).
func taskNumbers(task envs.Params) (target *big.Rat, nums []*big.Rat, err error) {
	tv, ok := task["target"]
	if !ok || tv == nil {
		return nil, nil, fmt.Errorf("a countdown task needs a target number")
	}
	if target, err = ratOf(tv); err != nil {
		return nil, nil, fmt.Errorf("target: %v", err)
	}
	raw, ok := task["nums"].([]any)
	if !ok {
		if v, present := task["nums"]; present && v != nil {
			return nil, nil, fmt.Errorf("nums must be a list of numbers, got %s", envs.DescribeArg(v))
		}
		return nil, nil, fmt.Errorf("a countdown task needs nums, the numbers to use")
	}
	if len(raw) == 0 || len(raw) > 64 {
		return nil, nil, fmt.Errorf("nums must hold 1 to 64 numbers, got %d", len(raw))
	}
	for i, x := range raw {
		r, err := ratOf(x)
		if err != nil {
			return nil, nil, fmt.Errorf("nums[%d]: %v", i, err)
		}
		nums = append(nums, r)
	}
	return target, nums, nil
}

func ratOf(v any) (*big.Rat, error) {
	p := envs.Params{"x": v}
	if n, err := p.Int("x", 0); err == nil {
		return new(big.Rat).SetInt64(n), nil
	}
	f, err := p.Float("x", 0)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%s is not a finite number", envs.DescribeArg(v))
	}
	return new(big.Rat).SetFloat64(f), nil
}

// reward is countdown_reward_fn (partial false: 1 or 0) or compute_score
// (partial true: 1, 0.1 or 0).
func reward(task envs.Params, response string, partial bool) (text.Reward, error) {
	target, nums, err := taskNumbers(task)
	if err != nil {
		return text.Reward{}, err
	}
	s := ComputeScore(response, target, nums, FormatScore, Score)
	eq, _ := ExtractSolution(response)
	info := text.Info{"answer": eq}
	switch {
	case s >= 1:
		info["validation"] = "correct_solution"
		return text.Reward{Reward: 1, Correct: true, Info: info}, nil
	case s > 0:
		info["validation"] = "partial_credit"
		if !partial {
			s = 0
		}
		return text.Reward{Reward: s, Info: info}, nil
	}
	info["validation"] = "incorrect_solution"
	return text.Reward{Reward: 0, Info: info}, nil
}
