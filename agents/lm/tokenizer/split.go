package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The split regexes of the model families, matched by hand. Their leftmost
// alternative wins at each position (Oniguruma's backtracking semantics, which
// Hugging Face tokenizers uses); \s is Unicode White_Space, \p{L} and \p{N}
// Unicode's general categories, and (?i:'s) also matches 'ſ (U+017F folds to s).
const (
	// Qwen2, Qwen2.5, Qwen3: digits one by one.
	patternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Llama-3 (tiktoken cl100k_base's pattern): digits in groups of up to three.
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// GPT-2's, built into the ByteLevel pre-tokenizer (use_regex: true).
	patternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// splitter finds the end of the match that starts at byte i of s; every
// position matches something, so the matches tile the text.
type splitter interface {
	next(s string, i int) int
}

// Character classes.
const (
	clOther = iota
	clLetter
	clNumber
	clSpace // White_Space other than \r and \n
	clNewline
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := 0; c < utf8.RuneSelf; c++ {
		t[c] = classOf(rune(c))
	}
	return t
}()

func classOf(r rune) uint8 {
	switch {
	case r == '\r' || r == '\n':
		return clNewline
	case unicode.IsLetter(r):
		return clLetter
	case unicode.IsNumber(r):
		return clNumber
	case unicode.Is(unicode.White_Space, r):
		return clSpace
	}
	return clOther
}

// at returns the class, the rune and its width at byte i (i < len(s)).
func at(s string, i int) (uint8, rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], rune(c), 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	return classOf(r), r, w
}

// classAt returns the class at byte i, or -1 past the end.
func classAt(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	c, _, _ := at(s, i)
	return int(c)
}

// run returns the end of the run of characters of class cl starting at i.
func run(s string, i int, cl uint8) int {
	for i < len(s) {
		c, _, w := at(s, i)
		if c != cl {
			break
		}
		i += w
	}
	return i
}

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at i (s[i] is '\”).
func contraction(s string, i int, fold bool) int {
	if i+1 >= len(s) {
		return 0
	}
	lower := func(j int) (rune, int) {
		if j >= len(s) {
			return 0, 0
		}
		r, w := utf8.DecodeRuneInString(s[j:])
		if fold {
			switch {
			case r >= 'A' && r <= 'Z':
				r += 'a' - 'A'
			case r == 'ſ':
				r = 's'
			}
		}
		return r, w
	}
	r, w := lower(i + 1)
	switch r {
	case 's', 't', 'm', 'd':
		return i + 1 + w
	case 'r', 'v', 'l':
		want := map[rune]rune{'r': 'e', 'v': 'e', 'l': 'l'}[r]
		if r2, w2 := lower(i + 1 + w); r2 == want {
			return i + 1 + w + w2
		}
	}
	return 0
}

// whitespace handles \s+(?!\S)|\s+ at i (a whitespace character): the whole
// run when it ends the text or is one character long, else all but its last
// character, which then leads the following word.
func whitespace(s string, i int) int {
	end := i
	last := i
	for end < len(s) {
		c, _, w := at(s, end)
		if c != clSpace && c != clNewline {
			break
		}
		last = end
		end += w
	}
	if end == len(s) || last == i {
		return end
	}
	return last
}

// splitWords is the Qwen2/Llama-3 pattern; maxDigits is 1 or 3.
type splitWords struct{ maxDigits int }

func (p splitWords) next(s string, i int) int {
	c, r, w := at(s, i)
	if r == '\'' {
		if e := contraction(s, i, true); e > 0 {
			return e
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c == clLetter {
		return run(s, i+w, clLetter)
	}
	if c != clNewline && c != clNumber && classAt(s, i+w) == clLetter {
		return run(s, i+w, clLetter)
	}
	// \p{N}{1,max}
	if c == clNumber {
		e := i + w
		for n := 1; n < p.maxDigits && e < len(s); n++ {
			c2, _, w2 := at(s, e)
			if c2 != clNumber {
				break
			}
			e += w2
		}
		return e
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	if e := punctuation(s, i, c, r, w); e > 0 {
		return run(s, e, clNewline)
	}
	// \s*[\r\n]+: up to the last newline of the whitespace run.
	end, lastNL := i, -1
	for end < len(s) {
		c2, _, w2 := at(s, end)
		if c2 != clSpace && c2 != clNewline {
			break
		}
		if c2 == clNewline {
			lastNL = end + w2
		}
		end += w2
	}
	if lastNL > 0 {
		return lastNL
	}
	return whitespace(s, i)
}

// punctuation matches ` ?[^\s\p{L}\p{N}]+` at i, 0 if it does not match.
func punctuation(s string, i int, c uint8, r rune, w int) int {
	start := i
	if r == ' ' {
		if classAt(s, i+w) != clOther {
			return 0
		}
		start = i + w
	} else if c != clOther {
		return 0
	}
	return run(s, start, clOther)
}

// splitGPT2 is GPT-2's pattern.
type splitGPT2 struct{}

func (splitGPT2) next(s string, i int) int {
	c, r, w := at(s, i)
	if r == '\'' {
		if e := contraction(s, i, false); e > 0 {
			return e
		}
	}
	// ` ?\p{L}+`, ` ?\p{N}+`
	if c == clLetter || c == clNumber {
		return run(s, i+w, c)
	}
	if r == ' ' {
		if n := classAt(s, i+w); n == clLetter || n == clNumber {
			return run(s, i+w, uint8(n))
		}
	}
	if e := punctuation(s, i, c, r, w); e > 0 {
		return e
	}
	return whitespace(s, i)
}

// splitAll cuts s into the matches of p.
func splitAll(p splitter, s string, out []string) []string {
	for i := 0; i < len(s); {
		e := p.next(s, i)
		out = append(out, s[i:e])
		i = e
	}
	return out
}
