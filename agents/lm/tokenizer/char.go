package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
)

// DefaultCharset is the alphabet NewChar uses when given none: printable
// ASCII, tab and newline.
const DefaultCharset = "\t\n !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"

// DefaultCharSpecials are the special tokens NewChar adds when given none:
// the unknown token first (id 0), then an end-of-text token and ChatML's
// turn markers, so that chat templates work on a model trained from scratch.
var DefaultCharSpecials = []string{"<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"}

// NewChar returns a character-level tokenizer: the specials get ids 0, 1,
// ..., then each distinct character of charset one id in order of first
// appearance. specials[0] is the unknown token, used for characters outside
// the alphabet; specials[1], if any, is the end-of-sequence and padding
// token. It is a Hugging Face BPE model without merges (Save writes it as
// such; transformers and the JavaScript reference load it as any other).
func NewChar(charset string, specials []string) (*Tokenizer, error) {
	if charset == "" {
		charset = DefaultCharset
	}
	if specials == nil {
		specials = DefaultCharSpecials
	}
	if len(specials) == 0 {
		return nil, errors.New("a character tokenizer needs at least the unknown token among its specials")
	}
	if !utf8.ValidString(charset) {
		return nil, errors.New("the character set is not valid UTF-8")
	}
	vocab := map[string]int{}
	var added []AddedToken
	for _, s := range specials {
		if s == "" || utf8.RuneCountInString(s) == 1 {
			return nil, fmt.Errorf("special token %q must be longer than one character, so that it cannot be mistaken for one", s)
		}
		if _, dup := vocab[s]; dup {
			return nil, fmt.Errorf("special token %q is given twice", s)
		}
		vocab[s] = len(vocab)
		added = append(added, AddedToken{ID: vocab[s], Content: s, Special: true})
	}
	for _, r := range charset {
		if r == utf8.RuneError {
			continue
		}
		if _, dup := vocab[string(r)]; !dup {
			vocab[string(r)] = len(vocab)
		}
	}
	f := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   added,
		"normalizer":     nil,
		"pre_tokenizer":  nil,
		"post_processor": nil,
		"decoder":        map[string]any{"type": "Fuse"},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": specials[0],
			"continuing_subword_prefix": nil, "end_of_word_suffix": nil,
			"fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": []any{},
		},
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	data := []byte(buf.String())
	cfg := map[string]any{
		"tokenizer_class":              "PreTrainedTokenizerFast",
		"unk_token":                    specials[0],
		"clean_up_tokenization_spaces": false,
		"model_max_length":             1 << 20,
	}
	if len(specials) > 1 {
		cfg["eos_token"] = specials[1]
		cfg["pad_token"] = specials[1]
	}
	cfgData, err := marshalSorted(cfg)
	if err != nil {
		return nil, err
	}
	return Parse(data, cfgData)
}

// SetChatTemplate sets the Jinja chat template Save writes into
// tokenizer_config.json (as transformers does).
func (t *Tokenizer) SetChatTemplate(tmpl string) { t.chatTemplate = tmpl }

// Save writes the tokenizer into dir in Hugging Face's layout:
// tokenizer.json as it was read (or built), and tokenizer_config.json with
// the chat template set by SetChatTemplate, if it changed. Files are written
// atomically.
func (t *Tokenizer) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "tokenizer.json"), t.files["tokenizer.json"], 0o644); err != nil {
		return err
	}
	cfg := map[string]any{}
	if raw := t.files["tokenizer_config.json"]; raw != nil {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return fmt.Errorf("tokenizer_config.json: %v", err)
		}
	}
	_, fromFile := t.files["chat_template.jinja"]
	if t.chatTemplate != "" && !fromFile {
		cfg["chat_template"] = t.chatTemplate
	}
	for key, name := range map[string]string{"bos_token": t.bos, "eos_token": t.eos, "pad_token": t.pad, "unk_token": t.unk} {
		if _, set := cfg[key]; !set && name != "" {
			cfg[key] = name
		}
	}
	data, err := marshalSorted(cfg)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "tokenizer_config.json"), data, 0o644); err != nil {
		return err
	}
	if tmpl, ok := t.files["chat_template.jinja"]; ok {
		if t.chatTemplate != string(tmpl) {
			tmpl = []byte(t.chatTemplate)
		}
		return atomicfile.Write(filepath.Join(dir, "chat_template.jinja"), tmpl, 0o644)
	}
	return nil
}

// marshalSorted writes a JSON object with sorted keys, indented, without
// HTML escaping (templates hold '<' and '>').
func marshalSorted(m map[string]any) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("{\n")
	for i, k := range keys {
		kb, _ := json.Marshal(k)
		var vb strings.Builder
		enc := json.NewEncoder(&vb)
		enc.SetEscapeHTML(false)
		enc.SetIndent("  ", "  ")
		if err := enc.Encode(m[k]); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json key %s: %v", k, err)
		}
		b.WriteString("  ")
		b.Write(kb)
		b.WriteString(": ")
		b.WriteString(strings.TrimSuffix(vb.String(), "\n"))
		if i < len(keys)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return []byte(b.String()), nil
}
