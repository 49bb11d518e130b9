package tui

import (
	"slices"
	"strings"
	"unicode"
)

// fuzzyScore says whether query's letters appear in name in order (case
// aside) and how well: runs of consecutive letters, letters at the start
// of a word (after . _ - / or a space, or a capital) and a match at the
// start score higher; fzf's idea, small. An empty query matches with 0.
func fuzzyScore(query, name string) (int, bool) {
	q := []rune(strings.ToLower(query))
	if len(q) == 0 {
		return 0, true
	}
	n := []rune(name)
	score, qi, run := 0, 0, 0
	for i := 0; i < len(n) && qi < len(q); i++ {
		if unicode.ToLower(n[i]) != q[qi] {
			run = 0
			continue
		}
		s := 1
		if i == 0 {
			s += 8
		} else if strings.ContainsRune("._-/ ", n[i-1]) || unicode.IsUpper(n[i]) && unicode.IsLower(n[i-1]) {
			s += 5
		}
		run++
		s += 3 * (run - 1)
		score += s
		qi++
	}
	if qi < len(q) {
		return 0, false
	}
	return score - len(n)/8, true // shorter names first among equals
}

// fuzzyFilter orders the indices of items whose name matches query best
// first (ties keep their order); a query that is a plain substring of an
// item's other text (a description) also matches it, below every fuzzy
// match of a name.
func fuzzyFilter(query string, n int, name, other func(i int) string) []int {
	query = strings.TrimSpace(query)
	type hit struct{ i, score int }
	var hits []hit
	lower := strings.ToLower(query)
	for i := range n {
		if s, ok := fuzzyScore(query, name(i)); ok {
			hits = append(hits, hit{i, s + 1000})
			continue
		}
		if other != nil && query != "" && strings.Contains(strings.ToLower(other(i)), lower) {
			hits = append(hits, hit{i, 0})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return b.score - a.score })
	out := make([]int, len(hits))
	for i, h := range hits {
		out[i] = h.i
	}
	return out
}
