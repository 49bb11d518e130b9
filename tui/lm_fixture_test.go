package tui

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm/textagent"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// The fixture of a language-model run: what the LM trainer writes to its
// run directory (config.toml, metrics.jsonl through the metric registry,
// transcripts.jsonl), made with the real text FrozenLake and rLLM's
// FrozenLake agent, the model's words scripted.

// lmSamples is the group size (rollout.n) of the fixture.
const lmSamples = 4

// lmMoves are the scripted model's answers, one per sample: a plan, a
// wrong one, one with no move, a short one.
var lmMoves = [][]string{
	{"I should head right along the top row first.\n```Right```", "Now down toward the goal.\n```Down```", "```Down```", "```Right```", "```Down```", "```Right```"},
	{"Left looks safe.\n```Left```", "```Up```", "```Down```", "```Down```"},
	{"I am not sure where I am.", "Let me think about the holes.", "Still thinking."},
	{"```Down```", "```Right```", "```Down```", "```Right```", "```Down```", "```Right```"},
}

// lmTranscripts plays one group of iteration iter on a FrozenLake task.
func lmTranscripts(iter, group int) ([]runstore.Transcript, error) {
	row := envs.Params{"seed": int64(40 + group), "size": int64(4), "p": 0.8}
	var out []runstore.Transcript
	for s := range lmSamples {
		env, err := text.Make("TextFrozenLake-v0", row, nil)
		if err != nil {
			return nil, err
		}
		agent := textagent.NewFrozenLake(textagent.FrozenLakeOptions{AccumulateHistory: true, MaxSteps: 6})
		agent.Reset()
		obs, _, err := env.Reset(nil)
		if err != nil {
			return nil, err
		}
		agent.UpdateFromEnv(obs, 0, false, nil)
		t := runstore.Transcript{Iter: iter, Step: int64(iter) * 64, Split: "train", Env: "TextFrozenLake-v0",
			Task: strconv.Itoa(group), Group: group, Sample: s, Termination: "max_turns"}
		var rewards []float64
		moves := lmMoves[(s+iter)%len(lmMoves)]
		oracle, _ := env.(text.Oracle)
		if s == iter%lmSamples && oracle != nil {
			moves = make([]string, 8) // the model that found the way: the shortest path
		}
		for _, resp := range moves {
			if resp == "" {
				sol, ok := oracle.Solution()
				if !ok {
					break
				}
				resp = "The goal is below and to the right; this is the way.\n" + sol
			}
			action := agent.UpdateFromModel(resp)
			obs, r, done, _, err := env.Step(action)
			if err != nil {
				return nil, err
			}
			t.Reward += r
			rewards = append(rewards, r)
			t.Turns++
			agent.UpdateFromEnv(obs, r, done, nil)
			if done {
				t.Termination = "env_done"
				break
			}
		}
		if sc, ok := env.(text.Succeeder); ok {
			t.Correct = sc.Succeeded()
		}
		turn := 0
		for _, m := range agent.Messages() {
			tt := runstore.TranscriptTurn{Role: m.Role, Content: m.Content}
			if m.Role == "assistant" && turn < len(rewards) {
				r := rewards[turn]
				tt.Reward = &r
				turn++
			}
			t.Messages = append(t.Messages, tt)
		}
		out = append(out, t)
	}
	var mean float64
	for _, t := range out {
		mean += t.Reward / float64(len(out))
	}
	for i := range out {
		out[i].Advantage = out[i].Reward - mean
	}
	return out, nil
}

// lmMetrics is iteration iter's record: the reward as the return, the
// losses GRPO has (no value function), and figures of its own.
func lmMetrics(iter int) trainer.Metrics {
	i := float64(iter)
	f := func(v float64) trainer.Float { return trainer.Float(v) }
	reward := 0.2 + 0.6*(1-math.Exp(-i/15)) + 0.05*math.Sin(i)
	m := trainer.Metrics{Iter: iter, Step: int64(iter) * 64, TimeS: f(i * 2), SPS: f(32 + math.Sin(i)), Episodes: int64(iter * 16),
		EpReturnMean: f(reward), EpReturnMin: 0, EpReturnMax: 1, EpLengthMean: f(6 - 3*reward),
		PolicyLoss: f(-0.02 * math.Exp(-i/20)), ValueLoss: f(math.NaN()), Entropy: f(1.2 - 0.01*i),
		ApproxKL: f(0.001 + 0.0005*math.Sin(i)), ClipFrac: f(0.02), ExplainedVariance: f(math.NaN()), LR: 1e-5}
	m.Set("env/success_rate", reward)
	m.Set("agent/completion_length_mean", 18-6*reward)
	return m
}

// writeLMRun writes a language-model run of iters iterations under root.
func writeLMRun(t testing.TB, root, name string, iters int) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	if err := cfg.Set("env.id", "TextFrozenLake-v0"); err != nil {
		t.Fatal(err)
	}
	cfg.Agent.Name = "lm"
	if err := os.WriteFile(filepath.Join(dir, runstore.ConfigFile), []byte(cfg.TOML()), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= iters; i++ {
		appendLMIteration(t, dir, i)
	}
	return dir
}

// appendLMIteration appends iteration i's metrics and transcripts.
func appendLMIteration(t testing.TB, dir string, i int) {
	t.Helper()
	ts, err := lmTranscripts(i, i%3)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, tr := range ts {
		line, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	m, err := json.Marshal(lmMetrics(i))
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string]string{runstore.TranscriptsFile: b.String(), runstore.MetricsFile: string(m) + "\n"} {
		f, err := os.OpenFile(filepath.Join(dir, file), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(data); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// TestLMFixtureFeed keeps appending iterations to the language-model run in
// $LMAPP_FEED_DIR, one every $LMAPP_FEED_EVERY (default 2s), for driving
// the app by hand; skipped otherwise.
func TestLMFixtureFeed(t *testing.T) {
	dir := os.Getenv("LMAPP_FEED_DIR")
	if dir == "" {
		t.Skip("LMAPP_FEED_DIR not set")
	}
	every, err := time.ParseDuration(os.Getenv("LMAPP_FEED_EVERY"))
	if err != nil {
		every = 2 * time.Second
	}
	writeLMRun(t, filepath.Dir(dir), filepath.Base(dir), 1)
	for i := 2; i < 10000; i++ {
		time.Sleep(every + time.Duration(rand.IntN(100))*time.Millisecond)
		appendLMIteration(t, dir, i)
		fmt.Fprintf(os.Stderr, "iteration %d\n", i)
	}
}
