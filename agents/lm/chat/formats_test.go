package chat

import (
	"strings"
	"testing"
)

var conversation = []Message{
	{Role: "system", Content: "Be brief."},
	{Role: "user", Content: "What is 2+2?"},
	{Role: "assistant", Content: "<think>\nadd\n</think>\n\n4"},
	{Role: "user", Content: "Weather?"},
	{Role: "assistant", Content: "<tool_call>\n{\"name\": \"w\"}\n</tool_call>"},
	{Role: "tool", Content: "18°C"},
	{Role: "tool", Content: "sunny"},
	{Role: "assistant", Content: "18°C and sunny.  "},
	{Role: "user", Content: "日本語"},
}

// Rendering messages[:k] is a prefix of rendering messages[:k+1], and the
// generation prompt after messages[:k] a prefix of the rendering with the
// assistant's turn k: a rollout's tokens stay where they were generated.
func TestPrefixPreserving(t *testing.T) {
	for name, r := range map[string]Renderer{
		"chatml":            NewChatML(ChatMLOptions{}),
		"chatml-default":    NewChatML(ChatMLOptions{DefaultSystem: "You are Qwen."}),
		"chatml-nothinking": NewChatML(ChatMLOptions{NoThinking: true}),
		"llama3":            NewLlama3(Llama3Options{}),
	} {
		for start := 0; start < 2; start++ {
			msgs := conversation[start:]
			// From one message on: with a default system turn, the empty
			// conversation renders that turn, which a system message replaces.
			prev, _ := r.Render(msgs[:1], false)
			for k := 1; k <= len(msgs); k++ {
				full, err := r.Render(msgs[:k], false)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(full, prev) {
					t.Fatalf("%s: rendering of %d messages %q does not start with that of %d, %q", name, k, full, k-1, prev)
				}
				prev = full
				if k < len(msgs) && msgs[k].Role == "assistant" {
					prompt, _ := r.Render(msgs[:k], true)
					next, _ := r.Render(msgs[:k+1], false)
					if name == "chatml-nothinking" {
						continue // the empty think block is the model's to write back
					}
					if !strings.HasPrefix(next, prompt) || !strings.HasPrefix(next[len(prompt):], msgs[k].Content) {
						t.Fatalf("%s: generation prompt %q is not followed by the assistant turn in %q", name, prompt, next)
					}
				}
			}
		}
	}
}

// Where the models' own templates are prefix-preserving (plain turns), the
// hand-written formats give the same text.
func TestFormatsMatchTemplates(t *testing.T) {
	plain := []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}, {Role: "user", Content: "bye"}}
	for _, c := range []struct {
		template string
		r        Renderer
		o        Options
	}{
		{"smollm2", NewChatML(ChatMLOptions{DefaultSystem: "You are a helpful AI assistant named SmolLM, trained by Hugging Face"}), Options{}},
		{"qwen2.5", NewChatML(ChatMLOptions{DefaultSystem: "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."}), Options{}},
		{"qwen3", NewChatML(ChatMLOptions{NoThinking: true}), Options{Vars: map[string]any{"enable_thinking": false}}},
		{"llama3", NewLlama3(Llama3Options{}), Options{BOSToken: "<|begin_of_text|>"}},
	} {
		for _, msgs := range [][]Message{plain, plain[1:]} {
			for _, gen := range []bool{false, true} {
				o := c.o
				o.AddGenerationPrompt = gen
				want, err := Render(readTemplate(t, c.template), msgs, o)
				if err != nil {
					t.Fatal(err)
				}
				got, err := c.r.Render(msgs, gen)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s (generation prompt %v):\n got %q\nwant %q", c.template, gen, got, want)
				}
			}
		}
	}
}

func TestUnknownRole(t *testing.T) {
	for _, r := range []Renderer{NewChatML(ChatMLOptions{}), NewLlama3(Llama3Options{})} {
		if _, err := r.Render([]Message{{Role: "narrator", Content: "x"}}, false); err == nil || !strings.Contains(err.Error(), `"narrator"`) {
			t.Errorf("%T: %v", r, err)
		}
	}
}

func TestMessageJSON(t *testing.T) {
	var m Message
	if err := m.UnmarshalJSON([]byte(`{"role":"assistant","content":null,"tool_calls":[{"name":"f","arguments":{"b":1,"a":2.5}}]}`)); err != nil {
		t.Fatal(err)
	}
	if m.Content != "" || m.Fields["tool_calls"] == nil {
		t.Errorf("decoded %+v", m)
	}
	out, err := Render(`{{ messages[0].tool_calls[0].arguments | tojson }}`, []Message{m}, Options{})
	if err != nil || out != `{"b": 1, "a": 2.5}` {
		t.Errorf("key order and numbers: %q, %v", out, err)
	}
	for _, bad := range []string{`[]`, `{"content":"x"}`, `{"role":"user","content":[{"type":"text"}]}`} {
		if err := m.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

// ChatMLTemplate renders as the ChatML format does.
func TestChatMLTemplate(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "2+2?"}, {Role: "assistant", Content: " 4\n"}, {Role: "user", Content: ""}}
	for k := 0; k <= len(msgs); k++ {
		for _, gen := range []bool{false, true} {
			want, err := NewChatML(ChatMLOptions{}).Render(msgs[:k], gen)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Render(ChatMLTemplate, msgs[:k], Options{AddGenerationPrompt: gen})
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%d messages, generation prompt %v: template %q, format %q", k, gen, got, want)
			}
		}
	}
}
