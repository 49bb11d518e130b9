package trainer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// scoringEnv is CartPole that reports, for each episode, its length as
// "score" and a figure with a name no sink can take.
type scoringEnv struct {
	envs.Env
	steps int
}

func (e *scoringEnv) Reset(seed int64, obs []float32) { e.steps = 0; e.Env.Reset(seed, obs) }

func (e *scoringEnv) Step(a, obs []float32) (float64, bool, bool) {
	e.steps++
	return e.Env.Step(a, obs)
}

func (e *scoringEnv) EpisodeStats(report func(string, float64)) {
	report("score", float64(e.steps))
	report("bad name", 1)
}

type reportingAgent struct {
	agents.Agent
	calls float64
}

func (a *reportingAgent) Report(add func(string, float64)) {
	a.calls++
	add("calls", a.calls)
}

// TestReportedFiguresAreRecorded: an environment's per-episode figures are
// averaged over the iteration's episodes (env/score is the mean episode
// length, which the trainer also measures), the agent's are recorded as
// given, and a name no sink can take is dropped with a warning.
func TestReportedFiguresAreRecorded(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, "ppo.total_timesteps=2048", "trainer.log_every_steps=0", "trainer.tensorboard=true")
	tr, err := New(cfg, Options{RunDir: dir,
		EnvFactory: func(p envs.Params) (envs.Env, error) {
			e, err := envs.Make("CartPole-v1", p)
			return &scoringEnv{Env: e}, err
		},
		AgentFactory: func(b agents.Build) (agents.Agent, error) {
			a, err := agents.New("random", b)
			return &reportingAgent{Agent: a}, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := tr.Subscribe(1 << 10)
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	warned := 0
	for e := range events {
		if e.Kind == EventLog && e.Message == `warning: the env reported a figure that cannot be recorded: metric name "env/bad name": use at most 64 letters, digits, '_', '.', '-' and '/'` {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("the bad name was said %d times, want once", warned)
	}
	ms, err := runstore.ReadMetrics(dir)
	if err != nil || len(ms) != 4 {
		t.Fatalf("%d records: %v", len(ms), err)
	}
	for i, m := range ms {
		score, _ := m.Value("env/score")
		if score < 8 || score > 500 {
			t.Errorf("iteration %d: env/score %v", i+1, score)
		}
		if calls, _ := m.Value("agent/calls"); calls != float64(i+1) {
			t.Errorf("iteration %d: agent/calls %v", i+1, calls)
		}
		if _, has := m.Extra["env/bad name"]; has {
			t.Error("the bad name was recorded")
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"env/score", "agent/calls"} {
		if !strings.Contains(string(data), tag) {
			t.Errorf("no %s in the TensorBoard events", tag)
		}
	}
}
