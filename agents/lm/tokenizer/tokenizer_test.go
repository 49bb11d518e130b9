package tokenizer

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite testdata/char from NewChar")

// pieces returns what the pre-tokenizer makes of s.
func pieces(tok *Tokenizer, s string) []string { return tok.preTokenize(s, nil) }

// The regexes by hand, against what Oniguruma (Hugging Face's Rust) gives,
// including where the JavaScript reference differs and is left out of the
// golden corpus: U+0085 and U+FEFF (JavaScript's \s is not White_Space) and
// (?i:'s) matching 'ſ (U+017F case-folds to s).
func TestSplitPatterns(t *testing.T) {
	qwen := splitWords{maxDigits: 1}
	llama := splitWords{maxDigits: 3}
	cases := []struct {
		p    splitter
		in   string
		want []string
	}{
		{qwen, "Hello world", []string{"Hello", " world"}},
		{qwen, "I'm DON'T", []string{"I", "'m", " DON", "'T"}},
		{qwen, "x'ſ", []string{"x", "'ſ"}},
		{splitGPT2{}, "x'ſ", []string{"x", "'", "ſ"}},
		{splitGPT2{}, "I'M", []string{"I", "'", "M"}},
		{qwen, "12345", []string{"1", "2", "3", "4", "5"}},
		{llama, "12345", []string{"123", "45"}},
		{splitGPT2{}, "a 12345", []string{"a", " 12345"}},
		{qwen, "a  b", []string{"a", " ", " b"}},
		{qwen, "a  ", []string{"a", "  "}},
		{qwen, "a \n\n  b", []string{"a", " \n\n", " ", " b"}},
		{qwen, "x\r\n\r\ny", []string{"x", "\r\n\r\n", "y"}},
		{qwen, "!!\n\nx", []string{"!!\n\n", "x"}},
		{qwen, " ...", []string{" ..."}},
		{qwen, "\tfoo", []string{"\tfoo"}},
		{qwen, "\nfoo", []string{"\n", "foo"}},
		{qwen, "a\u0085\u0085b", []string{"a", "\u0085", "\u0085b"}}, // NEL is whitespace
		{qwen, "a\ufeff\ufeffb", []string{"a", "\ufeff\ufeff", "b"}}, // BOM is not
		{splitGPT2{}, "a\u0085\u0085b", []string{"a", "\u0085", "\u0085", "b"}},
		{splitGPT2{}, "  hi", []string{" ", " hi"}},
		{qwen, "e\u0301t\u00e9", []string{"e", "\u0301t\u00e9"}}, // a mark is not a letter
	}
	for _, c := range cases {
		if got := splitAll(c.p, c.in, nil); !slices.Equal(got, c.want) {
			t.Errorf("%T %q: got %q, want %q", c.p, c.in, got, c.want)
		}
	}
}

// tokenizers' Digits uses char::is_numeric (Unicode N), not ASCII only as
// the JavaScript reference.
func TestDigitsStep(t *testing.T) {
	cases := []struct {
		individual bool
		in         string
		want       []string
	}{
		{true, "ab12c", []string{"ab", "1", "2", "c"}},
		{false, "ab12c", []string{"ab", "12", "c"}},
		{true, "x١٢y", []string{"x", "١", "٢", "y"}},
		{false, "Ⅻ½x", []string{"Ⅻ½", "x"}},
		{true, "", nil},
	}
	for _, c := range cases {
		if got := (digitsStep{c.individual}).split(c.in, nil); !slices.Equal(got, c.want) {
			t.Errorf("Digits(%v) %q: got %q, want %q", c.individual, c.in, got, c.want)
		}
	}
}

