package textrl

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
)

// lastGridAny reads the last FrozenLake grid whatever the chat format.
func lastGridAny(prompt string) [][]byte {
	i := strings.LastIndex(prompt, "): \n")
	if i < 0 {
		return nil
	}
	return lastGrid(prompt[i-20:])
}

// The Llama-3 format is prefix-preserving: one merged row per episode,
// ending at the model's <|eot_id|>.
func TestLlama3Format(t *testing.T) {
	tok, err := tokenizer.NewChar(tokenizer.DefaultCharset+"√", []string{"<unk>", "<|eot_id|>", "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>"})
	if err != nil {
		t.Fatal(err)
	}
	gen := newScriptedEOS(t, tok, func(p string, s uint64) (string, bool) { return "```" + bestMove(lastGridAny(p)) + "```", true }, "<|eot_id|>")
	r := chat.NewLlama3(chat.Llama3Options{})
	e := newEngine(t, Options{Tokenizer: tok, Generator: gen, Renderer: r})
	groups, _, err := e.Run(context.Background(), lakeTasks(3), 1, lakeWorkflow(t, nil, 20))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		ep := g[0]
		if ep.Termination != EnvDone || len(ep.Rows) != 1 {
			t.Fatalf("%s, %d rows, %v", ep.Termination, len(ep.Rows), ep.Info)
		}
		text, _ := r.Render(ep.Trajectories[0].Last().ChatCompletions, false)
		row := ep.Rows[0]
		if got := tok.Decode(append(append([]int{}, row.PromptIDs...), row.ResponseIDs...)); got != text || !strings.HasPrefix(got, "<|begin_of_text|>") {
			t.Fatalf("the row decodes to\n%q\nthe conversation is\n%q", got, text)
		}
	}
}

// A model's own template (Qwen3's, real) works too: wherever a turn's
// rendering does not extend the row (Qwen3's template rewrites earlier
// assistant turns), a new row starts, each faithful to what the model saw.
func TestModelTemplate(t *testing.T) {
	tok := qwen3Tokenizer(t)
	b, err := os.ReadFile("../../agents/lm/tokenizer/testdata/qwen3/tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.Compile(cfg.ChatTemplate)
	if err != nil {
		t.Fatal(err)
	}
	r := TemplateRenderer{Template: tmpl, Options: chat.Options{Vars: map[string]any{"enable_thinking": false}}}
	gen := newScripted(t, tok, func(p string, s uint64) (string, bool) { return "```" + bestMove(lastGridAny(p)) + "```", true })
	e := newEngine(t, Options{Tokenizer: tok, Generator: gen, Renderer: r})
	groups, _, err := e.Run(context.Background(), lakeTasks(3), 1, lakeWorkflow(t, nil, 20))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		ep := g[0]
		steps := ep.Trajectories[0].Steps
		mm, _ := ep.Info["prefix_mismatches"].([]map[string]any)
		if ep.Termination != EnvDone || len(ep.Rows) != len(mm)+1 {
			t.Fatalf("%s, %d rows, %d mismatches", ep.Termination, len(ep.Rows), len(mm))
		}
		for _, row := range ep.Rows {
			k := row.Steps[0]
			want, _ := r.Render(steps[k].ChatCompletions[:len(steps[k].ChatCompletions)-1], true)
			if got := tok.Decode(row.PromptIDs); got != want {
				t.Fatalf("row starting at turn %d: prompt\n%q\nrendered\n%q", k, got, want)
			}
		}
		t.Logf("%d turns in %d rows", len(steps), len(ep.Rows))
	}
}
