// Package termtext makes text that others may have written — names, notes
// and tags in meta.json, directory names, env ids in config.toml, a sweep's
// failure reasons — safe to print in a terminal: a terminal acts on control
// characters (ESC starts sequences that set the window title, write the
// clipboard or move the cursor) instead of showing them, so they are shown
// as escapes (\x1b) instead. Every reader of user-writable files for display
// passes its text through here.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// acts reports whether a terminal would act on r instead of showing it: C0
// controls, DEL, C1 controls (U+0080–U+009F: some terminals take U+009B as
// CSI), the Unicode line and paragraph separators, and the bidirectional
// formatting characters that make text read in another order than it is
// (the "trojan source" overrides).
func acts(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r < 0xa0:
		return true
	case r == '\u2028' || r == '\u2029':
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == '\u200e', r == '\u200f', r == '\u061c':
		return true
	}
	return false
}

// HasControl reports whether s holds a character that Clean would escape
// (a control character, a bidirectional override, or a byte that is not
// UTF-8).
func HasControl(s string) bool {
	for i, r := range s {
		if acts(r) || (r == utf8.RuneError && isBadByte(s, i)) {
			return true
		}
	}
	return false
}

func isBadByte(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 1
}

// Clean returns s for one line of a terminal: every character a terminal
// would act on, newlines and tabs included, written as a Go escape (\x1b,
// \n, \u202e), and bytes that are not UTF-8 as \xff. Text without any comes
// back as it is.
func Clean(s string) string { return clean(s, false) }

// CleanText is Clean for text of several lines (an error message): the
// newlines stay, everything else a terminal would act on is escaped.
func CleanText(s string) string { return clean(s, true) }

func clean(s string, keepNewlines bool) string {
	if !HasControl(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isBadByte(s, i):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && keepNewlines:
			b.WriteByte('\n')
		case !acts(r):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// Error is err with its message cleaned (CleanText); errors.Is and
// errors.As still see err. A nil err stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if !HasControl(strings.ReplaceAll(msg, "\n", "")) {
		return err
	}
	return cleaned{err: err, msg: CleanText(msg)}
}

type cleaned struct {
	err error
	msg string
}

func (c cleaned) Error() string { return c.msg }
func (c cleaned) Unwrap() error { return c.err }
