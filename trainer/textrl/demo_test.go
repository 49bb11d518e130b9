package textrl

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	_ "github.com/agenttrainer/agenttrainer/envs/text/arith"
	_ "github.com/agenttrainer/agenttrainer/envs/text/countdown"
	tfl "github.com/agenttrainer/agenttrainer/envs/text/frozenlake"
	_ "github.com/agenttrainer/agenttrainer/envs/text/qa"
)

// Every built-in task's demonstration succeeds, and its chat ends with the
// winning answer.
func TestDemonstrations(t *testing.T) {
	for _, id := range []string{tfl.ID, "Arithmetic-v0", "Countdown-v0"} {
		spec, _ := text.Lookup(id)
		rows, err := spec.Generate(text.GenerateOptions{N: 20, Seed: 5, Args: envs.Params{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			tr, err := Demonstrate(MultiTurnOptions{Env: id, MaxTurns: 50}, row)
			if err != nil {
				t.Fatalf("%s %v: %v", id, row, err)
			}
			last := tr.Messages[len(tr.Messages)-1]
			if !tr.Success || tr.Reward != 1 || last.Role != "assistant" || tr.Turns < 1 {
				t.Fatalf("%s: %+v", id, tr)
			}
			if id == tfl.ID && (!strings.HasPrefix(tr.Messages[0].Content, "You are Qwen") || !strings.HasPrefix(last.Content, "```")) {
				t.Fatalf("FrozenLake transcript %+v", tr.Messages)
			}
		}
	}
	qaRow := envs.Params{"question": "2+2?", "answer": "4", "reward": "exact"}
	if tr, err := Demonstrate(MultiTurnOptions{Env: "QA-v0"}, qaRow); err != nil || tr.Messages[1].Content != "4" {
		t.Fatalf("QA demonstration %+v %v", tr, err)
	}
	if _, err := Demonstrate(MultiTurnOptions{Env: "QA-v0"}, envs.Params{"question": "q"}); err == nil {
		t.Fatal("a row without an answer was demonstrated")
	}
	// A lake the oracle cannot finish in the turn limit is refused.
	if _, err := Demonstrate(MultiTurnOptions{Env: tfl.ID, MaxTurns: 1}, envs.Params{"seed": 1630434966, "size": 5, "p": 0.623465}); err == nil {
		t.Fatal("an unfinished demonstration was accepted")
	}
}

// Single-turn tasks through the engine: one row per episode, the reward of
// the environment's verifier.
func TestSingleTurnEpisodes(t *testing.T) {
	tok := charTokenizer(t)
	sum := func(prompt string, seed uint64) (string, bool) {
		i := strings.LastIndex(prompt, "<|im_start|>user\n")
		q := strings.TrimSuffix(prompt[i+len("<|im_start|>user\n"):], "=<|im_end|>\n<|im_start|>assistant\n")
		a, b, _ := strings.Cut(q, "+")
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		if seed%2 == 0 {
			y++ // a wrong answer, by the seed
		}
		return strconv.Itoa(x + y), true
	}
	e := newEngine(t, Options{Tokenizer: tok, Generator: newScripted(t, tok, sum), Seed: 3})
	spec, _ := text.Lookup("Arithmetic-v0")
	rows, err := spec.Generate(text.GenerateOptions{N: 10, Seed: 1, Args: envs.Params{"digits": 3}})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := MultiTurn(MultiTurnOptions{Env: "Arithmetic-v0"})
	if err != nil {
		t.Fatal(err)
	}
	groups, _, err := e.Run(t.Context(), rows, 4, wf)
	if err != nil {
		t.Fatal(err)
	}
	right, wrong := 0, 0
	for _, g := range groups {
		for _, ep := range g {
			if ep.Termination != EnvDone || len(ep.Rows) != 1 || ep.Metrics["turns"] != 1 {
				t.Fatalf("%s, %d rows, %v", ep.Termination, len(ep.Rows), ep.Info)
			}
			s := ep.Trajectories[0].Steps[0]
			if ep.Correct != (ep.Reward() == 1) || ep.Rows[0].Reward != ep.Reward() || s.Info["expected"] == nil {
				t.Fatalf("reward %v correct %v info %v", ep.Reward(), ep.Correct, s.Info)
			}
			if ep.Correct {
				right++
			} else {
				wrong++
			}
		}
	}
	if right == 0 || wrong == 0 {
		t.Fatalf("%d right, %d wrong: the seeds should give both", right, wrong)
	}
}

// An agent that keeps its history gives one transcript holding every turn;
// one without gives a transcript a turn, each the chat the model saw then
// (the latest observation) and its answer.
func TestDemonstrationPerTurn(t *testing.T) {
	row := envs.Params{"seed": 1354522821, "size": 4, "p": 0.8}
	whole, err := Demonstrate(MultiTurnOptions{Env: tfl.ID}, row)
	if err != nil {
		t.Fatal(err)
	}
	if got := whole.PerTurn(); len(got) != 1 || len(got[0].Messages) != 1+2*whole.Turns || got[0].Turn != 0 {
		t.Fatalf("with history: %d transcripts, %d messages for %d turns", len(got), len(got[0].Messages), whole.Turns)
	}
	split, err := Demonstrate(MultiTurnOptions{Env: tfl.ID, AgentArgs: envs.Params{"accumulate_history": false, "system_prompt": ""}}, row)
	if err != nil {
		t.Fatal(err)
	}
	turns := split.PerTurn()
	if whole.Turns < 2 || len(turns) != whole.Turns {
		t.Fatalf("without history: %d transcripts for %d turns", len(turns), whole.Turns)
	}
	for i, tr := range turns {
		m := tr.Messages
		want := whole.Messages[2+2*i] // the same answer at the same turn
		if len(m) != 2 || m[0].Role != "user" || !strings.HasPrefix(m[0].Content, "Current Observation ("+strconv.Itoa(i)+")") ||
			m[1].Role != want.Role || m[1].Content != want.Content || tr.Turn != i+1 || !tr.Success {
			t.Fatalf("turn %d: %+v (want the answer %+v)", i+1, tr, want)
		}
	}
}
