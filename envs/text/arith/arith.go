// Package arith is multi-digit arithmetic as a single-turn text task: a row
// {a, op, b} asks "a+b=" (or −, ×), the answer must be the result's
// digits exactly. Rows carry their digit count so that a curriculum can
// order them; Generate makes sets of a given width. Registered as
// Arithmetic-v0; the single-turn agent plays it.
package arith

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// ID is the registered name.
const ID = "Arithmetic-v0"

func init() {
	text.Register(text.Spec{
		ID:          ID,
		Description: "multi-digit addition (and − ×) answered with the exact digits; a curriculum by digits",
		New:         func(task envs.Params) (text.Env, error) { return New(task) },
		Agent:       "single_turn",
		MaxTurns:    1,
		Columns:     []string{"a", "op", "b", "digits"},
		Generate:    Generate,
		Key:         Key,
	})
}

// MaxDigits bounds an operand (int64 holds 18 digits).
const MaxDigits = 18

// Env is one problem.
type Env struct {
	a, b    int64
	op      string
	answer  string
	correct bool
	done    bool
}

// New builds a problem from its row: a and b (integers of at most 18
// digits), op ("+", "-" or "*"; default "+"); digits is bookkeeping.
func New(task envs.Params) (*Env, error) {
	if err := task.CheckArgs("a", "b", "op", "digits"); err != nil {
		return nil, err
	}
	for _, k := range []string{"a", "b"} {
		if _, ok := task[k]; !ok {
			return nil, fmt.Errorf("an arithmetic task needs a and b; %s is missing", k)
		}
	}
	e := &Env{}
	var err error
	if e.a, err = task.Int("a", 0); err != nil {
		return nil, err
	}
	if e.b, err = task.Int("b", 0); err != nil {
		return nil, err
	}
	const limit = 999_999_999_999_999_999
	if e.a < -limit || e.a > limit || e.b < -limit || e.b > limit {
		return nil, fmt.Errorf("a and b must have at most %d digits", MaxDigits)
	}
	if e.op, err = task.String("op", "+"); err != nil {
		return nil, err
	}
	x, y := big.NewInt(e.a), big.NewInt(e.b)
	switch e.op {
	case "+":
		x.Add(x, y)
	case "-":
		x.Sub(x, y)
	case "*":
		x.Mul(x, y)
	default:
		return nil, fmt.Errorf("op must be \"+\", \"-\" or \"*\", got %q", e.op)
	}
	e.answer = x.String()
	return e, nil
}

// Question is the prompt: "a+b=".
func (e *Env) Question() string { return fmt.Sprintf("%d%s%d=", e.a, e.op, e.b) }

// Answer is the result's digits.
func (e *Env) Answer() string { return e.answer }

// Reset implements text.Env.
func (e *Env) Reset(task envs.Params) (string, text.Info, error) {
	if task != nil {
		n, err := New(task)
		if err != nil {
			return "", nil, err
		}
		*e = *n
	}
	e.done, e.correct = false, false
	return e.Question(), text.Info{}, nil
}

// Step implements text.Env: 1 for exactly the result's digits (surrounding
// space aside), else 0.
func (e *Env) Step(action string) (string, float64, bool, text.Info, error) {
	if e.done {
		return "", 0, true, nil, fmt.Errorf("the problem was already answered")
	}
	e.done = true
	got := strings.TrimSpace(action)
	e.correct = got == e.answer
	r := 0.0
	if e.correct {
		r = 1
	}
	return "", r, true, text.Info{"answer": got, "expected": e.answer}, nil
}

// Succeeded implements text.Succeeder.
func (e *Env) Succeeded() bool { return e.correct }

// Solution implements text.Oracle.
func (e *Env) Solution() (string, bool) { return e.answer, !e.done }

// Key implements Spec.Key.
func Key(task envs.Params) (string, error) {
	e, err := New(task)
	if err != nil {
		return "", err
	}
	return e.Question(), nil
}

// Generate makes problems (Spec.Generate). Args: digits (the operands'
// width, 1–18, default 3), min_digits (default digits: each problem's
// width is drawn from min_digits…digits, the curriculum's range), ops (the
// operations to draw from, default "+").
func Generate(o text.GenerateOptions) ([]envs.Params, error) {
	if o.N < 1 || o.N > text.MaxGenerated {
		return nil, fmt.Errorf("the number of tasks must be between 1 and %d, got %d", text.MaxGenerated, o.N)
	}
	if err := o.Args.CheckArgs("digits", "min_digits", "ops"); err != nil {
		return nil, err
	}
	digits, err := o.Args.Int("digits", 3)
	if err != nil {
		return nil, err
	}
	minDigits, err := o.Args.Int("min_digits", digits)
	if err != nil {
		return nil, err
	}
	ops, err := o.Args.String("ops", "+")
	if err != nil {
		return nil, err
	}
	if digits < 1 || digits > MaxDigits || minDigits < 1 || minDigits > digits {
		return nil, fmt.Errorf("digits must be 1 to %d and min_digits 1 to digits (got %d and %d)", MaxDigits, digits, minDigits)
	}
	if ops == "" || strings.Trim(ops, "+-*") != "" {
		return nil, fmt.Errorf("ops is a string of the operations to use, from \"+-*\", got %q", ops)
	}
	r := rand.New(rand.NewPCG(uint64(o.Seed), 0xadd))
	seen := map[string]bool{}
	var rows []envs.Params
	for tries := 0; len(rows) < o.N; tries++ {
		if tries > 20*o.N+1000 {
			return nil, fmt.Errorf("only %d distinct problems of %d to %d digits for %d asked: ask for fewer or allow more digits", len(rows), minDigits, digits, o.N)
		}
		d := minDigits + r.Int64N(digits-minDigits+1)
		row := envs.Params{"a": operand(r, d), "op": string(ops[r.IntN(len(ops))]), "b": operand(r, d), "digits": d}
		key, _ := Key(row)
		if seen[key] || o.Exclude[key] {
			continue
		}
		seen[key] = true
		rows = append(rows, row)
	}
	return rows, nil
}

// operand is a number of exactly d digits (0–9 for one digit).
func operand(r *rand.Rand, d int64) int64 {
	lo := int64(1)
	for range d - 1 {
		lo *= 10
	}
	if d == 1 {
		return r.Int64N(10)
	}
	return lo + r.Int64N(9*lo)
}