func TestAddedTokenFlags(t *testing.T) {
	tokens := []AddedToken{
		{ID: 0, Content: "<a>", LStrip: true},
		{ID: 1, Content: "<b>", RStrip: true},
		{ID: 2, Content: "tok", SingleWord: true},
		{ID: 3, Content: "<a>x"},
	}
	m := newAddedMatcher(tokens, func(AddedToken) bool { return true })
	show := func(ps []piece) (out []string) {
		for _, p := range ps {
			if p.token >= 0 {
				out = append(out, "["+p.text+"]")
			} else {
				out = append(out, p.text)
			}
		}
		return out
	}
	cases := []struct{ in, want string }{
		{"x  <a> y", "x|[  <a>]| y"},
		{"x <b>  y", "x |[<b>  ]|y"},
		{"a tok b", "a |[tok]| b"},
		{"atok b", "atok b"},
		{"tok_", "tok_"},
		{"<a>xy", "[<a>x]|y"}, // longest match
		{"<<a>", "<|[<a>]"},
	}
	for _, c := range cases {
		if got := strings.Join(show(m.split(c.in, tokens, nil)), "|"); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSpecialTokensAndTemplate(t *testing.T) {
	q := loadFixture(t, "qwen3")
	if _, ok := q.BOS(); ok {
		t.Error("Qwen3 has no BOS token")
	}
	eos, ok := q.EOS()
	if !ok || eos.Token != "<|im_end|>" || eos.ID != 151645 {
		t.Errorf("Qwen3 EOS = %+v, %v", eos, ok)
	}
	if pad, _ := q.PAD(); pad.ID != 151643 {
		t.Errorf("Qwen3 PAD = %+v", pad)
	}
	if !strings.Contains(q.ChatTemplate(), "enable_thinking") {
		t.Error("Qwen3's chat template was not read")
	}
	if id, _ := q.TokenID("<think>"); q.IsSpecial(id) || id != 151667 {
		t.Errorf("<think> = %d, special %v; want 151667, not special", id, q.IsSpecial(id))
	}
	if got := q.Encode("<|im_start|>user", true); !slices.Equal(got, []int{151644, 872}) {
		t.Errorf("Qwen3 Encode with specials = %v", got)
	}
	l := loadFixture(t, "llama3-style")
	if got := l.Encode("hi", true); len(got) != 2 || got[0] != 50257 {
		t.Errorf("Llama-3-style Encode(addSpecial) = %v, want BOS 50257 first", got)
	}
	if got := l.Encode("hi", false); len(got) != 1 {
		t.Errorf("Llama-3-style Encode = %v", got)
	}
}

// Invalid UTF-8 reads as U+FFFD per maximal ill-formed subsequence.
func TestInvalidUTF8(t *testing.T) {
	q := loadFixture(t, "qwen3")
	cases := []struct{ bad, good string }{
		{"a\xffb", "a\uFFFDb"},
		{"a\xe2\x82b", "a\uFFFDb"},             // a cut character: one U+FFFD
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // an encoded surrogate is three bad bytes
		{"\xf0\x9f\x98", "\uFFFD"},
	}
	for _, c := range cases {
		if got, want := q.Encode(c.bad, false), q.Encode(c.good, false); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v (as %q)", c.bad, got, want, c.good)
		}
	}
}

func TestRoundTripAndStream(t *testing.T) {
	for _, name := range []string{"qwen3", "gpt2", "smollm-style"} {
		tok := loadFixture(t, name)
		for i, e := range readGolden(t) {
			if i%7 != 0 {
				continue
			}
			ids := tok.Encode(e.S, false)
			want := sanitize(e.S)
			if tok.normalize != nil {
				want = tok.normalize(want)
			}
			if got := tok.Decode(ids); got != want {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", name, e.S, got)
			}
			d := tok.NewStreamDecoder(DecodeOptions{})
			var b strings.Builder
			for _, id := range ids {
				piece := d.Add(id)
				if !utf8.ValidString(piece) {
					t.Fatalf("%s: stream piece %q is not valid UTF-8", name, piece)
				}
				b.WriteString(piece)
			}
			b.WriteString(d.Flush())
			if b.String() != want {
				t.Fatalf("%s: streamed %q, want %q", name, b.String(), want)
			}
		}
	}
}

// The stream decoder holds a cut character back until its last byte.
func TestStreamHoldsIncompleteUTF8(t *testing.T) {
	q := loadFixture(t, "qwen3")
	// U+1F600 (4 bytes) as four byte tokens.
	var ids []int
	for _, b := range []byte("😀") {
		ids = append(ids, int(q.model.byteIDs[b]))
	}
	d := q.NewStreamDecoder(DecodeOptions{})
	for i, id := range ids[:3] {
		if s := d.Add(id); s != "" {
			t.Fatalf("byte %d: got %q before the character was complete", i, s)
		}
	}
	if s := d.Add(ids[3]); s != "😀" {
		t.Fatalf("last byte: got %q", s)
	}
	d.Add(ids[0])
	if s := d.Add(q.Encode("x", false)[0]); s != "\uFFFDx" {
		t.Fatalf("a cut character followed by x: got %q", s)
	}
	d.Add(ids[0])
	if s := d.Flush(); s != "\uFFFD" {
		t.Fatalf("Flush of a cut character: %q", s)
	}
}

func TestCharTokenizer(t *testing.T) {
	tok, err := NewChar("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != len(DefaultCharSpecials)+utf8.RuneCountInString(DefaultCharset) {
		t.Errorf("VocabSize = %d", tok.VocabSize())
	}
	ids := tok.Encode("<|im_start|>hi é\n", false)
	unk, _ := tok.UNK()
	want := []int{2, int(tok.model.vocab["h"]), int(tok.model.vocab["i"]), int(tok.model.vocab[" "]), unk.ID, int(tok.model.vocab["\n"])}
	if !slices.Equal(ids, want) {
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	if got := tok.Decode(ids); got != "<|im_start|>hi <unk>\n" {
		t.Errorf("Decode = %q", got)
	}
	if got := tok.DecodeWith(ids, DecodeOptions{SkipSpecial: true}); got != "hi \n" {
		t.Errorf("Decode skipping specials = %q", got)
	}
	tok.SetChatTemplate("{{ messages }}")
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.ChatTemplate() != "{{ messages }}" || !slices.Equal(back.Encode("hi\tthere~", false), tok.Encode("hi\tthere~", false)) {
		t.Error("the saved tokenizer reads back differently")
	}
	if eos, _ := back.EOS(); eos.Token != "<|endoftext|>" {
		t.Errorf("EOS after Save = %+v", eos)
	}
	// testdata/char is this tokenizer, for the JavaScript reference (the
	// golden corpus holds its ids).
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		got, _ := os.ReadFile(filepath.Join(dir, f))
		path := filepath.Join("testdata", "char", f)
		if *update {
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (go test -update rewrites it; then rerun scripts/tokenizer-reference)", f, path)
		}
	}
	if _, err := NewChar("ab", []string{"x"}); err == nil {
		t.Error("a one-character special token was accepted")
	}
}

func TestCharGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/char/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile("testdata/char/tokenizer_config.json")
	tok, err := Parse(data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, tok, "char", readGolden(t))
}

