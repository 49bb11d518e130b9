package text

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
)

// Reward is a reward function's verdict (rLLM's RewardOutput).
type Reward struct {
	Reward  float64
	Correct bool
	Info    Info // what the function found: the extracted answer, why it failed
}

// RewardFunc scores a response to a task (rLLM's RewardFunction:
// (task_info, action) → RewardOutput). An error is a failure of the function
// or of the task (a row without its answer), not a wrong response, which is
// a low reward.
type RewardFunc func(task envs.Params, response string) (Reward, error)

// Score calls fn and checks its verdict: a panic becomes an error naming
// the function, as does a reward that is not a finite number, so a broken
// reward function ends one episode with the error reason instead of the
// program.
func Score(name string, fn RewardFunc, task envs.Params, response string) (r Reward, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = Reward{}, fmt.Errorf("reward function %s failed: %v", name, p)
		}
	}()
	r, err = fn(task, response)
	if err != nil {
		return Reward{}, fmt.Errorf("reward function %s: %w", name, err)
	}
	if err := CheckReward(r.Reward); err != nil {
		return Reward{}, fmt.Errorf("reward function %s: %v", name, err)
	}
	return r, nil
}

type rewardSpec struct {
	fn          RewardFunc
	description string
}

var rewards = map[string]rewardSpec{}

// RegisterReward adds a named reward function (a dataset environment's
// `reward` argument picks one); it panics on a duplicate.
func RegisterReward(name, description string, fn RewardFunc) {
	if name == "" || fn == nil {
		panic("text: RegisterReward needs a name and a function")
	}
	if _, dup := rewards[name]; dup {
		panic("text: duplicate reward function " + name)
	}
	rewards[name] = rewardSpec{fn, description}
}

// LookupReward returns a registered reward function; the error lists the
// known ones.
func LookupReward(name string) (RewardFunc, error) {
	s, ok := rewards[name]
	if !ok {
		return nil, fmt.Errorf("unknown reward function %q (known: %s)", name, strings.Join(RewardNames(), ", "))
	}
	return s.fn, nil
}

// RewardNames are the registered reward functions' names, sorted.
func RewardNames() []string { return slices.Sorted(maps.Keys(rewards)) }

// RewardDescription is a registered reward function's one-line description.
func RewardDescription(name string) string { return rewards[name].description }

// Scored is a single-turn task's state: one answer, scored by a named
// reward function. Environments embed it for their Step and Succeeded.
type Scored struct {
	Task          envs.Params // what the reward function reads
	Reward        string      // its name, for messages
	Fn            RewardFunc
	correct, done bool
}

// Restart readies the task for a new answer.
func (s *Scored) Restart() { s.correct, s.done = false, false }

// Answered reports whether the answer was given.
func (s *Scored) Answered() bool { return s.done }

// Step implements Env for a single turn: the answer is scored (through
// Score) and the episode is over; a second answer is an error.
func (s *Scored) Step(action string) (string, float64, bool, Info, error) {
	if s.done {
		return "", 0, true, nil, errors.New("the task was already answered")
	}
	r, err := Score(s.Reward, s.Fn, s.Task, action)
	if err != nil {
		return "", 0, true, nil, err
	}
	s.done, s.correct = true, r.Correct
	return "", r.Reward, true, r.Info, nil
}

// Succeeded implements Succeeder: the answer was right.
func (s *Scored) Succeeded() bool { return s.correct }
