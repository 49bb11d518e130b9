// Package pystr is Python's string semantics where ports of Python code
// (rLLM's agents and rewards) must match them character for character:
// what str.isspace, str.strip and str.lower count, and the value of a
// decimal digit of any script, as int() and float() read it.
package pystr

import (
	"strings"
	"unicode"
)

// IsSpace is str.isspace for one character: Go's unicode.IsSpace plus the
// separators U+001C–U+001F, which Python counts as space.
func IsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// Strip is str.strip().
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// Lower is str.lower(): simple case mapping, except İ (U+0130), which
// Python lowers to i and a combining dot (Go to a plain i).
func Lower(s string) string { return strings.ToLower(strings.ReplaceAll(s, "\u0130", "i\u0307")) }

// Digit is the value of a decimal digit (Unicode category Nd) of any
// script, or −1 for anything else. Every Nd range runs from a zero to a
// nine (the test checks it), so the value is the distance from the range's
// start, modulo ten.
func Digit(r rune) int {
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}
