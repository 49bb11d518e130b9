package hf

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agenttrainer/agenttrainer/internal/safetensors"
)

func readConfig(t *testing.T, name string) *Config {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(b, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The released models' config.json files give the shapes and parameter
// counts their model cards state.
func TestReleasedConfigs(t *testing.T) {
	tests := []struct {
		file                string
		arch                Arch
		params              int64
		headDim             int
		tied, qkvBias, norm bool
		rope                Rope
		eos                 []int
	}{
		{"qwen2.5-0.5b-instruct", Qwen2, 494032768, 64, true, true, false, Rope{Theta: 1e6}, []int{151645}},
		{"qwen3-0.6b", Qwen3, 596049920, 128, true, false, true, Rope{Theta: 1e6}, []int{151645}},
		{"llama-3.2-1b", Llama, 1235814400, 64, true, false, false, Rope{Theta: 500000, Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMax: 8192}, []int{128001}},
		{"smollm2-135m-instruct", Llama, 134515008, 64, true, false, false, Rope{Theta: 100000}, []int{2}},
		{"llama-rope-parameters", Llama, 112448, 16, false, false, false, Rope{Theta: 500000, Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMax: 8192}, []int{5, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c := readConfig(t, tt.file)
			if c.Arch != tt.arch || c.Params() != tt.params || c.HeadDim != tt.headDim || c.Tied != tt.tied ||
				c.QKVBias != tt.qkvBias || c.QKNorm != tt.norm || c.Rope != tt.rope || !slices.Equal(c.EOS, tt.eos) {
				t.Errorf("got %s %d params head_dim %d tied %v qkv bias %v q/k norm %v rope %+v eos %v",
					c.Arch, c.Params(), c.HeadDim, c.Tied, c.QKVBias, c.QKNorm, c.Rope, c.EOS)
			}
		})
	}
}

func TestTensorNamesAreTransformers(t *testing.T) {
	c := readConfig(t, "qwen2.5-0.5b-instruct")
	specs := c.Tensors()
	want := []Tensor{
		{"model.embed_tokens.weight", []int{151936, 896}},
		{"model.layers.0.input_layernorm.weight", []int{896}},
		{"model.layers.0.self_attn.q_proj.weight", []int{896, 896}},
		{"model.layers.0.self_attn.q_proj.bias", []int{896}},
		{"model.layers.0.self_attn.k_proj.weight", []int{128, 896}},
		{"model.layers.0.self_attn.k_proj.bias", []int{128}},
		{"model.layers.0.self_attn.v_proj.weight", []int{128, 896}},
		{"model.layers.0.self_attn.v_proj.bias", []int{128}},
		{"model.layers.0.self_attn.o_proj.weight", []int{896, 896}},
		{"model.layers.0.post_attention_layernorm.weight", []int{896}},
		{"model.layers.0.mlp.gate_proj.weight", []int{4864, 896}},
		{"model.layers.0.mlp.up_proj.weight", []int{4864, 896}},
		{"model.layers.0.mlp.down_proj.weight", []int{896, 4864}},
	}
	for i, w := range want {
		if specs[i].Name != w.Name || !slices.Equal(specs[i].Shape, w.Shape) {
			t.Errorf("tensor %d: %s %v, want %s %v", i, specs[i].Name, specs[i].Shape, w.Name, w.Shape)
		}
	}
	if last := specs[len(specs)-1]; last.Name != "model.norm.weight" {
		t.Errorf("a tied model ends with %s", last.Name)
	}
	q3 := readConfig(t, "qwen3-0.6b")
	names := map[string]bool{}
	for _, s := range q3.Tensors() {
		names[s.Name] = true
	}
	if !names["model.layers.27.self_attn.q_norm.weight"] || !names["model.layers.27.self_attn.k_norm.weight"] || names["model.layers.0.self_attn.q_proj.bias"] {
		t.Errorf("qwen3 tensors: q_norm %v k_norm %v q bias %v", names["model.layers.27.self_attn.q_norm.weight"], names["model.layers.27.self_attn.k_norm.weight"], names["model.layers.0.self_attn.q_proj.bias"])
	}
}

func TestConfigRefusals(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{"architectures": []string{"LlamaForCausalLM"}, "hidden_size": 64, "intermediate_size": 128,
			"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}
	}
	tests := []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"unknown architecture", func(m map[string]any) { m["architectures"] = []string{"GPT2LMHeadModel"} }, `"GPT2LMHeadModel" is not supported`},
		{"missing width", func(m map[string]any) { delete(m, "hidden_size") }, "hidden_size is missing"},
		{"zero layers", func(m map[string]any) { m["num_hidden_layers"] = 0 }, "num_hidden_layers is 0"},
		{"kv heads do not divide", func(m map[string]any) { m["num_key_value_heads"] = 3 }, "must divide"},
		{"odd head_dim", func(m map[string]any) { m["head_dim"] = 15 }, "even head_dim"},
		{"gelu", func(m map[string]any) { m["hidden_act"] = "gelu" }, "only silu"},
		{"sliding window", func(m map[string]any) { m["use_sliding_window"] = true }, "sliding-window"},
		{"yarn", func(m map[string]any) { m["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4} }, `"yarn" is not supported`},
		{"llama3 without factor", func(m map[string]any) {
			m["rope_scaling"] = map[string]any{"rope_type": "llama3", "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 8192}
		}, "factor must be a positive number"},
		{"eos outside the vocabulary", func(m map[string]any) { m["eos_token_id"] = []int{2, 100} }, "eos_token_id 100 is outside"},
		{"model_type disagrees", func(m map[string]any) { m["model_type"] = "qwen2" }, "model_type says"},
		{"negative eps", func(m map[string]any) { m["rms_norm_eps"] = -1 }, "rms_norm_eps"},
		{"huge vocabulary", func(m map[string]any) { m["vocab_size"] = 1 << 40 }, "vocab_size is"},
		{"rope theta", func(m map[string]any) { m["rope_theta"] = 0.5 }, "rope_theta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base()
			tt.edit(m)
			b, _ := json.Marshal(m)
			_, err := ParseConfig(b, "dir/config.json")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "dir/config.json: ") {
				t.Fatalf("error %v, want one naming the file and mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := ParseConfig([]byte("[1]"), "c"); err == nil {
		t.Error("an array was taken for a config")
	}
}

// tinyTensors are values for every tensor of c: small distinct numbers.
func tinyTensors(c *Config) []safetensors.Tensor {
	var out []safetensors.Tensor
	for i, s := range c.Tensors() {
		d := make([]float32, s.Elements())
		for j := range d {
			d[j] = float32(math.Sin(float64(i*7919 + j)))
		}
		out = append(out, safetensors.Tensor{Name: s.Name, Shape: s.Shape, Data: d})
	}
	return out
}

func tinyConfig(t *testing.T, arch Arch, tied bool) *Config {
	t.Helper()
	c, err := NewConfig(arch, 50, 32, 48, 2, 4, 2, 0, tied)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A saved model opens back with the same config and values: single file
// and shards, F32 and BF16; the tokenizer files are copied over.
func TestSaveOpenRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		arch  Arch
		tied  bool
		dtype safetensors.DType
		shard int64
	}{{Qwen2, true, safetensors.F32, 0}, {Qwen3, false, safetensors.BF16, 0}, {Llama, false, safetensors.F32, 8000}} {
		t.Run(string(tt.arch), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			os.WriteFile(filepath.Join(src, "tokenizer.json"), []byte(`{"model":{}}`), 0o644)
			os.WriteFile(filepath.Join(src, "tokenizer_config.json"), []byte(`{"chat_template":"x"}`), 0o644)
			c := tinyConfig(t, tt.arch, tt.tied)
			c.Set("my_key", "kept")
			ts := tinyTensors(c)
			if err := Save(dst, c, ts, SaveOptions{DType: tt.dtype, MaxShard: tt.shard, From: src}); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"tokenizer.json", "tokenizer_config.json", GenerationName, ConfigName} {
				if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
					t.Errorf("%s not written: %v", f, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dst, safetensors.IndexName)); (err == nil) != (tt.shard > 0) {
				t.Errorf("index present: %v, want %v", err == nil, tt.shard > 0)
			}
			m, err := Open(dst, true)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Config.Params() != c.Params() || m.Config.Arch != tt.arch || m.DType() != tt.dtype || string(m.Config.raw["my_key"]) != `"kept"` {
				t.Fatalf("config back: %+v dtype %s", m.Config, m.DType())
			}
			for _, want := range ts {
				got := make([]float32, len(want.Data))
				if err := m.Read(want.Name, got); err != nil {
					t.Fatal(err)
				}
				for i, v := range want.Data {
					if tt.dtype == safetensors.BF16 {
						v = math.Float32frombits(uint32(safetensors.Float32ToBF16(v)) << 16)
					}
					if got[i] != v {
						t.Fatalf("%s[%d] = %v, want %v", want.Name, i, got[i], v)
					}
				}
			}
		})
	}
}

// Weights that do not fit the config are refused before any value is
// read, naming the tensor and the file.
func TestOpenRefusesWeightsUnlikeTheConfig(t *testing.T) {
	c := tinyConfig(t, Qwen2, false)
	tests := []struct {
		name string
		edit func([]safetensors.Tensor) []safetensors.Tensor
		want string
	}{
		{"missing", func(ts []safetensors.Tensor) []safetensors.Tensor { return ts[1:] }, "model.embed_tokens.weight is missing"},
		{"unexpected", func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, safetensors.Tensor{Name: "model.layers.0.self_attn.o_proj.bias", Shape: []int{32}, Data: make([]float32, 32)})
		}, "o_proj.bias is not part of"},
		{"mis-shaped", func(ts []safetensors.Tensor) []safetensors.Tensor {
			ts[4].Shape = []int{ts[4].Shape[1], ts[4].Shape[0]} // k_proj [16, 32] stored transposed
			return ts
		}, "k_proj.weight has shape [32 16]; the config calls for [16 32]"},
		{"non-finite", func(ts []safetensors.Tensor) []safetensors.Tensor {
			ts[3].Data[1] = float32(math.NaN())
			return ts
		}, "q_proj.bias holds a non-finite value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cj, _ := c.JSON()
			os.WriteFile(filepath.Join(dir, ConfigName), cj, 0o644)
			ts := tt.edit(tinyTensors(c))
			if err := safetensors.WriteDir(dir, ts, nil, safetensors.F32, 0); err != nil {
				t.Fatal(err)
			}
			m, err := Open(dir, true)
			if err == nil {
				for _, s := range c.Tensors() {
					if err = m.Read(s.Name, make([]float32, s.Elements())); err != nil {
						break
					}
				}
				m.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %v, want one naming the directory or file and mentioning %q", err, tt.want)
			}
		})
	}
}

