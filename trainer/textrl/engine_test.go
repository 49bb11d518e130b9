package textrl

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/envs"
	tfl "github.com/agenttrainer/agenttrainer/envs/text/frozenlake"
)

func newEngine(t *testing.T, o Options) *Engine {
	t.Helper()
	if o.MaxPromptLength == 0 {
		o.MaxPromptLength = 8192
	}
	if o.MaxResponseLength == 0 {
		o.MaxResponseLength = 64
	}
	if o.Renderer == nil {
		o.Renderer = chatML()
	}
	e, err := NewEngine(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func lakeWorkflow(t *testing.T, agentArgs envs.Params, maxTurns int) WorkflowFactory {
	t.Helper()
	f, err := MultiTurn(MultiTurnOptions{Env: tfl.ID, AgentArgs: agentArgs, MaxTurns: maxTurns})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A perfect player reaches every goal in the shortest number of turns, and
// each episode is one row whose ids are exactly the rendered conversation
// (with the character tokenizer, piecewise encoding equals whole encoding),
// with mask 1 on the model's answers only.
func TestFrozenLakeEpisodesTokenInTokenOut(t *testing.T) {
	tok := charTokenizer(t)
	gen := newScripted(t, tok, solver)
	e := newEngine(t, Options{Tokenizer: tok, Generator: gen, MaxConcurrent: 4})
	tasks := lakeTasks(10)
	groups, st, err := e.Run(context.Background(), tasks, 2, lakeWorkflow(t, nil, 20))
	if err != nil {
		t.Fatal(err)
	}
	if st.Episodes != 20 || st.Requests != int(sum(groups, "turns")) {
		t.Fatalf("stats %+v for %v turns", st, sum(groups, "turns"))
	}
	for i, g := range groups {
		env, _ := tfl.New(tasks[i])
		env.Reset(nil)
		shortest := env.ShortestPath()
		for _, ep := range g {
			if ep.Termination != EnvDone || !ep.Correct || ep.Reward() != 1 || ep.Masked {
				t.Fatalf("task %d: %s correct %v reward %v info %v", i, ep.Termination, ep.Correct, ep.Reward(), ep.Info)
			}
			traj := ep.Trajectories[0]
			if len(traj.Steps) != shortest || len(ep.Rows) != 1 {
				t.Fatalf("task %d: %d steps (shortest %d), %d rows", i, len(traj.Steps), shortest, len(ep.Rows))
			}
			row := ep.Rows[0]
			last := traj.Last()
			text, err := chatML().Render(last.ChatCompletions, false)
			if err != nil {
				t.Fatal(err)
			}
			text = strings.TrimSuffix(text, "\n") // the model's ids end at <|im_end|>
			all := append(append([]int{}, row.PromptIDs...), row.ResponseIDs...)
			if want := tok.Encode(text, false); !reflect.DeepEqual(all, want) {
				t.Fatalf("task %d: the row's ids are not the conversation's:\n%q\n%q", i, tok.Decode(all), text)
			}
			if len(row.Mask) != len(row.ResponseIDs) || len(row.LogProbs) != len(row.ResponseIDs) {
				t.Fatal("mask, log-probs and response differ in length")
			}
			var model []int
			pos := 0
			for k, id := range row.ResponseIDs {
				if row.Mask[k] == 1 {
					model = append(model, id)
					if row.LogProbs[k] >= 0 {
						t.Fatalf("a sampled token without its log-probability at %d", k)
					}
				} else if row.LogProbs[k] != 0 {
					t.Fatalf("a log-probability on an environment token at %d", k)
				}
				pos++
			}
			var answers string
			for _, s := range traj.Steps {
				answers += tok.Decode(s.ResponseIDs)
				if s.FinishReason != "stop" || len(s.LogProbs) != len(s.ResponseIDs) {
					t.Fatalf("step tokens not attached: %+v", s)
				}
			}
			if got := tok.Decode(model); got != answers || !strings.HasSuffix(got, "```<|im_end|>") {
				t.Fatalf("masked tokens decode to %q, the answers were %q", got, answers)
			}
			if row.Reward != 1 || !reflect.DeepEqual(row.Steps, seq(len(traj.Steps))) {
				t.Fatalf("row reward %v steps %v", row.Reward, row.Steps)
			}
		}
	}
}

func sum(groups [][]*Episode, metric string) float64 {
	s := 0.0
	for _, g := range groups {
		for _, ep := range g {
			s += ep.Metrics[metric]
		}
	}
	return s
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// With the real Qwen3 tokenizer the pieces are encoded apart (the model's
// ids are never re-encoded), so the ids need not equal a whole encoding;
// they still decode to exactly the conversation.
func TestQwen3TokenizerRowsDecodeToTheConversation(t *testing.T) {
	tok := qwen3Tokenizer(t)
	gen := newScripted(t, tok, solver)
	e := newEngine(t, Options{Tokenizer: tok, Generator: gen})
	groups, _, err := e.Run(context.Background(), lakeTasks(4), 1, lakeWorkflow(t, envs.Params{"max_steps": 8}, 20))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		ep := g[0]
		if ep.Termination != EnvDone || len(ep.Rows) != 1 {
			t.Fatalf("%s, %d rows, %v", ep.Termination, len(ep.Rows), ep.Info)
		}
		row := ep.Rows[0]
		text, _ := chatML().Render(ep.Trajectories[0].Last().ChatCompletions, false)
		all := append(append([]int{}, row.PromptIDs...), row.ResponseIDs...)
		if got := tok.Decode(all); got != strings.TrimSuffix(text, "\n") {
			t.Fatalf("the row decodes to\n%q\nthe conversation is\n%q", got, text)
		}
		if !strings.Contains(tok.Decode(row.PromptIDs), "The maximum number of steps remaining is 8.") {
			t.Fatal("agent.args did not reach the agent")
		}
	}
}

// An agent that rewrites its history (accumulate_thinking = false drops
// what precedes </think> in the chat) breaks the prefix: every turn starts a
// new row, each faithful to what the model saw, and the mismatch is
// reported with where it happened.
func TestPrefixMismatchStartsANewRow(t *testing.T) {
	tok := charTokenizer(t)
	think := func(prompt string, s uint64) (string, bool) {
		return "<think>look</think>```" + bestMove(lastGrid(prompt)) + "```", true
	}
	e := newEngine(t, Options{Tokenizer: tok, Generator: newScripted(t, tok, think)})
	groups, _, err := e.Run(context.Background(), lakeTasks(3), 1, lakeWorkflow(t, envs.Params{"accumulate_thinking": false}, 20))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		ep := g[0]
		steps := len(ep.Trajectories[0].Steps)
		mm, _ := ep.Info["prefix_mismatches"].([]map[string]any)
		if ep.Termination != EnvDone || len(ep.Rows) != steps || len(mm) != steps-1 {
			t.Fatalf("%d steps gave %d rows and %d mismatches (%s)", steps, len(ep.Rows), len(mm), ep.Termination)
		}
		if steps > 1 && (mm[0]["turn"] != 1 || !strings.HasPrefix(mm[0]["expected"].(string), "<think>")) {
			t.Fatalf("mismatch report %v", mm[0])
		}
		for k, row := range ep.Rows {
			// Each row is the chat as it stood at its turn, then the answer.
			s := ep.Trajectories[0].Steps[k]
			if !reflect.DeepEqual(row.PromptIDs, s.PromptIDs) || !reflect.DeepEqual(row.ResponseIDs, s.ResponseIDs) {
				t.Fatalf("row %d is not step %d's prompt and answer", k, k)
			}
			if !strings.HasPrefix(tok.Decode(row.ResponseIDs), "<think>") {
				t.Fatal("the row lost the model's thinking")
			}
		}
	}
}

func TestTerminations(t *testing.T) {
	tok := charTokenizer(t)
	invalid := func(string, uint64) (string, bool) { return "I wait ```Stay```", true }
	long := func(string, uint64) (string, bool) { return strings.Repeat("hmm ", 40), false }
	for _, tt := range []struct {
		name   string
		pol    policy
		o      Options
		turns  int
		want   Termination
		masked bool
		steps  int
	}{
		{"max turns", invalid, Options{}, 3, MaxTurnsExceeded, false, 3},
		{"max turns masked by the overlong filter", invalid, Options{MaskTerminations: []Termination{MaxTurnsExceeded}}, 3, MaxTurnsExceeded, true, 3},
		{"max response length", long, Options{MaxResponseLength: 50}, 5, MaxResponseLengthExceeded, false, 1},
		// the system prompt alone is about 1,100 characters; the second
		// turn pushes past 1,400
		{"max prompt length", invalid, Options{MaxPromptLength: 1400}, 5, MaxPromptLengthExceeded, false, 1},
		{"prompt too long from the start", invalid, Options{MaxPromptLength: 100}, 5, MaxPromptLengthExceeded, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Tokenizer, tt.o.Generator = tok, newScripted(t, tok, tt.pol)
			e := newEngine(t, tt.o)
			groups, _, err := e.Run(context.Background(), lakeTasks(1), 1, lakeWorkflow(t, nil, tt.turns))
			if err != nil {
				t.Fatal(err)
			}
			ep := groups[0][0]
			if ep.Termination != tt.want || ep.Masked != tt.masked || len(ep.Trajectories[0].Steps) != tt.steps {
				t.Fatalf("%s (masked %v, %d steps, %v), want %s (masked %v, %d steps)", ep.Termination, ep.Masked, len(ep.Trajectories[0].Steps), ep.Info, tt.want, tt.masked, tt.steps)
			}
			if tt.want == MaxTurnsExceeded && !strings.Contains(ep.Trajectories[0].Last().ChatCompletions[3].Content, "Your last response is invalid") {
				t.Fatal("the agent did not note the invalid answer")
			}
			for _, r := range ep.Rows {
				n := 0
				for _, m := range r.Mask {
					n += int(m)
				}
				if (n == 0) != tt.masked {
					t.Fatalf("%d sampled tokens left in the mask", n)
				}
			}
		})
	}
}

// Many tasks, several samples each, with bounded concurrency and batches:
// the episodes are the same whatever the concurrency, because each request
// carries its own seed.
func TestParallelGroupsAreDeterministic(t *testing.T) {
	tok := charTokenizer(t)
	// A player that errs by its seed, so the outcome depends on the seed.
	noisy := func(prompt string, seed uint64) (string, bool) {
		if seed%3 == 0 {
			return "```Left```", true
		}
		return solver(prompt, seed)
	}
	run := func(conc, batch int) ([][]*Episode, Stats, *scripted) {
		gen := newScripted(t, tok, noisy)
		// An hour's linger: a partial batch goes out only when every worker
		// waits for the model, so how the batches form does not hang on how
		// busy the machine is.
		e := newEngine(t, Options{Tokenizer: tok, Generator: gen, MaxConcurrent: conc, MaxBatch: batch, Seed: 7, Linger: time.Hour})
		groups, st, err := e.Run(context.Background(), lakeTasks(8), 4, lakeWorkflow(t, nil, 6))
		if err != nil {
			t.Fatal(err)
		}
		return groups, st, gen
	}
	a, sa, ga := run(1, 1)
	b, sb, gb := run(6, 4)
	if sa.LargestBatch != 1 || sb.LargestBatch > 4 || sb.LargestBatch < 2 || sb.Batches >= sa.Batches {
		t.Fatalf("batching: serial %+v, parallel %+v", sa, sb)
	}
	if len(ga.prompts) != len(gb.prompts) {
		t.Fatalf("%d requests serially, %d in parallel", len(ga.prompts), len(gb.prompts))
	}
	outcomes := map[string]int{}
	for i := range a {
		if len(a[i]) != 4 {
			t.Fatalf("group %d has %d samples", i, len(a[i]))
		}
		for j := range a[i] {
			x, y := a[i][j], b[i][j]
			if x.ID != fmt.Sprintf("%d:%d", i, j) || x.Termination != y.Termination || x.Reward() != y.Reward() ||
				!reflect.DeepEqual(x.Rows, y.Rows) {
				t.Fatalf("episode %s differs between serial and parallel runs: %s %v / %s %v", x.ID, x.Termination, x.Reward(), y.Termination, y.Reward())
			}
			outcomes[string(x.Termination)]++
		}
	}
	if len(outcomes) < 2 {
		t.Fatalf("the seeded player should both win and lose: %v", outcomes)
	}
}

var _ = tokenizer.DecodeOptions{}
