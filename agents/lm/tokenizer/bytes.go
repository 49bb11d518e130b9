package tokenizer

import "unicode/utf8"

// byteToRune is GPT-2's ByteLevel alphabet: every byte gets a printable
// character, so that vocabularies can be stored as JSON strings. Printable
// Latin-1 bytes map to themselves; the others to U+0100 onwards in byte order.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = next
			next++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// byteLevelDecode maps a token written in the ByteLevel alphabet back to its
// bytes. ok is false when a character is outside the alphabet; Hugging Face's
// ByteLevel decoder then keeps the token's own UTF-8 bytes.
func byteLevelDecode(tok string) (b []byte, ok bool) {
	b = make([]byte, 0, len(tok))
	for _, r := range tok {
		v, in := runeToByte[r]
		if !in {
			return []byte(tok), false
		}
		b = append(b, v)
	}
	return b, true
}

// byteLevelEncode writes bytes in the ByteLevel alphabet.
func byteLevelEncode(b []byte) string {
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = utf8.AppendRune(out, byteToRune[c])
	}
	return string(out)
}

// appendLossy appends b to dst as valid UTF-8, replacing each maximal
// ill-formed subsequence by one U+FFFD, as Rust's String::from_utf8_lossy,
// Python's errors="replace" and the WHATWG TextDecoder do (Go's own
// conversions replace every bad byte separately).
func appendLossy(dst []byte, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		n := validPrefix(b[i:])
		if n > 0 && n == seqLen(c) {
			dst = append(dst, b[i:i+n]...)
			i += n
			continue
		}
		dst = append(dst, "\uFFFD"...)
		if n == 0 {
			n = 1
		}
		i += n
	}
	return dst
}

// seqLen is the length of the UTF-8 sequence a lead byte announces, 0 for a
// byte that cannot start one.
func seqLen(c byte) int {
	switch {
	case c < 0x80:
		return 1
	case c >= 0xC2 && c <= 0xDF:
		return 2
	case c >= 0xE0 && c <= 0xEF:
		return 3
	case c >= 0xF0 && c <= 0xF4:
		return 4
	}
	return 0
}

// validPrefix is the length of the longest prefix of b that is a valid
// (possibly incomplete) UTF-8 sequence: the "maximal subpart" of Unicode's
// chapter 3, using the second-byte ranges of table 3-7.
func validPrefix(b []byte) int {
	n := seqLen(b[0])
	if n == 0 {
		return 0
	}
	lo, hi := byte(0x80), byte(0xBF)
	switch b[0] {
	case 0xE0:
		lo = 0xA0
	case 0xED:
		hi = 0x9F
	case 0xF0:
		lo = 0x90
	case 0xF4:
		hi = 0x8F
	}
	i := 1
	for ; i < n && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}

// incompleteTail is how many bytes at the end of b start a UTF-8 sequence
// that more bytes could still complete; a streaming decoder holds them back.
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		start := len(b) - k
		n := seqLen(b[start])
		if b[start] >= 0x80 && b[start] < 0xC0 {
			continue // a continuation byte: look further back
		}
		if n > k && validPrefix(b[start:]) == k {
			return k
		}
		return 0
	}
	return 0
}

// sanitize returns s with each maximal ill-formed subsequence replaced by
// U+FFFD (see appendLossy); valid strings are returned as they are.
func sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(appendLossy(nil, []byte(s)))
}