// A tied model may carry lm_head.weight when it equals the embedding.
func TestTiedHeadMustEqualTheEmbedding(t *testing.T) {
	c := tinyConfig(t, Llama, true)
	for _, same := range []bool{true, false} {
		dir := t.TempDir()
		cj, _ := c.JSON()
		os.WriteFile(filepath.Join(dir, ConfigName), cj, 0o644)
		ts := tinyTensors(c)
		head := safetensors.Tensor{Name: "lm_head.weight", Shape: ts[0].Shape, Data: slices.Clone(ts[0].Data)}
		if !same {
			head.Data[5]++
		}
		safetensors.WriteDir(dir, append(ts, head), nil, safetensors.F32, 0)
		m, err := Open(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		err = m.Read("model.embed_tokens.weight", make([]float32, len(ts[0].Data)))
		m.Close()
		if same && err != nil || !same && (err == nil || !strings.Contains(err.Error(), "differs")) {
			t.Errorf("same %v: %v", same, err)
		}
	}
}

func TestOpenRefusesWhatIsNotAModel(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, false); err == nil || !strings.Contains(err.Error(), "no config.json") {
		t.Errorf("empty dir: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	if _, err := Open(filepath.Join(dir, "f"), false); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file: %v", err)
	}
	c := tinyConfig(t, Qwen3, true)
	cj, _ := c.JSON()
	os.WriteFile(filepath.Join(dir, ConfigName), cj, 0o644)
	if _, err := Open(dir, false); err == nil || !strings.Contains(err.Error(), "neither model.safetensors") {
		t.Errorf("config only: %v", err)
	}
}

