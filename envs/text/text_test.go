package text

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

func TestMergeRowWins(t *testing.T) {
	got := Merge(envs.Params{"seed": 1, "p": 0.9}, envs.Params{"p": 0.8, "reward": "exact"})
	if got["seed"] != 1 || got["p"] != 0.9 || got["reward"] != "exact" || len(got) != 3 {
		t.Fatalf("%v", got)
	}
	if len(Merge(nil, nil)) != 0 {
		t.Fatal("merging nothing gave something")
	}
}

func TestScore(t *testing.T) {
	for _, tt := range []struct {
		name string
		fn   RewardFunc
		want string
	}{
		{"panics", func(envs.Params, string) (Reward, error) { panic("index out of range") }, "reward function panics failed: index out of range"},
		{"nan", func(envs.Params, string) (Reward, error) { return Reward{Reward: math.NaN()}, nil }, "reward function nan: reward NaN is not a finite number"},
		{"inf", func(envs.Params, string) (Reward, error) { return Reward{Reward: math.Inf(1)}, nil }, "reward function inf: reward +Inf is not a finite number"},
		{"fails", func(envs.Params, string) (Reward, error) { return Reward{}, errors.New("no answer column") }, "reward function fails: no answer column"},
	} {
		if _, err := Score(tt.name, tt.fn, nil, "x"); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	s := Scored{Reward: "one", Fn: func(envs.Params, string) (Reward, error) { return Reward{Reward: 1, Correct: true}, nil }}
	if _, r, done, _, err := s.Step("a"); r != 1 || !done || err != nil || !s.Succeeded() {
		t.Fatalf("%v %v %v", r, done, err)
	}
	if _, _, _, _, err := s.Step("b"); err == nil {
		t.Fatal("a second answer was scored")
	}
	s.Restart()
	if s.Answered() || s.Succeeded() {
		t.Fatal("Restart kept the answer")
	}
}

func TestMakeErrors(t *testing.T) {
	Register(Spec{ID: "test/Broken", MaxTurns: 1, New: func(envs.Params) (Env, error) { panic("nil map") }})
	Register(Spec{ID: "test/Refuses", MaxTurns: 1, New: func(envs.Params) (Env, error) { return nil, errors.New("size must be positive") }})
	if _, err := Make("test/Nope", nil, nil); err == nil || !strings.Contains(err.Error(), "unknown text environment") {
		t.Errorf("%v", err)
	}
	if _, err := Make("test/Broken", nil, nil); err == nil || !strings.Contains(err.Error(), "building the environment failed: nil map") {
		t.Errorf("%v", err)
	}
	var ae *envs.ArgsError
	if _, err := Make("test/Refuses", nil, nil); !errors.As(err, &ae) {
		t.Errorf("a constructor's refusal is not an argument error: %v", err)
	}
	if _, err := LookupReward("nope"); err == nil {
		t.Error("an unknown reward function was found")
	}
}
