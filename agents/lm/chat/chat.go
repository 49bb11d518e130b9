// Package chat turns a conversation into the prompt text a language model was
// trained on: the model's own Jinja chat_template rendered as Hugging Face's
// transformers renders it (Render, Compile), or a hand-written ChatML (Qwen,
// SmolLM) or Llama-3 format (NewChatML, NewLlama3) that is prefix-preserving
// turn by turn, which multi-turn RL needs: the rendering of messages[:k] is a
// prefix of that of messages[:k+1].
package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
)

// Message is one turn: a role ("system", "user", "assistant", "tool") and
// its text, plus whatever other fields a template reads (reasoning_content,
// tool_calls, name, ...), kept in Fields as decoded from JSON.
type Message struct {
	Role    string
	Content string
	// Fields are the other fields. A message decoded from JSON shows them
	// to templates as decoded, in their order (edit Role and Content, not
	// Fields, after decoding); one built in Go, in sorted key order.
	Fields map[string]any

	raw json.RawMessage // the JSON it was decoded from
}

// UnmarshalJSON reads {"role": ..., "content": ..., other fields}. A null or
// missing content is "" (Hugging Face templates concatenate it as a string).
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("a message must be a JSON object with \"role\" and \"content\": %v", err)
	}
	role, ok := raw["role"].(string)
	if !ok || role == "" {
		return errors.New("a message needs a \"role\" string (system, user, assistant or tool)")
	}
	m.Role = role
	m.Content = ""
	switch c := raw["content"].(type) {
	case string:
		m.Content = c
	case nil:
	default:
		return fmt.Errorf("message content must be a string, not %T (multimodal content lists are not supported)", c)
	}
	delete(raw, "role")
	delete(raw, "content")
	m.Fields = nil
	m.raw = append(json.RawMessage(nil), b...)
	if len(raw) > 0 {
		m.Fields = numbers(raw).(map[string]any)
	}
	return nil
}

// numbers turns JSON numbers into int64 where integral and float64
// otherwise, as Python's json does (tojson then writes 1, not 1.0).
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
		return x
	}
	return v
}

// MarshalJSON writes the message as one object.
func (m Message) MarshalJSON() ([]byte, error) {
	out := map[string]any{"role": m.Role, "content": m.Content}
	maps.Copy(out, m.Fields)
	return json.Marshal(out)
}

// asMap is the message as a template sees it.
func (m Message) asMap() map[string]any {
	out := make(map[string]any, 2+len(m.Fields))
	for k, v := range m.Fields {
		out[k] = v
	}
	out["role"] = m.Role
	out["content"] = m.Content
	return out
}

// Renderer renders a conversation; addGenerationPrompt appends the opening
// of the assistant's next turn.
type Renderer interface {
	Render(messages []Message, addGenerationPrompt bool) (string, error)
}
