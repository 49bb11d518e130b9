package chat

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readTemplate(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "templates", name+".jinja"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The real Qwen3 and Qwen2.5 templates and Llama-3's and SmolLM2's, on the
// conversations of scripts/chat-reference/render.py, against Python's
// jinja2 with transformers' settings.
func TestJinja2Golden(t *testing.T) {
	f, err := os.Open("testdata/jinja2_golden.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Tools         []json.RawMessage `json:"tools"`
		Conversations [][]Message       `json:"conversations"`
		Cases         []struct {
			Conversation        int            `json:"conversation"`
			Template            string         `json:"template"`
			AddGenerationPrompt bool           `json:"add_generation_prompt"`
			Vars                map[string]any `json:"vars"`
			Tools               bool           `json:"tools"`
			Output              *string        `json:"output"`
			Error               *string        `json:"error"`
		} `json:"cases"`
	}
	if err := json.NewDecoder(zr).Decode(&g); err != nil {
		t.Fatal(err)
	}
	compiled := map[string]*Template{}
	counts := map[string][2]int{}
	for _, c := range g.Cases {
		tmpl, ok := compiled[c.Template]
		if !ok {
			if tmpl, err = Compile(readTemplate(t, c.Template)); err != nil {
				t.Fatalf("%s: %v", c.Template, err)
			}
			compiled[c.Template] = tmpl
		}
		o := Options{AddGenerationPrompt: c.AddGenerationPrompt, Vars: c.Vars, EOSToken: "<|im_end|>"}
		if c.Template == "llama3" {
			o.BOSToken, o.EOSToken = "<|begin_of_text|>", "<|eot_id|>"
		}
		if c.Tools {
			for _, tool := range g.Tools {
				o.Tools = append(o.Tools, tool)
			}
		}
		got, err := tmpl.Render(g.Conversations[c.Conversation], o)
		n := counts[c.Template]
		n[0]++
		switch {
		case c.Error != nil:
			if err == nil || !strings.Contains(err.Error(), *c.Error) {
				n[1]++
				t.Errorf("%s conversation %d: got %q, %v; want the error %q", c.Template, c.Conversation, got, err, *c.Error)
			}
		case err != nil:
			n[1]++
			t.Errorf("%s conversation %d (%+v): %v", c.Template, c.Conversation, o, err)
		case got != *c.Output:
			n[1]++
			if n[1] <= 3 {
				t.Errorf("%s conversation %d, generation prompt %v, vars %v, tools %v:\n got %q\nwant %q", c.Template, c.Conversation, c.AddGenerationPrompt, c.Vars, c.Tools, got, *c.Output)
			}
		}
		counts[c.Template] = n
	}
	total := 0
	for name, n := range counts {
		t.Logf("%s: %d renderings, %d differ from jinja2", name, n[0], n[1])
		total += n[0]
	}
	if len(g.Conversations) < 100 || total < 400 {
		t.Fatalf("golden file too small: %d conversations, %d renderings", len(g.Conversations), total)
	}
}

func TestTemplateErrors(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "hi"}, {Role: "user", Content: "again"}}
	alternate := `{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{{ m.content }}{% endfor %}`
	_, err := Render(alternate, msgs, Options{})
	var te *TemplateError
	if !errorsAs(err, &te) || !strings.Contains(err.Error(), "roles must alternate") {
		t.Errorf("raise_exception: got %v", err)
	}
	for _, c := range []struct{ tmpl, want string }{
		{"", "no chat template"},
		{"{% for m in messages %}", "does not parse"},
		{"{{ range(100000000) | length }}", "longer than a chat template needs"},
		{"{{ messages[0].content.nosuchmethod() }}", "chat template"},
	} {
		if _, err := Render(c.tmpl, msgs, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.tmpl, err, c.want)
		}
	}
	got, err := Render(`{{ strftime_now("%d %b %Y") }}|{{ bos_token }}|{{ enable_thinking }}`, nil,
		Options{Now: time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC), BOSToken: "<s>", Vars: map[string]any{"enable_thinking": false}})
	if err != nil || got != "26 Jul 2024|<s>|False" {
		t.Errorf("variables: got %q, %v", got, err)
	}
}

func errorsAs(err error, te **TemplateError) bool {
	e, ok := err.(*TemplateError)
	if ok {
		*te = e
	}
	return ok
}

// FuzzRender: any template source and message text renders or fails with an
// error, never panics, and finishes (range is bounded; the engine has no
// while loops).
func FuzzRender(f *testing.F) {
	for _, name := range []string{"qwen3", "llama3", "smollm2"} {
		f.Add(readTemplate(f, name), "hello", "world")
	}
	f.Add("{% for i in range(3) %}{{ i }}{% endfor %}{{ messages | tojson }}", "a\"b", "<think>x</think>y")
	f.Add("{{ (messages[0].content * 3)[::-1] | upper }}{% set ns = namespace(x=1) %}{{ ns.x }}", "ü", "")
	f.Fuzz(func(t *testing.T, tmpl, user, assistant string) {
		if len(tmpl) > 4096 || len(user) > 1024 || len(assistant) > 1024 {
			return
		}
		msgs := []Message{{Role: "user", Content: user}, {Role: "assistant", Content: assistant}, {Role: "user", Content: user}}
		out, err := Render(tmpl, msgs, Options{AddGenerationPrompt: true, Vars: map[string]any{"enable_thinking": false}})
		if err == nil && len(out) > maxOutput {
			t.Fatalf("output of %d bytes passed the bound", len(out))
		}
	})
}

var _ = fmt.Sprint
