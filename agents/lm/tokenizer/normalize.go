package tokenizer

import (
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// normalizer returns Unicode normalization to form f as Hugging Face's
// tokenizers (Rust's unicode-normalization) computes it. x/text's norm
// follows the Stream-Safe Text Format: after 30 non-starters in a row it
// inserts U+034F and stops reordering and composing across it, which Rust
// (and ICU) do not. Such text (Zalgo) is normalized by the definition
// instead: full decomposition, canonical ordering, canonical composition.
func normalizer(f norm.Form) func(string) string {
	return func(s string) string {
		if f.IsNormalString(s) {
			return s
		}
		out := f.String(s)
		if strings.Count(out, "\u034f") == strings.Count(s, "\u034f") {
			return out
		}
		return normalizeByDefinition(f, s)
	}
}

func normalizeByDefinition(f norm.Form, s string) string {
	decomp := norm.NFD
	if f == norm.NFKC || f == norm.NFKD {
		decomp = norm.NFKD
	}
	// Decompose one character at a time: a single character never reaches
	// the stream-safe limit.
	var rs []rune
	for _, r := range s {
		rs = append(rs, []rune(decomp.String(string(r)))...)
	}
	ccc := func(r rune) uint8 { return norm.NFD.PropertiesString(string(r)).CCC() }
	// Canonical ordering: a stable sort of each run of non-starters.
	for i := 0; i < len(rs); {
		if ccc(rs[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && ccc(rs[j]) != 0 {
			j++
		}
		run := rs[i:j]
		sort.SliceStable(run, func(a, b int) bool { return ccc(run[a]) < ccc(run[b]) })
		i = j
	}
	if f == norm.NFD || f == norm.NFKD {
		return string(rs)
	}
	// Canonical composition (UAX #15): each character joins the last
	// starter when nothing between them blocks it and a primary composite
	// exists; x/text composes the pair to tell.
	out := rs[:0:0]
	starter := -1
	var lastCCC uint8
	for _, r := range rs {
		c := ccc(r)
		if starter >= 0 && (len(out) == starter+1 || (lastCCC != 0 && lastCCC < c)) {
			if comp := []rune(norm.NFC.String(string([]rune{out[starter], r}))); len(comp) == 1 {
				out[starter] = comp[0]
				continue
			}
		}
		if c == 0 {
			starter = len(out)
		}
		lastCCC = c
		out = append(out, r)
	}
	return string(out)
}
