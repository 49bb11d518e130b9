package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// AddedToken is a token matched in the text before any splitting, as
// Hugging Face's added_tokens entries.
type AddedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	// Special tokens are skipped by DecodeOptions.SkipSpecial.
	Special bool `json:"special"`
	// SingleWord: only where no letter, digit or '_' touches either end.
	SingleWord bool `json:"single_word"`
	// LStrip and RStrip swallow the whitespace on that side.
	LStrip bool `json:"lstrip"`
	RStrip bool `json:"rstrip"`
	// Normalized tokens are matched in the normalized text, the others in
	// the text as given.
	Normalized bool `json:"normalized"`
}

// addedMatcher finds added tokens leftmost-longest, as the Aho-Corasick
// automaton of Hugging Face's AddedVocabulary does, with a byte trie.
type addedMatcher struct {
	nodes []trieNode
	first [256]bool // bytes that start some token
}

type trieNode struct {
	next  map[byte]int32
	token int32 // index into the token list, -1: none
}

func newAddedMatcher(tokens []AddedToken, keep func(AddedToken) bool) *addedMatcher {
	m := &addedMatcher{nodes: []trieNode{{token: -1}}}
	any := false
	for ti, t := range tokens {
		if t.Content == "" || !keep(t) {
			continue
		}
		any = true
		n := int32(0)
		for i := 0; i < len(t.Content); i++ {
			c := t.Content[i]
			nx, ok := m.nodes[n].next[c]
			if !ok {
				if m.nodes[n].next == nil {
					m.nodes[n].next = map[byte]int32{}
				}
				nx = int32(len(m.nodes))
				m.nodes = append(m.nodes, trieNode{token: -1})
				m.nodes[n].next[c] = nx
			}
			n = nx
		}
		if m.nodes[n].token < 0 {
			m.nodes[n].token = int32(ti)
		}
		m.first[t.Content[0]] = true
	}
	if !any {
		return nil
	}
	return m
}

// longestAt returns the token index and end of the longest token at i.
func (m *addedMatcher) longestAt(s string, i int) (tok int32, end int) {
	tok = -1
	n := int32(0)
	for j := i; j < len(s); j++ {
		nx, ok := m.nodes[n].next[s[j]]
		if !ok {
			break
		}
		n = nx
		if t := m.nodes[n].token; t >= 0 {
			tok, end = t, j+1
		}
	}
	return tok, end
}

// piece is a stretch of text, or an added token (token >= 0).
type piece struct {
	text  string
	token int32
}

// split cuts s at the added tokens, applying their single_word, lstrip and
// rstrip rules as Hugging Face's AddedVocabulary::find_matches does.
func (m *addedMatcher) split(s string, tokens []AddedToken, out []piece) []piece {
	if m == nil {
		return append(out, piece{s, -1})
	}
	done := 0 // end of the last piece
	for i := 0; i < len(s); {
		if !m.first[s[i]] {
			i++
			continue
		}
		ti, end := m.longestAt(s, i)
		if ti < 0 {
			i++
			continue
		}
		start, stop := i, end
		t := tokens[ti]
		i = end
		if t.SingleWord && (endsWithWordChar(s[:start]) || startsWithWordChar(s[stop:])) {
			continue
		}
		if t.LStrip {
			start = max(done, start-trailingSpace(s[:start]))
		}
		if t.RStrip {
			stop += leadingSpace(s[stop:])
			i = stop
		}
		if start > done {
			out = append(out, piece{s[done:start], -1})
		}
		out = append(out, piece{s[start:stop], ti})
		done = stop
	}
	if done < len(s) {
		out = append(out, piece{s[done:], -1})
	}
	return out
}

func isWordChar(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' }

func endsWithWordChar(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordChar(r)
}

// trailingSpace is the byte length of the whitespace that ends s.
func trailingSpace(s string) int {
	n := 0
	for len(s) > n {
		r, w := utf8.DecodeLastRuneInString(s[:len(s)-n])
		if !unicode.IsSpace(r) {
			break
		}
		n += w
	}
	return n
}

// leadingSpace is the byte length of the whitespace that starts s.
func leadingSpace(s string) int {
	n := 0
	for n < len(s) {
		r, w := utf8.DecodeRuneInString(s[n:])
		if !unicode.IsSpace(r) {
			break
		}
		n += w
	}
	return n
}
