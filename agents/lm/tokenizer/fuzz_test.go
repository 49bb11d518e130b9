package tokenizer

import (
	"os"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Encoding then decoding gives the text back (up to the NFC normalizer, and
// with invalid UTF-8 read as U+FFFD), whole or streamed, and never panics.
func FuzzRoundTrip(f *testing.F) {
	qwen := loadFixture(f, "qwen3")
	gpt2 := loadFixture(f, "gpt2")
	char, err := NewChar("", nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "Hello world", "<|im_start|>user\nhi<|im_end|>", "a\u0301\u0338>", "12345 ١٢٣",
		"\xff\xe2\x82", "👨‍👩‍👧", "  \r\n\t x", "I'M don't", "<|im_end|>\u0338"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		clean := sanitize(s)
		for _, c := range []struct {
			name string
			tok  *Tokenizer
			want string
		}{
			{"qwen3", qwen, norm.NFC.String(clean)},
			{"gpt2", gpt2, clean},
		} {
			ids := c.tok.Encode(s, false)
			got := c.tok.Decode(ids)
			if c.tok.normalize != nil {
				got = norm.NFC.String(got)
			}
			if got != c.want {
				t.Fatalf("%s: Decode(Encode(%q)) = %q, want %q", c.name, s, got, c.want)
			}
			d := c.tok.NewStreamDecoder(DecodeOptions{})
			streamed := ""
			for _, id := range ids {
				streamed += d.Add(id)
			}
			streamed += d.Flush()
			if streamed != c.tok.Decode(ids) {
				t.Fatalf("%s: streamed %q, decoded %q", c.name, streamed, c.tok.Decode(ids))
			}
		}
		// Character-level: every character in the alphabet comes back,
		// each other one as <unk>.
		ids := char.Encode(s, false)
		if n := utf8.RuneCountInString(clean); len(ids) > n {
			t.Fatalf("char: %d ids for %d characters", len(ids), n)
		}
	})
}

// Parse refuses broken tokenizer files with an error and never panics or
// hangs; what it accepts encodes and decodes without panicking.
func FuzzParse(f *testing.F) {
	charFile, err := os.ReadFile("testdata/char/tokenizer.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(charFile)
	f.Add([]byte(`{"added_tokens":[{"id":3,"content":"<s>","special":true,"lstrip":true}],"normalizer":{"type":"NFC"},` +
		`"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},{"type":"ByteLevel","use_regex":true}]},` +
		`"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}},{"Sequence":{"id":"A"}}],"special_tokens":{"<s>":{"ids":[3]}}},` +
		`"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","unk_token":"a","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		tok, err := Parse(data, nil)
		if err != nil {
			return
		}
		for _, s := range []string{"ab ab 12", "<s>a\u0301b", "\xff", ""} {
			ids := tok.Encode(s, true)
			for _, id := range ids {
				if _, ok := tok.Token(id); !ok {
					t.Fatalf("Encode(%q) gave id %d outside the vocabulary", s, id)
				}
			}
			tok.Decode(ids)
		}
		tok.Decode([]int{-1, 0, 1, 1 << 30})
	})
}
