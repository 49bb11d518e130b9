package pystr

import (
	"testing"
	"unicode"
)

func TestDigitRanges(t *testing.T) {
	for _, r := range unicode.Nd.R16 {
		if r.Stride != 1 || (r.Hi-r.Lo+1)%10 != 0 {
			t.Errorf("Nd range %U–%U stride %d is not whole runs of ten", r.Lo, r.Hi, r.Stride)
		}
	}
	for _, r := range unicode.Nd.R32 {
		if r.Stride != 1 || (r.Hi-r.Lo+1)%10 != 0 {
			t.Errorf("Nd range %U–%U stride %d is not whole runs of ten", r.Lo, r.Hi, r.Stride)
		}
	}
	for r, want := range map[rune]int{'7': 7, '\u0663': 3, '\u09ea': 4, '\U0001d7d9': 1, 'x': -1, '²': -1} {
		if got := Digit(r); got != want {
			t.Errorf("Digit(%q) = %d, want %d", r, got, want)
		}
	}
}

func TestStripAndLower(t *testing.T) {
	if got := Strip("\x1c\u00a0 up \t\x1f"); got != "up" {
		t.Errorf("Strip = %q", got)
	}
	if got := Lower("R\u0130GHT"); got != "ri\u0307ght" {
		t.Errorf("Lower = %q", got)
	}
}
