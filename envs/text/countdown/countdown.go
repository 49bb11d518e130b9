// Package countdown is the countdown task (reach a target with the given
// numbers, each once, with + − × ÷) with rLLM's reward, ported exactly from
// rllm/rewards/countdown_reward.py (commit 7982c508): the last <answer> tag,
// the numbers check, Python's eval of the expression, and the score 1 /
// 0.1 / 0 (countdown_score) or rLLM's countdown_reward_fn's 1 / 0
// (countdown). Registered as Countdown-v0; rows are rLLM's {target, nums}
// (Jiayi-Pan/Countdown-Tasks-3to4), and Generate makes solvable ones.
package countdown

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// ID is the registered name.
const ID = "Countdown-v0"

func init() {
	text.Register(text.Spec{
		ID:          ID,
		Description: "reach the target with the given numbers, each once, answer in <answer> tags (rLLM's countdown reward)",
		New:         func(task envs.Params) (text.Env, error) { return New(task) },
		Agent:       "single_turn",
		MaxTurns:    1,
		Columns:     []string{"target", "nums", "solution"},
		Generate:    Generate,
		Key:         Key,
	})
}

// Env is one countdown task: a single turn.
type Env struct {
	text.Scored
	question string
	target   *big.Rat
	nums     []*big.Rat
	solution string
}

// New builds a task from its row: target and nums (rLLM's columns);
// question (the prompt; rLLM's wording by default), solution (a known
// answer expression, for demonstrations), reward ("countdown_score" or
// "countdown") are optional.
func New(task envs.Params) (*Env, error) {
	if err := task.CheckArgs("target", "nums", "question", "solution", "reward", "ground_truth", "data_source"); err != nil {
		return nil, err
	}
	target, nums, err := taskNumbers(task)
	if err != nil {
		return nil, err
	}
	e := &Env{Scored: text.Scored{Task: task}, target: target, nums: nums}
	if e.Reward, err = task.String("reward", "countdown_score"); err != nil {
		return nil, err
	}
	if e.Fn, err = text.LookupReward(e.Reward); err != nil {
		return nil, err
	}
	if e.question, err = task.String("question", ""); err != nil {
		return nil, err
	}
	if e.question == "" {
		e.question = Question(nums, target)
	}
	if e.solution, err = task.String("solution", ""); err != nil {
		return nil, err
	}
	return e, nil
}

// Question is rLLM's prompt for a countdown task (prepare_countdown_data).
func Question(nums []*big.Rat, target *big.Rat) string {
	parts := make([]string, len(nums))
	for i, n := range nums {
		parts[i] = ratString(n)
	}
	return fmt.Sprintf("Using the numbers %s, find a way to reach the target number %s. You can use basic arithmetic operations (+, -, *, /) and each number can only be used once. Show your step-by-step calculation and output the final answer within <answer>...</answer>, for example <answer> (1 + 2) / 3 </answer>.",
		strings.Join(parts, ", "), ratString(target))
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
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

// Solution implements text.Oracle: the row's solution, or one found by
// search, in <answer> tags.
func (e *Env) Solution() (string, bool) {
	if e.Answered() {
		return "", false
	}
	s := e.solution
	if s == "" {
		var ok bool
		if s, ok = Solve(e.nums, e.target); !ok {
			return "", false
		}
	}
	return "<answer>" + s + "</answer>", true
}

// maxSolve bounds the numbers Solve searches over (6 numbers are 10⁷
// expressions at most).
const maxSolve = 6

type item struct {
	v    *big.Rat
	expr string
}

// Solve finds an expression that uses each number once and equals target,
// by exhaustive search over pairs (up to maxSolve numbers).
func Solve(nums []*big.Rat, target *big.Rat) (string, bool) {
	if len(nums) > maxSolve {
		return "", false
	}
	items := make([]item, len(nums))
	for i, n := range nums {
		items[i] = item{n, ratString(n)}
	}
	return solve(items, target)
}

func solve(items []item, target *big.Rat) (string, bool) {
	if len(items) == 1 {
		return items[0].expr, items[0].v.Cmp(target) == 0
	}
	for i := range items {
		for j := range items {
			if i == j {
				continue
			}
			a, b := items[i], items[j]
			rest := make([]item, 0, len(items)-1)
			for k := range items {
				if k != i && k != j {
					rest = append(rest, items[k])
				}
			}
			for _, op := range "+-*/" {
				if (op == '+' || op == '*') && i > j {
					continue // commutative: once is enough
				}
				v := new(big.Rat)
				switch op {
				case '+':
					v.Add(a.v, b.v)
				case '-':
					v.Sub(a.v, b.v)
				case '*':
					v.Mul(a.v, b.v)
				case '/':
					if b.v.Sign() == 0 {
						continue
					}
					v.Quo(a.v, b.v)
				}
				expr := "(" + a.expr + " " + string(op) + " " + b.expr + ")"
				if len(rest) == 0 {
					expr = a.expr + " " + string(op) + " " + b.expr
				}
				if s, ok := solve(append(rest, item{v, expr}), target); ok {
					return s, true
				}
			}
		}
	}
	return "", false
}

// Key implements Spec.Key: the sorted numbers and the target.
func Key(task envs.Params) (string, error) {
	target, nums, err := taskNumbers(task)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(nums))
	for i, n := range nums {
		parts[i] = n.RatString()
	}
	slices.Sort(parts)
	return strings.Join(parts, ",") + "→" + target.RatString(), nil
}

