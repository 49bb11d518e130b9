package termtext

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	for _, c := range []struct{ in, one, text string }{
		{"wide net", "wide net", "wide net"},
		{"café ✓ 日本", "café ✓ 日本", "café ✓ 日本"},
		{"\x1b]0;owned\a", `\x1b]0;owned\x07`, `\x1b]0;owned\x07`},
		{"\x1b]52;c;ZXZpbA==\x1b\\", `\x1b]52;c;ZXZpbA==\x1b\`, `\x1b]52;c;ZXZpbA==\x1b\`},
		{"a\nb\tc\rd", `a\nb\tc\rd`, "a\nb\\tc\\rd"},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"csi\u009b31m", `csi\u009b31m`, `csi\u009b31m`},
		{"rtl\u202eexe.txt", `rtl\u202eexe.txt`, `rtl\u202eexe.txt`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`, `bad\xff\xfeutf8`},
		{"nul\x00", `nul\x00`, `nul\x00`},
		{"sep\u2028", `sep\u2028`, `sep\u2028`},
		{"", "", ""},
	} {
		if got := Clean(c.in); got != c.one {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.one)
		}
		if got := CleanText(c.in); got != c.text {
			t.Errorf("CleanText(%q) = %q, want %q", c.in, got, c.text)
		}
		if HasControl(Clean(c.in)) {
			t.Errorf("Clean(%q) still has a control character", c.in)
		}
		if HasControl(c.in) != (c.in != c.one) {
			t.Errorf("HasControl(%q) = %v", c.in, HasControl(c.in))
		}
	}
}

func TestError(t *testing.T) {
	base := &fs.PathError{Op: "open", Path: "runs/x\x1b[2J", Err: fs.ErrNotExist}
	err := Error(base)
	if strings.Contains(err.Error(), "\x1b") || !strings.Contains(err.Error(), `\x1b[2J`) {
		t.Errorf("message %q", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is lost the cause")
	}
	if e := errors.New("a\nb"); Error(e) != e {
		t.Error("an error without control characters was wrapped")
	}
	if Error(nil) != nil {
		t.Error("nil")
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "x", "\x1b]0;t\a", "\xff", "\u202e", "a\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Clean(s)
		if HasControl(out) || strings.ContainsAny(out, "\n\r\x1b\a") {
			t.Fatalf("Clean(%q) = %q", s, out)
		}
		if !HasControl(s) && out != s {
			t.Fatalf("changed clean text %q to %q", s, out)
		}
		if txt := CleanText(s); HasControl(strings.ReplaceAll(txt, "\n", "")) {
			t.Fatalf("CleanText(%q) = %q", s, txt)
		}
	})
}