func TestGenerationConfig(t *testing.T) {
	dir := t.TempDir()
	if g, err := ReadGenerationConfig(dir, 10); g != nil || err != nil {
		t.Fatalf("absent: %v %v", g, err)
	}
	os.WriteFile(filepath.Join(dir, GenerationName), []byte(`{"eos_token_id":[3,4],"temperature":0.7,"top_p":0.8}`), 0o644)
	g, err := ReadGenerationConfig(dir, 10)
	if err != nil || !slices.Equal(g.EOS, []int{3, 4}) || *g.Temperature != 0.7 || *g.TopP != 0.8 || g.TopK != nil {
		t.Fatalf("%+v %v", g, err)
	}
	os.WriteFile(filepath.Join(dir, GenerationName), []byte(`{"eos_token_id":12}`), 0o644)
	if _, err := ReadGenerationConfig(dir, 10); err == nil || !strings.Contains(err.Error(), "outside the vocabulary") {
		t.Errorf("eos outside: %v", err)
	}
}

// Files that are not what a model directory holds are refused, never read
// forever: a named pipe, a device, a directory where a file belongs, a
// config larger than a config can be.
func TestOpenRefusesOddFiles(t *testing.T) {
	c := tinyConfig(t, Llama, true)
	cj, _ := c.JSON()
	tests := []struct {
		name string
		make func(dir string)
		want string
	}{
		{"config is a pipe", func(dir string) { syscall.Mkfifo(filepath.Join(dir, ConfigName), 0o644) }, "not a regular file"},
		{"config is a directory", func(dir string) { os.Mkdir(filepath.Join(dir, ConfigName), 0o755) }, "not a regular file"},
		{"config is huge", func(dir string) {
			os.WriteFile(filepath.Join(dir, ConfigName), append(cj[:len(cj)-2], append([]byte(`,"pad":"`), append(make([]byte, 2<<20), '"', '}')...)...), 0o644)
		}, "at most"},
		{"weights are a pipe", func(dir string) {
			os.WriteFile(filepath.Join(dir, ConfigName), cj, 0o644)
			syscall.Mkfifo(filepath.Join(dir, safetensors.SingleName), 0o644)
		}, "not a regular file"},
		{"weights are /dev/zero", func(dir string) {
			os.WriteFile(filepath.Join(dir, ConfigName), cj, 0o644)
			os.Symlink("/dev/zero", filepath.Join(dir, safetensors.SingleName))
		}, "not a regular file"},
		{"a shard is a pipe", func(dir string) {
			os.WriteFile(filepath.Join(dir, ConfigName), cj, 0o644)
			safetensors.WriteDir(dir, tinyTensors(c), nil, safetensors.F32, 4000)
			shards, _ := filepath.Glob(filepath.Join(dir, "model-00001-of-*.safetensors"))
			shard := shards[0]
			os.Remove(shard)
			syscall.Mkfifo(shard, 0o644)
		}, "not a regular file"},
		{"weights cut short", func(dir string) {
			os.WriteFile(filepath.Join(dir, ConfigName), cj, 0o644)
			safetensors.WriteDir(dir, tinyTensors(c), nil, safetensors.F32, 0)
			p := filepath.Join(dir, safetensors.SingleName)
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-10)
		}, "truncated?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.make(dir)
			m, err := Open(dir, true)
			if err == nil {
				m.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}
