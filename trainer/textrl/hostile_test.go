package textrl

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	tfl "github.com/agenttrainer/agenttrainer/envs/text/frozenlake"
)

// hostileEnv misbehaves as its task's "mode" says.
type hostileEnv struct {
	mode    string
	release chan struct{}
}

// hostileRelease lets the hung environments go when a test ends.
var hostileRelease chan struct{}

func init() {
	text.Register(text.Spec{ID: "test/Hostile", Description: "misbehaves on purpose", Agent: "single_turn", MaxTurns: 3,
		New: func(task envs.Params) (text.Env, error) {
			mode, err := task.String("mode", "")
			if err != nil {
				return nil, err
			}
			if mode == "panic_new" {
				panic("constructor broke")
			}
			return &hostileEnv{mode: mode, release: hostileRelease}, nil
		}})
}

func (h *hostileEnv) Reset(envs.Params) (string, text.Info, error) {
	switch h.mode {
	case "panic_reset":
		panic("reset broke")
	case "huge_reset":
		return strings.Repeat("x", 50<<20), nil, nil
	case "error_reset":
		return "", nil, errors.New("the task's answer column is missing")
	}
	return "What is 2+2?", text.Info{}, nil
}

func (h *hostileEnv) Step(action string) (string, float64, bool, text.Info, error) {
	switch h.mode {
	case "panic_step":
		panic("step broke")
	case "hang":
		<-h.release
	case "huge_step":
		return strings.Repeat("y", 20<<20), 0, false, nil, nil
	case "bad_utf8":
		return "fine \xff\xfe then", 0.5, false, nil, nil
	case "nan":
		return "", math.NaN(), true, nil, nil
	case "reward_panics":
		_, err := text.Score("test", func(envs.Params, string) (text.Reward, error) { panic("index out of range") }, nil, action)
		return "", 0, true, nil, err
	}
	return "", 1, true, nil, nil
}

func TestHostileEnvironments(t *testing.T) {
	hostileRelease = make(chan struct{})
	t.Cleanup(func() { close(hostileRelease) })
	tok := charTokenizer(t)
	answer := func(string, uint64) (string, bool) { return "4", true }
	e := newEngine(t, Options{Tokenizer: tok, Generator: newScripted(t, tok, answer), MaxPromptLength: 2000, MaxConcurrent: 4})
	// Only the hung environment meets the timeout: the others must end by
	// themselves however loaded the machine.
	timed := newEngine(t, Options{Tokenizer: tok, Generator: newScripted(t, tok, answer), MaxPromptLength: 2000,
		Timeout: time.Second, MaxConcurrent: 4})
	wf, err := MultiTurn(MultiTurnOptions{Env: "test/Hostile"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mode   string
		want   Termination
		info   string // in Info["error"] or the termination detail
		masked bool
	}{
		{"", EnvDone, "", false},
		{"panic_new", Error, "constructor broke", true},
		{"panic_reset", Error, "reset broke", true},
		{"error_reset", Error, "answer column is missing", true},
		{"panic_step", Error, "step broke", true},
		{"reward_panics", Error, "reward function test failed: index out of range", true},
		{"nan", Error, "reward NaN is not a finite number", true},
		{"hang", Timeout, "", false},
		{"huge_reset", MaxPromptLengthExceeded, "observation of 52428800 bytes", false},
		{"huge_step", MaxPromptLengthExceeded, "observation of 20971520 bytes", false},
		{"bad_utf8", MaxTurnsExceeded, "", false},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			start := time.Now()
			eng := e
			if tt.mode == "hang" {
				eng = timed
			}
			groups, _, err := eng.Run(context.Background(), []envs.Params{{"mode": tt.mode}}, 2, wf)
			if err != nil {
				t.Fatal(err)
			}
			for _, ep := range groups[0] {
				msg, _ := ep.Info["error"].(string)
				detail, _ := ep.Info["termination_detail"].(string)
				if ep.Termination != tt.want || ep.Masked != tt.masked || !strings.Contains(msg+detail, tt.info) {
					t.Fatalf("%s masked %v info %v; want %s masked %v saying %q", ep.Termination, ep.Masked, ep.Info, tt.want, tt.masked, tt.info)
				}
				for _, r := range ep.Rows {
					for _, m := range r.Mask {
						if tt.masked && m != 0 {
							t.Fatal("an error episode kept sampled tokens in its mask")
						}
					}
				}
			}
			if tt.mode == "bad_utf8" {
				ep := groups[0][0]
				if ep.Info["invalid_utf8"] != 3 || !strings.Contains(ep.Trajectories[0].Steps[1].Observation, "fine \uFFFD then") {
					t.Fatalf("invalid UTF-8 not replaced and counted: %v", ep.Info)
				}
			}
			if tt.mode == "huge_step" && len(groups[0][0].Trajectories[0].Steps) != 1 {
				t.Fatal("the answer before the huge observation was lost")
			}
			if d := time.Since(start); tt.mode == "hang" && d > time.Minute {
				t.Fatalf("a hung environment held the rollout for %v", d)
			}
		})
	}
}

