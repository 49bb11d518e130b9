// Package suggest finds the names closest to a mistyped one, for error
// messages that end in "did you mean …?": every such message of the
// program comes from here.
package suggest

import "strings"

// Distance is the Levenshtein edit distance between a and b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Closest returns up to two candidates with the smallest distance, if it
// is at most limit; dist measures a candidate against the mistyped name.
func Closest(cands []string, limit int, dist func(string) int) []string {
	best := limit + 1
	var out []string
	for _, c := range cands {
		switch d := dist(c); {
		case d > limit:
		case d < best:
			best, out = d, []string{c}
		case d == best && len(out) < 2:
			out = append(out, c)
		}
	}
	return out
}

// Names returns up to two of options closest to name, ignoring case, within
// a third of its length (at least 2 edits): for environment, agent and
// argument names.
func Names(name string, options []string) []string {
	lower := strings.ToLower(name)
	return Closest(options, max(2, len(name)/3), func(o string) int {
		return Distance(lower, strings.ToLower(o))
	})
}

// DidYouMean is the end of an error message that offers the names near:
// "; did you mean a or b?", or "" when there are none.
func DidYouMean(near []string) string {
	if len(near) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}
