package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkEncode encodes the golden corpus one string at a time (the
// bytes/s figure is the corpus's UTF-8 bytes); scripts/tokenizer-reference/
// bench.mjs times the JavaScript reference on the same strings.
func BenchmarkEncode(b *testing.B) {
	golden := readGolden(b)
	total := 0
	for _, e := range golden {
		total += len(e.S)
	}
	run := func(b *testing.B, tok *Tokenizer) {
		for _, e := range golden { // warm the word cache, as the reference's
			tok.Encode(e.S, false)
		}
		b.SetBytes(int64(total))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for _, e := range golden {
				tok.Encode(e.S, false)
			}
		}
	}
	b.Run("qwen3-pruned", func(b *testing.B) { run(b, loadFixture(b, "qwen3")) })
	for name, pkg := range map[string]string{"qwen3": "tokenizer-qwen3", "llama3": "tokenizer-llama3_2"} {
		b.Run(name, func(b *testing.B) {
			dir := referenceDir(pkg)
			if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
				b.Skip("reference files not installed")
			}
			tok, err := Load(dir)
			if err != nil {
				b.Fatal(err)
			}
			run(b, tok)
		})
	}
}

// BenchmarkEncodeCold measures merging without the word cache: every
// string through a fresh tokenizer's empty cache is too costly to set up per
// iteration, so the cache is cleared instead.
func BenchmarkEncodeCold(b *testing.B) {
	golden := readGolden(b)
	total := 0
	for _, e := range golden {
		total += len(e.S)
	}
	tok := loadFixture(b, "qwen3")
	b.SetBytes(int64(total))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, e := range golden {
			tok.model.cache = map[string][]int{}
			tok.Encode(e.S, false)
		}
	}
}

func BenchmarkLoadQwen3(b *testing.B) {
	dir := referenceDir("tokenizer-qwen3")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		b.Skip("reference files not installed")
	}
	for i := 0; i < b.N; i++ {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