// Malformed files are refused with a message that says what is wrong.
func TestMalformedFiles(t *testing.T) {
	base := `{"added_tokens":[],"normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},"post_processor":null,"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":%s,"merges":%s}}`
	vocab := `{"a":0,"b":1,"ab":2}`
	cases := []struct{ name, file, want string }{
		{"not json", `{"model":`, "not a valid tokenizer.json"},
		{"wordpiece", `{"model":{"type":"WordPiece","vocab":{"a":0}}}`, `model type "WordPiece" is not supported`},
		{"no model", `{}`, `no "model" section`},
		{"merge out of vocab", fmt.Sprintf(base, vocab, `[["a","c"]]`), `"c" is not in the vocabulary`},
		{"merged out of vocab", fmt.Sprintf(base, `{"a":0,"b":1}`, `[["a","b"]]`), `merged token "ab" is not in the vocabulary`},
		{"bad merge", fmt.Sprintf(base, vocab, `["a b c"]`), "does not have exactly one space"},
		{"negative id", fmt.Sprintf(base, `{"a":-1}`, `[]`), "negative id"},
		{"shared id", fmt.Sprintf(base, `{"a":0,"b":0}`, `[]`), "share the id 0"},
		{"missing bytes", fmt.Sprintf(base, vocab, `[]`), "lacks 254 of the 256 byte tokens"},
		{"regex", strings.Replace(fmt.Sprintf(base, vocab, `[]`), `{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}`, `{"type":"Split","pattern":{"Regex":"\\w+"},"behavior":"Isolated","invert":false}`, 1), `regex "\\w+" is not supported`},
		{"normalizer", strings.Replace(fmt.Sprintf(base, vocab, `[]`), `"normalizer":null`, `"normalizer":{"type":"Precompiled"}`, 1), `normalizer "Precompiled" is not supported`},
		{"dropout", strings.Replace(fmt.Sprintf(base, vocab, `[]`), `"type":"BPE"`, `"type":"BPE","dropout":0.1`, 1), "dropout"},
		{"byte fallback", strings.Replace(fmt.Sprintf(base, vocab, `[]`), `"type":"BPE"`, `"type":"BPE","byte_fallback":true`, 1), "byte_fallback"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.file), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "has no tokenizer.json") {
		t.Errorf("Load of an empty directory: %v", err)
	}
	dir := t.TempDir()
	tok, _ := NewChar("ab", nil)
	tok.Save(dir)
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"eos_token": "<nope>"}`), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), `"<nope>", which is not in the vocabulary`) {
		t.Errorf("unknown eos_token: %v", err)
	}
}
