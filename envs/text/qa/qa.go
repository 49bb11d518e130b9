// Package qa is a single-turn text environment over any dataset of
// questions and answers (JSON Lines, CSV or Parquet rows: question or
// problem or prompt, and answer or ground_truth), scored by a verifier:
// exact match, numeric, or rLLM's math reward ported faithfully (math.go),
// or any registered reward function (countdown's, say). Registered as
// QA-v0; rLLM's single-turn math agent plays it.
package qa

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// ID is the registered name.
const ID = "QA-v0"

func init() {
	text.Register(text.Spec{
		ID:          ID,
		Description: "answer a dataset's questions ({question, answer} rows), scored exactly, numerically or as rLLM's math reward",
		New:         func(task envs.Params) (text.Env, error) { return New(task) },
		Agent:       "single_turn",
		MaxTurns:    1,
		Columns:     []string{"question", "answer"},
		Key: func(task envs.Params) (string, error) {
			q, err := question(task)
			return q, err
		},
	})
	text.RegisterReward("exact", "the answer (after </think>, stripped) equals the row's answer exactly", exact)
	text.RegisterReward("numeric", "the last number in the answer equals the row's answer as a number (relative 1e-9)", numeric)
}

var errMissingAnswer = errors.New("the row has no answer (or ground_truth) to score against")

// Env is one question.
type Env struct {
	text.Scored
	question string
}

// New builds a question from its row: question (or problem, or prompt),
// answer (or ground_truth; a list is several accepted answers), and
// reward, the verifier's name (default "math"). Other columns are kept for
// reward functions that read them (countdown's target and nums).
func New(task envs.Params) (*Env, error) {
	q, err := question(task)
	if err != nil {
		return nil, err
	}
	e := &Env{Scored: text.Scored{Task: task}, question: q}
	if e.Reward, err = task.String("reward", "math"); err != nil {
		return nil, err
	}
	if e.Fn, err = text.LookupReward(e.Reward); err != nil {
		return nil, err
	}
	return e, nil
}

// question is the prompt column, in rLLM's SimpleWorkflow's order.
func question(task envs.Params) (string, error) {
	for _, k := range []string{"question", "problem", "prompt"} {
		if v, ok := task[k]; ok && v != nil {
			s, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("%s must be text, got %s", k, envs.DescribeArg(v))
			}
			if strings.TrimSpace(s) == "" {
				return "", fmt.Errorf("%s is empty", k)
			}
			return s, nil
		}
	}
	return "", errors.New("a question row needs a question (or problem, or prompt) column")
}

// Reset implements text.Env.
func (e *Env) Reset(task envs.Params) (string, text.Info, error) {
	if task != nil {
		n, err := New(task)
		if err != nil {
			return "", nil, err
		}
		*e = *n
	}
	e.Restart()
	return e.question, text.Info{}, nil
}

// Solution implements text.Oracle: the row's (first) answer, boxed for the
// math verifier, as it is for the others.
func (e *Env) Solution() (string, bool) {
	truths, err := groundTruths(e.Task)
	if err != nil || len(truths) == 0 || e.Answered() {
		return "", false
	}
	if e.Reward == "math" && !strings.Contains(truths[0], "\\boxed") {
		return "\\boxed{" + truths[0] + "}", true
	}
	return truths[0], true
}

func afterThink(s string) string {
	if i := strings.LastIndex(s, "</think>"); i >= 0 {
		s = s[i+len("</think>"):]
	}
	return strings.TrimSpace(s)
}

func exact(task envs.Params, response string) (text.Reward, error) {
	truths, err := groundTruths(task)
	if err != nil {
		return text.Reward{}, err
	}
	got := afterThink(response)
	for _, t := range truths {
		if got == strings.TrimSpace(t) {
			return text.Reward{Reward: 1, Correct: true, Info: text.Info{"answer": got}}, nil
		}
	}
	return text.Reward{Info: text.Info{"answer": got}}, nil
}

var numberPattern = regexp.MustCompile(`[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`)

// lastNumber is the last number written in s (thousands commas allowed).
func lastNumber(s string) (float64, string, bool) {
	m := numberPattern.FindAllString(s, -1)
	for i := len(m) - 1; i >= 0; i-- {
		if f, ok := pyFloat(strings.ReplaceAll(m[i], ",", "")); ok {
			return f, m[i], true
		}
	}
	return 0, "", false
}

func numeric(task envs.Params, response string) (text.Reward, error) {
	truths, err := groundTruths(task)
	if err != nil {
		return text.Reward{}, err
	}
	got, written, ok := lastNumber(afterThink(response))
	if !ok {
		return text.Reward{Info: text.Info{"validation": "no number"}}, nil
	}
	for _, t := range truths {
		want, _, ok := lastNumber(t)
		if !ok {
			return text.Reward{}, fmt.Errorf("the answer %q holds no number", t)
		}
		if math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) {
			return text.Reward{Reward: 1, Correct: true, Info: text.Info{"answer": written}}, nil
		}
	}
	return text.Reward{Info: text.Info{"answer": written}}, nil
}
