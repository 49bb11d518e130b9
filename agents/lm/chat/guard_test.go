package chat

import (
	"strings"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"
)

// The guard's tags change nothing a template prints: each template
// renders through the engine alone and through Compile to the same text,
// whatever its whitespace markers.
func TestGuardKeepsRendering(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}, {Role: "assistant", Content: " a \n"}}
	for _, src := range []string{
		"{% for m in messages %}\n  {{ m.role }}: {{ m.content }}\n{% endfor %}\n",
		"{%- for m in messages -%}\n  {{- m.role -}}\n  {{ m.content }}\n{%- endfor -%}\n",
		"{% for m in messages %}{% if loop.first %}[{% endif %}{{ m.content }}{% else %}none{% endfor %}",
		"{% set ns = namespace(n=0) %}\n{% for m in messages %}\n    {% set ns.n = ns.n + 1 %}\n{% endfor %}\n{{ ns.n }}\n",
		"{%- set ns = namespace(n=0) -%}\n  {%- for m in messages -%}{%- set ns.n = ns.n + m.content|length -%}{%- endfor -%}\n{{- ns.n -}}",
		"{% macro turn(m) %}\n    <{{ m.role }}>{{ m.content }}\n{% endmacro %}\n{% for m in messages %}{{ turn(m) }}{% endfor %}",
		"{%- macro turn(m) -%}\n    <{{- m.role -}}>\n  {%- endmacro -%}\n  {% for m in messages %}{{ turn(m) }}\n{% endfor %}",
		"{% set x %}block {{ messages|length }}{% endset %}\n[{{ x }}]\n",
		"{% raw %}{% for %}{{ not code }}{% endraw %}{{ '{%' }} {{ \"}}\" }}",
		"{# a {% for %} comment #}\n{{ messages[0].content }}{#- trimmed -#}  \n  end",
		"{% if add_generation_prompt %}\n  yes\n{% endif %}\n{% for m in messages %}{{ m.content | trim }}{% endfor %}",
	} {
		plain, err := jinja.Compile(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		want, err := plain.RenderValues(map[string]jinja.Value{"messages": messagesValue(t, msgs), "add_generation_prompt": jinja.NewBool(true)})
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		got, err := Render(src, msgs, Options{AddGenerationPrompt: true})
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if got != want {
			t.Errorf("%q renders\n%q guarded, but\n%q alone", src, got, want)
		}
	}
}

func messagesValue(t *testing.T, msgs []Message) jinja.Value {
	vals := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		v, err := m.templateValue()
		if err != nil {
			t.Fatal(err)
		}
		vals[i] = v
	}
	return jinja.NewList(vals)
}

// Templates that would hang the process or end it (a Go stack overflow is
// fatal) are stopped with an error saying why, within the guard's bounds.
func TestGuardStopsHostileTemplates(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "hi"}}
	for _, tc := range []struct {
		name, src, want string
	}{
		{"nested loops", "{% for a in range(60000) %}{% for b in range(60000) %}{% endfor %}{% endfor %}", "steps"},
		{"loop printing", "{% for a in range(60000) %}{% for b in range(60000) %}{{ b }}{% endfor %}{% endfor %}", "steps"},
		{"string doubling", "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}", "memory"},
		{"recursive macro", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "deep"},
		{"mutual recursion", "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}", "deep"},
		{"macro loop", "{% macro f() %}{% for i in range(60000) %}{{ i }}{% endfor %}{% endmacro %}{% for i in range(60000) %}{{ f() }}{% endfor %}", "steps"},
		{"raises", "{{ raise_exception('no system role') }}", "no system role"},
		{"reserved name", "{{ __at_guard_step() }}", "reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Render(tc.src, msgs, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want one saying %q", err, tc.want)
			}
			t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
		})
	}
}

// A template may recurse as deep as real ones do.
func TestGuardAllowsShallowRecursion(t *testing.T) {
	src := "{% macro count(n) %}{% if n > 0 %}{{ n }},{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(50) }}"
	got, err := Render(src, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "50,49,") || !strings.HasSuffix(got, "2,1,") {
		t.Errorf("got %q", got)
	}
}
