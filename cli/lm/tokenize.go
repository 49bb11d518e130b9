package lm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
)

// TokenizeOptions are `lm tokenize`'s flags.
type TokenizeOptions struct {
	Model            string
	Chat             bool
	GenerationPrompt bool
	chatFlags
}

func parseTokenize(args []string) (*TokenizeOptions, error) {
	o := &TokenizeOptions{}
	fs := cmdutil.NewFlags("lm tokenize", "--model DIR [--chat [--generation-prompt] [--var key=value]...] < lines.jsonl",
		`turn JSON lines on standard input into token ids: each line a string (or, with --chat, an array of {"role", "content"} messages) gives one line {"ids": [...], "text": "..."}, text being the rendered chat with --chat`)
	fs.StringVar(&o.Model, "model", "", "the model `directory` (its tokenizer.json, tokenizer_config.json)")
	fs.BoolVar(&o.Chat, "chat", false, "each line is a conversation, rendered by the chat format first")
	fs.BoolVar(&o.GenerationPrompt, "generation-prompt", false, "with --chat: open the assistant's next turn (add_generation_prompt)")
	o.chatFlags.add(fs)
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return nil, err
	}
	switch {
	case len(rest) > 0:
		return nil, cmdutil.Usagef("lm tokenize: unexpected argument %q (the text comes on standard input)", rest[0])
	case o.Model == "":
		return nil, &cmdutil.UsageError{Err: errors.New("lm tokenize needs --model DIR"), Usage: fs.Usage()}
	case !o.Chat && (o.GenerationPrompt || len(o.Vars) > 0):
		return nil, cmdutil.Usagef("lm tokenize: --generation-prompt and --var apply to --chat only")
	}
	return o, o.chatFlags.check("tokenize")
}

func runTokenize(ctx context.Context, o TokenizeOptions, in io.Reader, stdout io.Writer) error {
	tok, err := loadTokenizer(o.Model)
	if err != nil {
		return err
	}
	var r *renderer
	if o.Chat {
		if r, err = newRenderer(o.Model, tok, o.chatFlags, o.GenerationPrompt); err != nil {
			return err
		}
	}
	lines := newLineReader(in)
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for {
		if err := interrupted(ctx); err != nil {
			return err
		}
		line, err := lines.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var text string
		special := true
		if o.Chat {
			var msgs []chat.Message
			if err := decodeStrict(line, &msgs); err != nil {
				return lines.errorf(`want an array of {"role", "content"} messages: %v`, err)
			}
			if text, err = r.render(msgs); err != nil {
				return lines.errorf("%v", err)
			}
			special = false // the template wrote the special tokens it wants
		} else if err := decodeStrict(line, &text); err != nil {
			return lines.errorf("want a JSON string (or, with --chat, an array of messages): %v", err)
		}
		if err := enc.Encode(struct {
			IDs  []int  `json:"ids"`
			Text string `json:"text"`
		}{nonNil(tok.Encode(text, special)), text}); err != nil {
			return err
		}
		if !lines.pending() { // an interactive user sees each answer at once
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

// decodeStrict decodes one JSON value, refusing trailing data and (into
// structs) unknown fields.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// jsonOrString reads a --var value: JSON when it parses (true, 3, "x",
// [1]), else the text itself.
func jsonOrString(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v
	}
	return s
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}
