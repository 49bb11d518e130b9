package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// Options are the variables Hugging Face's apply_chat_template passes
// besides the messages.
type Options struct {
	// AddGenerationPrompt opens the assistant's next turn.
	AddGenerationPrompt bool
	// BOSToken and EOSToken are the model's (templates use bos_token).
	BOSToken, EOSToken string
	// Tools, when not nil, is passed as `tools` (function schemas); give
	// each as json.RawMessage to keep its key order (tojson writes it).
	Tools []any
	// Vars are further variables, such as Qwen3's enable_thinking; they
	// cannot replace messages, tools or add_generation_prompt.
	Vars map[string]any
	// Now is the time strftime_now reports (the zero time: time.Now()).
	Now time.Time
}

// Template is a compiled chat template, safe for concurrent use.
type Template struct {
	t *jinja.Template
}

// maxTemplateSize bounds a template's source; real ones are under 20 kB.
const maxTemplateSize = 1 << 20

// Compile parses a Jinja chat template (as tokenizer_config.json's
// chat_template holds it) with Hugging Face's settings: trim_blocks and
// lstrip_blocks on.
func Compile(source string) (tmpl *Template, err error) {
	if source == "" {
		return nil, errors.New("the model has no chat template: use the ChatML or Llama-3 format instead")
	}
	if len(source) > maxTemplateSize {
		return nil, fmt.Errorf("chat template is %d bytes, more than any real one (limit %d)", len(source), maxTemplateSize)
	}
	defer func() {
		if r := recover(); r != nil {
			tmpl, err = nil, fmt.Errorf("chat template: the template engine failed: %v", r)
		}
	}()
	guarded, err := instrument(source)
	if err != nil {
		return nil, err
	}
	t, err := jinja.Compile(guarded)
	if err != nil {
		return nil, fmt.Errorf("chat template does not parse: %v", err)
	}
	return &Template{t: t}, nil
}

// Render compiles template and renders messages through it.
func Render(template string, messages []Message, o Options) (string, error) {
	t, err := Compile(template)
	if err != nil {
		return "", err
	}
	return t.Render(messages, o)
}

// TemplateError is an error a template raised itself through
// raise_exception ("Conversation roles must alternate ...").
type TemplateError struct{ Message string }

func (e *TemplateError) Error() string { return "chat template refused the conversation: " + e.Message }

// maxOutput bounds a rendering: a template that loops without end is
// stopped by range's bound and by this.
const maxOutput = 64 << 20

// Render renders messages with the options.
func (t *Template) Render(messages []Message, o Options) (out string, err error) {
	msgs := make([]jinja.Value, len(messages))
	for i, m := range messages {
		v, err := m.templateValue()
		if err != nil {
			return "", fmt.Errorf("message %d: %v", i, err)
		}
		msgs[i] = v
	}
	data := map[string]jinja.Value{}
	for k, v := range o.Vars {
		val, err := value(v)
		if err != nil {
			return "", fmt.Errorf("variable %s: %v", k, err)
		}
		data[k] = val
	}
	data["messages"] = jinja.NewList(msgs)
	data["add_generation_prompt"] = jinja.NewBool(o.AddGenerationPrompt)
	if o.Tools != nil {
		tools, err := value(o.Tools)
		if err != nil {
			return "", fmt.Errorf("tools: %v", err)
		}
		data["tools"] = tools
	}
	if _, ok := data["bos_token"]; !ok {
		data["bos_token"] = jinja.NewString(o.BOSToken)
	}
	if _, ok := data["eos_token"]; !ok {
		data["eos_token"] = jinja.NewString(o.EOSToken)
	}
	var raised *TemplateError
	data["raise_exception"] = jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		msg := "raise_exception called"
		if len(args) > 0 {
			msg = args[0].String()
		}
		raised = &TemplateError{Message: msg}
		return jinja.Undefined(), raised
	})
	now := o.Now
	data["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one format string")
		}
		if now.IsZero() {
			now = time.Now()
		}
		return jinja.NewString(strftime(now, args[0].AsString())), nil
	})
	data["range"] = jinja.NewCallable("range", boundedRange)
	newGuard().bind(data)
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("chat template: the template engine failed: %v", r)
		}
	}()
	out, err = t.t.RenderValues(data)
	if raised != nil {
		return "", raised
	}
	if err != nil {
		return "", fmt.Errorf("chat template: %v", err)
	}
	if len(out) > maxOutput {
		return "", fmt.Errorf("chat template rendered %d bytes, more than any prompt (limit %d)", len(out), maxOutput)
	}
	return out, nil
}

// maxRange bounds range(): templates loop over messages, never millions.
const maxRange = 1 << 16

// boundedRange is Jinja's range with a bound on its length.
func boundedRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var start, stop, step int64 = 0, 0, 1
	ints := make([]int64, len(args))
	for i, a := range args {
		if !a.IsInt() {
			return jinja.Undefined(), fmt.Errorf("range takes integers, got %s", a.String())
		}
		ints[i] = a.AsInt()
	}
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return jinja.Undefined(), fmt.Errorf("range takes 1 to 3 arguments, got %d", len(ints))
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range step must not be zero")
	}
	n := (stop - start + step - sign(step)) / step
	if n < 0 {
		n = 0
	}
	if n > maxRange {
		return jinja.Undefined(), fmt.Errorf("range of %d items is longer than a chat template needs (limit %d)", n, maxRange)
	}
	items := make([]jinja.Value, 0, n)
	for i := int64(0); i < n; i++ {
		items = append(items, jinja.NewInt(start+i*step))
	}
	return jinja.NewList(items), nil
}

func sign(x int64) int64 {
	if x < 0 {
		return -1
	}
	return 1
}

// strftime formats t with Python's strftime directives the templates use
// (Llama-3.2's "%d %b %Y").
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'b':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
