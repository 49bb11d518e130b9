package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// fileJSON is the part of Hugging Face's tokenizer.json this package reads.
type fileJSON struct {
	AddedTokens   []AddedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         modelJSON       `json:"model"`
}

type modelJSON struct {
	Type                    string            `json:"type"`
	Dropout                 *float64          `json:"dropout"`
	UnkToken                *string           `json:"unk_token"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	FuseUnk                 bool              `json:"fuse_unk"`
	ByteFallback            bool              `json:"byte_fallback"`
	IgnoreMerges            bool              `json:"ignore_merges"`
	Vocab                   map[string]int    `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
}

// component is any normalizer, pre-tokenizer, post-processor or decoder
// entry: a type and the fields of the types this package knows.
type component struct {
	Type           string                           `json:"type"`
	Normalizers    []json.RawMessage                `json:"normalizers"`
	Pretokenizers  []json.RawMessage                `json:"pretokenizers"`
	Processors     []json.RawMessage                `json:"processors"`
	Decoders       []json.RawMessage                `json:"decoders"`
	Pattern        *struct{ Regex, String *string } `json:"pattern"`
	Behavior       string                           `json:"behavior"`
	Invert         bool                             `json:"invert"`
	AddPrefixSpace bool                             `json:"add_prefix_space"`
	UseRegex       *bool                            `json:"use_regex"`
	Individual     bool                             `json:"individual_digits"`
	Single         []templatePart                   `json:"single"`
	SpecialTokens  map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
}

type templatePart struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

// isNull reports whether a JSON value is absent or null.
func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

func parseComponent(raw json.RawMessage, what string) (component, error) {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("%s: %v", what, err)
	}
	if c.Type == "" {
		return c, fmt.Errorf("%s has no \"type\"", what)
	}
	return c, nil
}

// parseMerge reads one merges entry: ["a", "b"] (tokenizers >= 0.20) or
// "a b" (older files).
func parseMerge(raw json.RawMessage) (a, b string, err error) {
	var pair []string
	if err := json.Unmarshal(raw, &pair); err == nil {
		if len(pair) != 2 {
			return "", "", fmt.Errorf("a merge pair has %d parts, want 2", len(pair))
		}
		return pair[0], pair[1], nil
	}
	var line string
	if err := json.Unmarshal(raw, &line); err != nil {
		return "", "", errors.New("a merge is neither a [left, right] pair nor a \"left right\" string")
	}
	parts := strings.Split(line, " ")
	if len(parts) != 2 {
		return "", "", fmt.Errorf("merge %q does not have exactly one space", line)
	}
	return parts[0], parts[1], nil
}

// configJSON is the part of tokenizer_config.json (and
// special_tokens_map.json) this package reads.
type configJSON struct {
	BOS          tokenName       `json:"bos_token"`
	EOS          tokenName       `json:"eos_token"`
	PAD          tokenName       `json:"pad_token"`
	UNK          tokenName       `json:"unk_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

// tokenName is a special token given as a string or as an AddedToken object.
type tokenName string

func (n *tokenName) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		*n = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*n = tokenName(s)
		return nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return errors.New("a special token must be a string or an object with \"content\"")
	}
	*n = tokenName(obj.Content)
	return nil
}

// chatTemplate reads tokenizer_config.json's chat_template: a string, or a
// list of {name, template} of which the one named "default" is taken.
func chatTemplate(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []struct{ Name, Template string }
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", errors.New("chat_template must be a string or a list of {\"name\", \"template\"}")
	}
	for _, t := range list {
		if t.Name == "default" {
			return t.Template, nil
		}
	}
	if len(list) > 0 {
		return list[0].Template, nil
	}
	return "", nil
}
