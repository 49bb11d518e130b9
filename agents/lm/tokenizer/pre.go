package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// preStep is one pre-tokenizer: it cuts a piece into smaller ones.
type preStep interface {
	split(s string, out []string) []string
}

// splitStep is tokenizers' Split with a regex and the Isolated behaviour:
// every match is a piece.
type splitStep struct{ p splitter }

func (st splitStep) split(s string, out []string) []string { return splitAll(st.p, s, out) }

// digitsStep is tokenizers' Digits: runs of numeric characters (Unicode N,
// as Rust's char::is_numeric) become pieces of their own, or each digit
// alone with individual_digits.
type digitsStep struct{ individual bool }

func (st digitsStep) split(s string, out []string) []string {
	start := 0
	prevNum := false
	for i := 0; i < len(s); {
		c, _, w := at(s, i)
		num := c == clNumber
		if i > start && (num != prevNum || (num && st.individual)) {
			out = append(out, s[start:i])
			start = i
		}
		prevNum = num
		i += w
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// byteLevelStep is tokenizers' ByteLevel pre-tokenizer. The mapping of bytes
// to its alphabet is left out: this package keys byte-level vocabularies by
// raw bytes, so that pieces stay as they are.
type byteLevelStep struct {
	addPrefixSpace bool
	useRegex       bool
}

func (st byteLevelStep) split(s string, out []string) []string {
	if st.addPrefixSpace && (len(s) == 0 || s[0] != ' ') {
		s = " " + s
	}
	if !st.useRegex {
		return append(out, s)
	}
	return splitAll(splitGPT2{}, s, out)
}

// knownPatterns maps the split regexes this package matches by hand to their
// matchers.
var knownPatterns = map[string]splitter{
	patternQwen2:  splitWords{maxDigits: 1},
	patternLlama3: splitWords{maxDigits: 3},
	patternGPT2:   splitGPT2{},
}

func buildPre(raw json.RawMessage) ([]preStep, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw, "pre_tokenizer")
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var steps []preStep
		for i, r := range c.Pretokenizers {
			s, err := buildPre(r)
			if err != nil {
				return nil, fmt.Errorf("pre-tokenizer %d of the sequence: %w", i, err)
			}
			steps = append(steps, s...)
		}
		return steps, nil
	case "ByteLevel":
		useRegex := c.UseRegex == nil || *c.UseRegex
		return []preStep{byteLevelStep{addPrefixSpace: c.AddPrefixSpace, useRegex: useRegex}}, nil
	case "Digits":
		return []preStep{digitsStep{individual: c.Individual}}, nil
	case "Split":
		if c.Pattern == nil || (c.Pattern.Regex == nil && c.Pattern.String == nil) {
			return nil, fmt.Errorf("Split pre-tokenizer has no pattern")
		}
		if c.Behavior != "Isolated" || c.Invert {
			return nil, fmt.Errorf("Split pre-tokenizer with behavior %q, invert %v is not supported (supported: Isolated, invert false)", c.Behavior, c.Invert)
		}
		if c.Pattern.String != nil {
			if *c.Pattern.String == "" {
				return nil, fmt.Errorf("Split pre-tokenizer has an empty string pattern")
			}
			return []preStep{literalStep{*c.Pattern.String}}, nil
		}
		p, ok := knownPatterns[*c.Pattern.Regex]
		if !ok {
			return nil, fmt.Errorf("Split pre-tokenizer regex %q is not supported: this package matches the patterns of Qwen2/2.5/3, Llama-3 and GPT-2 by hand", *c.Pattern.Regex)
		}
		return []preStep{splitStep{p}}, nil
	}
	return nil, fmt.Errorf("pre-tokenizer %q is not supported (supported: Split with the Qwen2/Llama-3/GPT-2 regex, ByteLevel, Digits, Sequence)", c.Type)
}

// literalStep is Split with a string pattern, Isolated: each occurrence is a
// piece.
type literalStep struct{ sep string }

func (st literalStep) split(s string, out []string) []string {
	for {
		i := strings.Index(s, st.sep)
		if i < 0 {
			break
		}
		if i > 0 {
			out = append(out, s[:i])
		}
		out = append(out, s[i:i+len(st.sep)])
		s = s[i+len(st.sep):]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
