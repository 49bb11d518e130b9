package textrl

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// closingEnv is a one-turn environment that counts its closes; a task
// with "fail" makes Close fail.
type closingEnv struct {
	closes *atomic.Int32
	fail   bool
}

func (e *closingEnv) Reset(envs.Params) (string, text.Info, error) { return "say hi", nil, nil }
func (e *closingEnv) Step(string) (string, float64, bool, text.Info, error) {
	return "", 1, true, nil, nil
}
func (e *closingEnv) Close() error {
	e.closes.Add(1)
	if e.fail {
		return errors.New("the session was already gone")
	}
	return nil
}

var closes atomic.Int32

func init() {
	text.Register(text.Spec{ID: "ClosingText-v0", Description: "test: counts closes", Agent: "single_turn", MaxTurns: 1,
		New: func(task envs.Params) (text.Env, error) {
			return &closingEnv{closes: &closes, fail: task["fail"] == true}, nil
		}})
}

// The engine closes every episode's environment when the episode ends,
// and a failing Close is reported on the episode, not the run.
func TestEngineClosesEnvironments(t *testing.T) {
	tok := charTokenizer(t)
	e := newEngine(t, Options{Tokenizer: tok, Generator: newScripted(t, tok, func(string, uint64) (string, bool) { return "hi", true }), MaxConcurrent: 3})
	f, err := MultiTurn(MultiTurnOptions{Env: "ClosingText-v0"})
	if err != nil {
		t.Fatal(err)
	}
	closes.Store(0)
	groups, _, err := e.Run(context.Background(), []envs.Params{{}, {"fail": true}}, 3, f)
	if err != nil {
		t.Fatal(err)
	}
	if n := closes.Load(); n != 6 {
		t.Errorf("%d environments closed, want 6", n)
	}
	if _, ok := groups[1][0].Info["close_error"]; !ok || groups[1][0].Termination != EnvDone {
		t.Errorf("a failing close: info %v, termination %s", groups[1][0].Info, groups[1][0].Termination)
	}
	if _, ok := groups[0][0].Info["close_error"]; ok {
		t.Errorf("a clean close reported an error: %v", groups[0][0].Info)
	}
}