// bad is a generator that breaks its contract in one way.
type bad struct {
	s   *scripted
	how string
}

func (b *bad) Generate(ctx context.Context, reqs []Request) ([]Generation, error) {
	switch b.how {
	case "error":
		return nil, errors.New("CUDA out of memory")
	case "panic":
		panic("kernel fault")
	case "short":
		return nil, nil
	}
	gens, _ := b.s.Generate(ctx, reqs)
	for i := range gens {
		switch b.how {
		case "logprobs":
			gens[i].LogProbs = gens[i].LogProbs[1:]
		case "vocab":
			gens[i].IDs[0] = 1 << 30
		case "nan":
			gens[i].LogProbs[0] = float32(math.NaN())
		case "positive":
			gens[i].LogProbs[0] = 0.5
		case "finish":
			gens[i].Finish = "eos"
		case "long":
			gens[i].IDs = make([]int, 100)
			gens[i].LogProbs = make([]float32, 100)
		}
	}
	return gens, nil
}

func TestBrokenGenerators(t *testing.T) {
	tok := charTokenizer(t)
	for _, tt := range []struct{ how, want string }{
		{"error", "CUDA out of memory"},
		{"panic", "the generator failed: kernel fault"},
		{"short", "returned 0 generations for"},
		{"logprobs", "log-probabilities"},
		{"vocab", "outside the vocabulary"},
		{"nan", "log-probability NaN"},
		{"positive", "log-probability 0.5"},
		{"finish", `finish reason "eos"`},
		{"long", "more than max_tokens 64"},
	} {
		t.Run(tt.how, func(t *testing.T) {
			gen := &bad{s: newScripted(t, tok, solver), how: tt.how}
			e := newEngine(t, Options{Tokenizer: tok, Generator: gen, MaxBatch: 2})
			groups, _, err := e.Run(context.Background(), lakeTasks(1), 2, lakeWorkflow(t, nil, 4))
			if err != nil {
				t.Fatal(err)
			}
			for _, ep := range groups[0] {
				if msg, _ := ep.Info["error"].(string); ep.Termination != Error || !ep.Masked || !strings.Contains(msg, tt.want) {
					t.Fatalf("%s %v, want an error saying %q", ep.Termination, ep.Info, tt.want)
				}
			}
		})
	}
}

// A malformed row costs its own episodes, not the run.
func TestMalformedRowsAreEpisodeErrors(t *testing.T) {
	tok := charTokenizer(t)
	e := newEngine(t, Options{Tokenizer: tok, Generator: newScripted(t, tok, solver)})
	tasks := []envs.Params{{"seed": 1, "size": 4}, {"seed": 5, "size": 4, "p": 0.8}, {"seed": "x", "size": 4, "p": 0.8}}
	groups, _, err := e.Run(context.Background(), tasks, 1, lakeWorkflow(t, nil, 10))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"seed, size and p", "", "seed must be an integer"} {
		ep := groups[i][0]
		msg, _ := ep.Info["error"].(string)
		if (want == "") != (ep.Termination == EnvDone) || !strings.Contains(msg, want) {
			t.Errorf("row %d: %s %q, want an error saying %q", i, ep.Termination, msg, want)
		}
	}
	if _, err := MultiTurn(MultiTurnOptions{Env: "TextFrozenLak-v0"}); err == nil || !strings.Contains(err.Error(), tfl.ID) {
		t.Errorf("a misspelt environment: %v", err)
	}
	if _, err := MultiTurn(MultiTurnOptions{Env: tfl.ID, AgentArgs: envs.Params{"max_step": 3}}); err == nil {
		t.Error("a misspelt agent argument was accepted")
	}
}

// Cancelling the rollout ends every episode promptly.
func TestCancelledRollout(t *testing.T) {
	tok := charTokenizer(t)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	slow := func(prompt string, seed uint64) (string, bool) {
		n++
		if n == 3 {
			cancel()
		}
		return "```Stay```", true
	}
	e := newEngine(t, Options{Tokenizer: tok, Generator: newScripted(t, tok, slow), MaxConcurrent: 1})
	groups, _, err := e.Run(ctx, lakeTasks(5), 1, lakeWorkflow(t, nil, 50))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	if len(groups) != 5 || groups[4][0].Termination != Error {
		t.Fatalf("the last episode: %s", groups[4][0].Termination)
	}
}
