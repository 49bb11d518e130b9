package trainer

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// hostileEnv misbehaves as its task says: "panic" in its step (a reward
// function that fails), "error" returned from it, "nan" reward, "huge"
// observations of 4 MB, "ok" answers properly.
type hostileEnv struct{ mode string }

func (e *hostileEnv) Reset(envs.Params) (string, text.Info, error) { return "What is 1+1?", nil, nil }
func (e *hostileEnv) Step(string) (string, float64, bool, text.Info, error) {
	switch e.mode {
	case "panic":
		panic("the reward function divided by zero")
	case "error":
		return "", 0, true, nil, errEnvHostile
	case "nan":
		return "", math.NaN(), true, nil, nil
	case "huge":
		return strings.Repeat("x", 4<<20), 1, false, nil, nil
	}
	return "", 1, true, nil, nil
}

var errEnvHostile = &hostileError{"the verifier's server answered 500"}

type hostileError struct{ s string }

func (e *hostileError) Error() string { return e.s }

func init() {
	text.Register(text.Spec{ID: "HostileText-v0", Description: "test: misbehaves as its task says", Agent: "single_turn", MaxTurns: 3,
		Columns: []string{"mode"},
		New: func(task envs.Params) (text.Env, error) {
			m, _ := task["mode"].(string)
			return &hostileEnv{mode: m}, nil
		}})
}

// A language-model run on an environment whose reward function panics or
// fails, returns NaN rewards or huge observations trains on the rest: the
// bad episodes end with the error or max_prompt_length_exceeded
// termination and are masked or cut, the transcripts stay readable, and
// the run completes.
func TestLMHostileEnvironment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg := lmConfig(t, "env.id=HostileText-v0", "env.args={}", "data.train_batch_size=5", "rollout.n=2", "trainer.test_freq=0",
		"trainer.total_training_steps=1", "trainer.transcript_groups=5")
	var rows []envs.Params
	for _, m := range []string{"panic", "error", "nan", "huge", "ok"} {
		rows = append(rows, envs.Params{"mode": m})
	}
	tr, err := New(cfg, Options{RunDir: dir, Device: gpu.NewCPU(1), TrainTasks: rows})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := tr.Run(context.Background())
	tr.Close()
	if err != nil || sum.State != StateDone {
		t.Fatalf("run: %v %+v", err, sum)
	}
	trs, err := runstore.ReadTranscripts(dir)
	if err != nil {
		t.Fatal(err)
	}
	terms := map[string]int{}
	for _, x := range trs {
		terms[x.Termination]++
		for _, m := range x.Messages {
			if len(m.Content) > runstore.MaxTranscriptMessage+64 {
				t.Errorf("a transcript message of %d bytes was kept", len(m.Content))
			}
		}
	}
	// panic, error and nan: 2 samples each end in error; huge: prompt too
	// long; ok: env done (unless the tiny model ran out of tokens first).
	if terms["error"] != 6 || terms["max_prompt_length_exceeded"]+terms["max_response_length_exceeded"] < 2 || len(trs) != 10 {
		t.Errorf("terminations %v over %d transcripts", terms, len(trs))
	}
	if v, _ := sum.Last.Value("episodes/masked_frac"); v < 0.6 {
		t.Errorf("episodes/masked_frac %v, want the 6 error episodes of 10 masked at least", v)
	}
}

// A prompt longer than data.max_prompt_length ends every episode before
// anything is generated: nothing to train on, and the run says so in its
// figures instead of failing.
func TestLMPromptOverContext(t *testing.T) {
	cfg := lmConfig(t, "data.max_prompt_length=4", "trainer.test_freq=0", "trainer.total_training_steps=1")
	tr, err := New(cfg, Options{RunDir: filepath.Join(t.TempDir(), "run"), Device: gpu.NewCPU(1)})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := tr.Run(context.Background())
	tr.Close()
	if err != nil || sum.State != StateDone {
		t.Fatalf("run: %v %+v", err, sum)
	}
	if !math.IsNaN(float64(sum.Last.PolicyLoss)) {
		t.Errorf("policy loss %v with no token to train on, want NaN (null)", sum.Last.PolicyLoss)
	}
	if v, _ := sum.Last.Value("completions/mean_length"); v != 0 {
		t.Errorf("completions/mean_length %v, want 0", v)
	}
}