// Generate makes countdown tasks (Spec.Generate). Args: count (numbers per
// task, 2–6, default 3), max_num (largest number, default 99), max_target
// (default 999). Each task's target is built from its numbers by a random
// chain of operations with whole, positive intermediate results, and its
// row carries that solution.
func Generate(o text.GenerateOptions) ([]envs.Params, error) {
	if o.N < 1 || o.N > text.MaxGenerated {
		return nil, fmt.Errorf("the number of tasks must be between 1 and %d, got %d", text.MaxGenerated, o.N)
	}
	if err := o.Args.CheckArgs("count", "max_num", "max_target"); err != nil {
		return nil, err
	}
	count, err := o.Args.Int("count", 3)
	if err != nil {
		return nil, err
	}
	maxNum, err := o.Args.Int("max_num", 99)
	if err != nil {
		return nil, err
	}
	maxTarget, err := o.Args.Int("max_target", 999)
	if err != nil {
		return nil, err
	}
	if count < 2 || count > maxSolve || maxNum < 1 || maxNum > 1e6 || maxTarget < 1 || maxTarget > 1e9 {
		return nil, fmt.Errorf("count must be 2 to %d, max_num 1 to 10⁶ and max_target 1 to 10⁹ (got %d, %d, %d)", maxSolve, count, maxNum, maxTarget)
	}
	r := rand.New(rand.NewPCG(uint64(o.Seed), 0xc0de))
	seen := map[string]bool{}
	var rows []envs.Params
	for tries := 0; len(rows) < o.N; tries++ {
		if tries > 100*o.N+1000 {
			return nil, fmt.Errorf("only %d distinct countdown tasks found for %d asked (count %d, max_num %d, max_target %d): ask for fewer or widen the ranges", len(rows), o.N, count, maxNum, maxTarget)
		}
		nums := make([]int64, count)
		for i := range nums {
			nums[i] = 1 + r.Int64N(maxNum)
		}
		target, expr, ok := chain(r, nums, maxTarget)
		if !ok {
			continue
		}
		anyNums := make([]any, len(nums))
		for i, n := range nums {
			anyNums[i] = n
		}
		row := envs.Params{"target": target, "nums": anyNums, "solution": expr}
		key, _ := Key(row)
		if seen[key] || o.Exclude[key] {
			continue
		}
		seen[key] = true
		rows = append(rows, row)
	}
	return rows, nil
}

// chain combines the numbers in a random order with random operations
// whose results stay whole and positive.
func chain(r *rand.Rand, nums []int64, maxTarget int64) (int64, string, bool) {
	order := r.Perm(len(nums))
	v, expr := nums[order[0]], strconv.FormatInt(nums[order[0]], 10)
	for _, k := range order[1:] {
		n := nums[k]
		ops := []byte{'+', '*'}
		if v > n {
			ops = append(ops, '-')
		}
		if v%n == 0 {
			ops = append(ops, '/')
		}
		op := ops[r.IntN(len(ops))]
		switch op {
		case '+':
			v += n
		case '-':
			v -= n
		case '*':
			v *= n
		case '/':
			v /= n
		}
		if v > maxTarget {
			return 0, "", false
		}
		expr = "(" + expr + " " + string(op) + " " + strconv.FormatInt(n, 10) + ")"
	}
	return v, strings.TrimSuffix(strings.TrimPrefix(expr, "("), ")"), true
}
