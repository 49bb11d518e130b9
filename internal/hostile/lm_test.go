package hostile

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// lmBase is a tiny model every model-directory case copies: `lm init`
// Qwen3, float32, one safetensors file, the character tokenizer and
// ChatML's template; lmShort the same with a context of 16 tokens.
var lmBase struct {
	once        sync.Once
	dir, short  string
	err         error
	tensorNames []string
}

func lmModel(c *cx, short bool) (string, bool) {
	lmBase.once.Do(func() {
		dir, err := os.MkdirTemp("", "hostile-lm-")
		if err != nil {
			lmBase.err = err
			return
		}
		lmBase.dir, lmBase.short = filepath.Join(dir, "model"), filepath.Join(dir, "short")
		for _, m := range []struct {
			out string
			ctx string
		}{{lmBase.dir, "4096"}, {lmBase.short, "16"}} {
			r := c.run(opt{dir: dir}, "lm", "init", "--arch", "qwen3", "--hidden", "32", "--layers", "2", "--heads", "4",
				"--max-positions", m.ctx, "--seed", "1", "--out", m.out)
			if r.code != 0 {
				lmBase.err = fmt.Errorf("lm init: exit %d: %s", r.code, lastLines(r.out, 3))
				return
			}
		}
		s, err := readST(filepath.Join(lmBase.dir, "model.safetensors"))
		if err != nil {
			lmBase.err = err
			return
		}
		for k := range s.hdr {
			if k != "__metadata__" {
				lmBase.tensorNames = append(lmBase.tensorNames, k)
			}
		}
	})
	if lmBase.err != nil {
		c.fail("%v", lmBase.err)
		return "", false
	}
	src := lmBase.dir
	if short {
		src = lmBase.short
	}
	dst := c.path("model")
	if err := copyDir(src, dst); err != nil {
		c.fail("copy: %v", err)
		return "", false
	}
	return dst, true
}

// lmRefused runs an lm command and expects exit 2 with each of wants in
// the output.
func lmRefused(c *cx, o opt, wants []string, args ...string) {
	r := c.run(o, append([]string{"lm"}, args...)...)
	c.expectExit(r, 2, wants...)
	c.note("exit %d: %s", r.code, firstErr(r.out))
}

// generate is the command that reads all of a model directory.
func generate(dir string) []string {
	return []string{"generate", "--model", dir, "--prompt", "hi", "--max-tokens", "4", "--seed", "1", "--threads", "1"}
}

// editST rewrites the model's safetensors file through edit.
func editST(c *cx, dir string, edit func(s *st)) {
	path := filepath.Join(dir, "model.safetensors")
	s, err := readST(path)
	if err != nil {
		c.fail("read %s: %v", path, err)
		return
	}
	edit(s)
	if err := os.WriteFile(path, s.bytes(), 0o644); err != nil {
		c.fail("write: %v", err)
	}
}

// drop removes a tensor, its bytes too (a file written without it).
func (s *st) drop(name string) {
	t := s.tensor(name)
	if t == nil {
		return
	}
	offs := t["data_offsets"].([]any)
	a, _ := offs[0].(json.Number).Int64()
	b, _ := offs[1].(json.Number).Int64()
	delete(s.hdr, name)
	s.data = append(s.data[:a:a], s.data[b:]...)
	for k, v := range s.hdr {
		o, ok := v.(map[string]any)
		if k == "__metadata__" || !ok {
			continue
		}
		offs := o["data_offsets"].([]any)
		x, _ := offs[0].(json.Number).Int64()
		y, _ := offs[1].(json.Number).Int64()
		if x >= b {
			o["data_offsets"] = []int64{x - (b - a), y - (b - a)}
		}
	}
}

// editJSON rewrites a JSON file of the model directory through edit.
func editJSON(c *cx, path string, edit func(m map[string]any)) {
	b, err := os.ReadFile(path)
	if err != nil {
		c.fail("read: %v", err)
		return
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		c.fail("%s: %v", path, err)
		return
	}
	edit(m)
	b, _ = json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		c.fail("write: %v", err)
	}
}

// fifo replaces path by a named pipe that nobody writes.
func fifo(c *cx, path string) {
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		c.fail("mkfifo: %v", err)
	}
}

// shard moves the weights to a shard named by the index: the index maps
// every tensor to target (relative to the model directory).
func shard(c *cx, dir, target string) {
	os.Remove(filepath.Join(dir, "model.safetensors"))
	wm := map[string]string{}
	for _, n := range lmBase.tensorNames {
		wm[n] = target
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 1}, "weight_map": wm})
	c.write("model/model.safetensors.index.json", b)
}

const (
	qProj = "model.layers.0.self_attn.q_proj.weight"
	kProj = "model.layers.0.self_attn.k_proj.weight"
	embed = "model.embed_tokens.weight"
	down  = "model.layers.1.mlp.down_proj.weight"
)

func lmCases() []hcase {
	type mc struct {
		name   string
		wants  []string                  // in the output
		args   func(dir string) []string // default: generate
		stdin  string
		short  bool // the model with a 16-token context
		rssKiB int64
		edit   func(c *cx, dir string)
	}
	setCfg := func(key string, v any) func(c *cx, dir string) {
		return func(c *cx, dir string) {
			editJSON(c, filepath.Join(dir, "config.json"), func(m map[string]any) { m[key] = v })
		}
	}
	cfgSet := func(kv map[string]any) func(c *cx, dir string) {
		return func(c *cx, dir string) {
			editJSON(c, filepath.Join(dir, "config.json"), func(m map[string]any) {
				for k, v := range kv {
					m[k] = v
				}
			})
		}
	}
	template := func(t string) func(c *cx, dir string) {
		return func(c *cx, dir string) {
			editJSON(c, filepath.Join(dir, "tokenizer_config.json"), func(m map[string]any) { m["chat_template"] = t })
		}
	}
	writeFile := func(name, body string) func(c *cx, dir string) {
		return func(c *cx, dir string) { c.write("model/"+name, []byte(body)) }
	}
	chat := func(dir string) []string {
		return []string{"tokenize", "--model", dir, "--chat"}
	}
	const oneChat = `[{"role": "user", "content": "hi"}]` + "\n"
	score := func(dir string) []string { return []string{"score", "--model", dir, "--threads", "1"} }
	tokenize := func(dir string) []string { return []string{"tokenize", "--model", dir} }

	ms := []mc{
		// The weights.
		{name: "tensor missing", wants: []string{down, "is missing"}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) { s.drop(down) })
		}},
		{name: "tensor unexpected", wants: []string{"model.layers.7.mlp.up_proj.weight"}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) {
				n := int64(len(s.data))
				s.data = append(s.data, make([]byte, 16)...)
				s.hdr["model.layers.7.mlp.up_proj.weight"] = map[string]any{"dtype": "F32", "shape": []int{2, 2}, "data_offsets": []int64{n, n + 16}}
			})
		}},
		{name: "tensor mis-shaped (transposed)", wants: []string{kProj}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) { s.tensor(kProj)["shape"] = []int{32, 16} })
		}},
		{name: "tensor shape product lies", wants: []string{qProj}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) { s.tensor(qProj)["shape"] = []int{32, 33} })
		}},
		{name: "tensor NaN", wants: []string{embed}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) { s.setF32(embed, 17, float32(math.NaN())) })
		}},
		{name: "tensor +Inf", wants: []string{down}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) { s.setF32(down, 3, float32(math.Inf(1))) })
		}},
		{name: "tensor dtype unknown", wants: []string{qProj}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) { s.tensor(qProj)["dtype"] = "F128" })
		}},
		{name: "tensor dtype lies (BF16 over F32 bytes)", wants: []string{qProj}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) { s.tensor(qProj)["dtype"] = "BF16" })
		}},
		{name: "offsets past the end", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) { s.tensor(qProj)["data_offsets"] = []int64{int64(len(s.data)), int64(len(s.data)) + 4096} })
		}},
		{name: "offsets reversed", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) { s.tensor(qProj)["data_offsets"] = []int64{4096, 0} })
		}},
		{name: "offsets 2^63", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			editST(c, dir, func(s *st) {
				s.tensor(qProj)["data_offsets"] = []any{json.Number("9223372036854775807"), json.Number("9223372036854775807")}
			})
		}},
		{name: "truncated data", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()/2)
		}},
		{name: "truncated header", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			os.Truncate(filepath.Join(dir, "model.safetensors"), 40)
		}},
		{name: "five bytes", wants: []string{"model.safetensors"}, edit: writeFile("model.safetensors", "\x01\x02\x03\x04\x05")},
		{name: "empty weights file", wants: []string{"model.safetensors"}, edit: writeFile("model.safetensors", "")},
		{name: "header length 2^62", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			b, _ := os.ReadFile(p)
			binary.LittleEndian.PutUint64(b, 1<<62)
			os.WriteFile(p, b, 0o644)
		}},
		{name: "header length past the end", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			b, _ := os.ReadFile(p)
			binary.LittleEndian.PutUint64(b, uint64(len(b)))
			os.WriteFile(p, b, 0o644)
		}},
		{name: "header not JSON", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			h := "{not json at all"
			b := make([]byte, 8)
			binary.LittleEndian.PutUint64(b, uint64(len(h)))
			c.write("model/model.safetensors", append(b, h...))
		}},
		{name: "header 100k deep", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			h := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
			b := make([]byte, 8)
			binary.LittleEndian.PutUint64(b, uint64(len(h)))
			c.write("model/model.safetensors", append(b, h...))
		}},
		{name: "weights file a directory", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			os.Remove(p)
			os.Mkdir(p, 0o755)
		}},
		{name: "weights file a FIFO", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			fifo(c, filepath.Join(dir, "model.safetensors"))
		}},
		{name: "weights file -> /dev/zero", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			os.Remove(p)
			os.Symlink("/dev/zero", p)
		}},
		{name: "no weights", wants: []string{"model.safetensors"}, edit: func(c *cx, dir string) {
			os.Remove(filepath.Join(dir, "model.safetensors"))
		}},

		// The shard index.
		{name: "index points outside the directory", wants: []string{"outside.safetensors"}, edit: func(c *cx, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "model.safetensors"))
			c.write("outside.safetensors", b) // a good file, which must still not be read
			shard(c, dir, "../outside.safetensors")
		}},
		{name: "index absolute path", wants: []string{"/etc/passwd"}, edit: func(c *cx, dir string) { shard(c, dir, "/etc/passwd") }},
		{name: "index points at a FIFO", wants: []string{"pipe.safetensors"}, edit: func(c *cx, dir string) {
			shard(c, dir, "pipe.safetensors")
			fifo(c, filepath.Join(dir, "pipe.safetensors"))
		}},
		{name: "index names a missing shard", wants: []string{"model-00001-of-00002.safetensors"}, edit: func(c *cx, dir string) {
			shard(c, dir, "model-00001-of-00002.safetensors")
		}},
		{name: "index garbage", wants: []string{"model.safetensors.index.json"}, edit: func(c *cx, dir string) {
			os.Remove(filepath.Join(dir, "model.safetensors"))
			c.write("model/model.safetensors.index.json", []byte("\x00\xffnot json"))
		}},
		{name: "index misses a tensor", wants: []string{down}, edit: func(c *cx, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "model.safetensors"))
			shard(c, dir, "w.safetensors")
			c.write("model/w.safetensors", b)
			editJSON(c, filepath.Join(dir, "model.safetensors.index.json"), func(m map[string]any) {
				delete(m["weight_map"].(map[string]any), down)
			})
		}},

		// config.json.
		{name: "config garbage", wants: []string{"config.json"}, edit: writeFile("config.json", "\x89PNG\r\n\x1a\n")},
		{name: "config empty", wants: []string{"config.json"}, edit: writeFile("config.json", "")},
		{name: "config an array", wants: []string{"config.json"}, edit: writeFile("config.json", "[1, 2, 3]")},
		{name: "config a FIFO", wants: []string{"config.json"}, edit: func(c *cx, dir string) { fifo(c, filepath.Join(dir, "config.json")) }},
		{name: "config 2 GB (sparse)", wants: []string{"config.json"}, edit: func(c *cx, dir string) {
			os.Truncate(filepath.Join(dir, "config.json"), 2<<30)
		}},
		{name: "config unknown model_type", wants: []string{"gpt2"}, edit: setCfg("model_type", "gpt2")},
		{name: "config hidden_size a string", wants: []string{"hidden_size"}, edit: setCfg("hidden_size", "wide")},
		{name: "config hidden_size 1e30", wants: []string{"hidden_size"}, edit: setCfg("hidden_size", 1e30)},
		{name: "config hidden_size -32", wants: []string{"hidden_size"}, edit: setCfg("hidden_size", -32)},
		{name: "config heads 0", wants: []string{"num_attention_heads"}, edit: setCfg("num_attention_heads", 0)},
		{name: "config kv heads not dividing", wants: []string{"num_key_value_heads"}, edit: setCfg("num_key_value_heads", 3)},
		{name: "config rope_theta NaN-ish", wants: []string{"rope_theta"}, edit: setCfg("rope_theta", -1)},
		{name: "config rms_norm_eps negative", wants: []string{"rms_norm_eps"}, edit: setCfg("rms_norm_eps", -1e-6)},
		{name: "config eos id outside the vocabulary", wants: []string{"eos_token_id"}, edit: setCfg("eos_token_id", 1<<40)},
		// Shapes whose weights would take terabytes: refused by the memory
		// estimate, under a small bound on peak RSS (nothing allocated).
		{name: "config 1024 layers of 65536 (memory)", wants: []string{"available"}, rssKiB: 300 << 10, edit: cfgSet(map[string]any{
			"num_hidden_layers": 1024, "hidden_size": 65536, "intermediate_size": 262144, "num_attention_heads": 64, "num_key_value_heads": 64, "head_dim": 1024})},
		{name: "config vocabulary 4M x 65536 (memory)", wants: []string{"available"}, rssKiB: 300 << 10, edit: cfgSet(map[string]any{
			"vocab_size": 4 << 20, "hidden_size": 65536, "num_attention_heads": 64, "num_key_value_heads": 64, "head_dim": 1024})},
		{name: "config 512 layers, MLP 4x (memory)", wants: []string{"available"}, rssKiB: 300 << 10, edit: cfgSet(map[string]any{
			"num_hidden_layers": 512, "hidden_size": 8192, "intermediate_size": 32768, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128})},
		{name: "config vocab_size disagrees with the weights", wants: []string{embed, "model.safetensors"}, edit: setCfg("vocab_size", 50)},

		// tokenizer.json.
		{name: "tokenizer garbage", wants: []string{"tokenizer.json"}, args: tokenize, stdin: `"hi"`, edit: writeFile("tokenizer.json", "{{{{")},
		{name: "tokenizer empty", wants: []string{"tokenizer.json"}, args: tokenize, stdin: `"hi"`, edit: writeFile("tokenizer.json", "")},
		{name: "tokenizer missing", wants: []string{"tokenizer.json"}, args: tokenize, stdin: `"hi"`, edit: func(c *cx, dir string) {
			os.Remove(filepath.Join(dir, "tokenizer.json"))
		}},
		{name: "tokenizer a FIFO", wants: []string{"tokenizer.json"}, args: tokenize, stdin: `"hi"`, edit: func(c *cx, dir string) {
			fifo(c, filepath.Join(dir, "tokenizer.json"))
		}},
		{name: "tokenizer 1 GB (sparse)", wants: []string{"tokenizer.json"}, args: tokenize, stdin: `"hi"`, edit: func(c *cx, dir string) {
			os.Truncate(filepath.Join(dir, "tokenizer.json"), 1<<30)
		}},
		{name: "tokenizer 100k deep", wants: []string{"tokenizer.json"}, args: tokenize, stdin: `"hi"`,
			edit: writeFile("tokenizer.json", strings.Repeat(`{"a":`, 100000)+"1"+strings.Repeat("}", 100000))},
		{name: "tokenizer model type unknown", wants: []string{"tokenizer.json"}, args: tokenize, stdin: `"hi"`, edit: func(c *cx, dir string) {
			editJSON(c, filepath.Join(dir, "tokenizer.json"), func(m map[string]any) { m["model"] = map[string]any{"type": "Hypnotic"} })
		}},
		{name: "tokenizer id 1e12", wants: []string{"tokenizer.json"}, args: tokenize, stdin: `"hi"`, edit: func(c *cx, dir string) {
			editJSON(c, filepath.Join(dir, "tokenizer.json"), func(m map[string]any) {
				if mod, ok := m["model"].(map[string]any); ok {
					if v, ok := mod["vocab"].(map[string]any); ok {
						v["a"] = 1e12
					}
				}
				m["added_tokens"] = []any{map[string]any{"id": 1e12, "content": "<evil>", "special": true}}
			})
		}},

		// Chat templates.
		{name: "template loops 1e9 times", wants: []string{"tokenizer_config.json"}, args: chat, stdin: oneChat,
			edit: template(`{% for i in range(1000000000) %}{{ i }}{% endfor %}`)},
		{name: "template nested loops", wants: []string{"tokenizer_config.json"}, args: chat, stdin: oneChat,
			edit: template(`{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}`)},
		{name: "template recursive macro", wants: []string{"tokenizer_config.json"}, args: chat, stdin: oneChat,
			edit: template(`{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`)},
		{name: "template string doubling", wants: []string{"tokenizer_config.json"}, args: chat, stdin: oneChat,
			edit: template(`{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}`)},
		{name: "template raises", wants: []string{"nope, not this conversation"}, args: chat, stdin: oneChat,
			edit: template(`{{ raise_exception('nope, not this conversation') }}`)},
		{name: "template syntax error", wants: []string{"tokenizer_config.json"}, args: chat, stdin: oneChat,
			edit: template(`{% if messages %}{{ messages[0].content }`)},
		{name: "template raises (generate)", wants: []string{"no generation"},
			args: func(dir string) []string { return append(generate(dir), "--chat") },
			edit: template(`{{ raise_exception('no generation') }}`)},
		{name: "tokenizer_config garbage", wants: []string{"tokenizer_config.json"}, args: chat, stdin: oneChat,
			edit: writeFile("tokenizer_config.json", "{]")},

		// Ids and prompts.
		{name: "score id outside the vocabulary", wants: []string{"completion_ids[0] = 101", "outside the vocabulary"}, args: score,
			stdin: `{"prompt_ids": [1, 2], "completion_ids": [101]}`},
		{name: "score id -1", wants: []string{"prompt_ids[1] = -1"}, args: score, stdin: `{"prompt_ids": [1, -1], "completion_ids": [3]}`},
		{name: "score id 1e20", wants: []string{"line 1"}, args: score, stdin: `{"prompt_ids": [1e20], "completion_ids": [3]}`},
		{name: "score id 2^63", wants: []string{"line 1"}, args: score, stdin: `{"prompt_ids": [9223372036854775808], "completion_ids": [3]}`},
		{name: "score over the context", wants: []string{"longer than the model's context of 16"}, args: score, short: true,
			stdin: `{"prompt": "twenty characters ..", "completion": "x"}`},
		{name: "score 10k ids over the context", wants: []string{"longer than the model's context of 16"}, args: score, short: true,
			stdin: `{"prompt_ids": [` + strings.Repeat("5, ", 9999) + `5], "completion_ids": [3]}`},
		{name: "generate over the context", wants: []string{"the prompt is 20 tokens", "context is 16"}, short: true,
			args: func(dir string) []string {
				return []string{"generate", "--model", dir, "--prompt", "twenty characters ..", "--max-tokens", "4"}
			}},
		{name: "tokenize line of 80 MiB", wants: []string{"line 1", "longer than"}, args: tokenize, stdin: `"` + strings.Repeat("a", 80<<20)},
		{name: "tokenize non-UTF-8", wants: nil, args: tokenize, stdin: "\"\xff\xfe\"\n"},
	}
	var cs []hcase
	for _, m := range ms {
		m := m
		expect := "exit 2 naming what is wrong; no panic, hang or large allocation"
		if m.name == "tokenize non-UTF-8" {
			expect = "exit 0 (JSON turns invalid bytes into U+FFFD)"
		}
		cs = append(cs, hcase{
			name:   "lm model dir/" + m.name,
			expect: expect,
			fast:   m.name == "tensor NaN" || m.name == "index points at a FIFO" || m.name == "config 1024 layers of 65536 (memory)" || m.name == "template loops 1e9 times",
			bound:  90 * time.Second,
			rssKiB: m.rssKiB,
			run: func(c *cx) {
				dir, ok := lmModel(c, m.short)
				if !ok {
					return
				}
				if m.edit != nil {
					m.edit(c, dir)
				}
				args := generate(dir)
				if m.args != nil {
					args = m.args(dir)
				}
				o := opt{stdin: []byte(m.stdin)}
				if m.name == "tokenize non-UTF-8" {
					r := c.run(o, append([]string{"lm"}, args...)...)
					c.expectExit(r, 0, `"ids":[`)
					c.note("exit %d", r.code)
					return
				}
				lmRefused(c, o, m.wants, args...)
			},
		})
	}
	return cs
}
