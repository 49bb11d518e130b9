package lm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/cli"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// stdinMu serialises the tests that swap os.Stdin.
var stdinMu sync.Mutex

// run runs the real command line with stdin as standard input.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	stdinMu.Lock()
	defer stdinMu.Unlock()
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(stdin); err != nil {
		t.Fatal(err)
	}
	f.Seek(0, 0)
	defer f.Close()
	saved := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = saved }()
	var out, errb bytes.Buffer
	code = cli.Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// models are made once: a tiny one per architecture, and one with a short
// context.
var (
	modelsOnce sync.Once
	modelsDir  string
	modelsErr  string
)

func models(t *testing.T) string {
	t.Helper()
	modelsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lmcli-test-")
		if err != nil {
			modelsErr = err.Error()
			return
		}
		modelsDir = dir
		for _, m := range [][]string{
			{"--arch", "qwen3", "--out", filepath.Join(dir, "qwen3")},
			{"--arch", "qwen2", "--out", filepath.Join(dir, "qwen2"), "--tied=false", "--dtype", "bf16"},
			{"--arch", "llama", "--out", filepath.Join(dir, "short"), "--max-positions", "16"},
		} {
			args := append([]string{"lm", "init", "--hidden", "32", "--layers", "2", "--heads", "4", "--seed", "7"}, m...)
			var out, errb bytes.Buffer
			if code := cli.Main(context.Background(), args, &out, &errb); code != 0 {
				modelsErr = errb.String()
				return
			}
		}
	})
	if modelsErr != "" {
		t.Fatalf("lm init: %s", modelsErr)
	}
	return modelsDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if modelsDir != "" {
		os.RemoveAll(modelsDir)
	}
	os.Exit(code)
}

// TestInit: a model per architecture, in the Hugging Face layout, and the
// mistakes refused with exit 2 naming what is wrong.
func TestInit(t *testing.T) {
	dir := models(t)
	tmp := t.TempDir()
	full := filepath.Join(tmp, "full")
	os.Mkdir(full, 0o755)
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // in stdout
		stderr string // in stderr
		config map[string]any
	}{
		{"llama", []string{"--arch", "llama", "--hidden", "48", "--layers", "3", "--heads", "6", "--kv-heads", "2", "--intermediate", "96", "--out", filepath.Join(tmp, "llama")}, 0,
			"llama,", "", map[string]any{"model_type": "llama", "hidden_size": 48.0, "num_hidden_layers": 3.0, "num_attention_heads": 6.0, "num_key_value_heads": 2.0, "intermediate_size": 96.0, "vocab_size": 101.0}},
		{"qwen2 bias", []string{"--arch", "qwen2", "--hidden", "32", "--layers", "1", "--heads", "2", "--out", filepath.Join(tmp, "q2")}, 0,
			"qwen2,", "", map[string]any{"model_type": "qwen2", "num_key_value_heads": 1.0, "tie_word_embeddings": true}},
		{"qwen3 head dim", []string{"--arch", "qwen3", "--hidden", "32", "--layers", "1", "--heads", "2", "--head-dim", "8", "--out", filepath.Join(tmp, "q3")}, 0,
			"qwen3,", "", map[string]any{"model_type": "qwen3", "head_dim": 8.0}},
		{"vocab from a model", []string{"--arch", "llama", "--hidden", "32", "--layers", "1", "--heads", "2", "--vocab", filepath.Join(dir, "qwen3"), "--out", filepath.Join(tmp, "copied")}, 0,
			"101 tokens from", "", map[string]any{"vocab_size": 101.0}},
		{"unknown arch", []string{"--arch", "gpt2", "--out", filepath.Join(tmp, "a")}, 2, "", `unknown architecture "gpt2"`, nil},
		{"no arch", []string{"--out", filepath.Join(tmp, "a")}, 2, "", "needs --arch", nil},
		{"no out", []string{"--arch", "llama"}, 2, "", "needs --out", nil},
		{"kv heads", []string{"--arch", "llama", "--heads", "4", "--kv-heads", "3", "--out", filepath.Join(tmp, "a")}, 2, "", "--kv-heads 3 must divide --heads 4", nil},
		{"hidden not divisible", []string{"--arch", "llama", "--hidden", "30", "--heads", "4", "--out", filepath.Join(tmp, "a")}, 2, "", "not a multiple of --heads", nil},
		{"zero layers", []string{"--arch", "llama", "--layers", "0", "--out", filepath.Join(tmp, "a")}, 2, "", "--layers must be at least 1", nil},
		{"dtype", []string{"--arch", "llama", "--dtype", "f8", "--out", filepath.Join(tmp, "a")}, 2, "", "choose f32 or bf16", nil},
		{"out not empty", []string{"--arch", "llama", "--out", full}, 2, "", "exists and is not empty", nil},
		{"vocab not a model", []string{"--arch", "llama", "--vocab", tmp, "--out", filepath.Join(tmp, "a")}, 2, "", "tokenizer.json", nil},
		{"too big", []string{"--arch", "llama", "--hidden", "65536", "--layers", "512", "--heads", "64", "--out", filepath.Join(tmp, "a")}, 2, "", "more than the", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", append([]string{"lm", "init"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout %q (want %q in it)\nstderr %q (want %q in it)", code, tc.code, stdout, tc.stdout, stderr, tc.stderr)
			}
			if tc.code != 0 {
				if _, err := os.Stat(filepath.Join(tmp, "a")); err == nil {
					t.Errorf("a refused init left %s behind", filepath.Join(tmp, "a"))
				}
				return
			}
			out := tc.args[len(tc.args)-1]
			b, err := os.ReadFile(filepath.Join(out, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.config {
				if cfg[k] != v {
					t.Errorf("config.json %s = %v, want %v", k, cfg[k], v)
				}
			}
			for _, f := range []string{"model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
				if _, err := os.Stat(filepath.Join(out, f)); err != nil {
					t.Errorf("no %s: %v", f, err)
				}
			}
			if _, err := lm.Load(gpu.NewCPU(1), out, lm.LoadOptions{Inference: true}); err != nil {
				t.Errorf("the written model does not load: %v", err)
			}
		})
	}
	temps, _ := filepath.Glob(filepath.Join(tmp, ".*tmp-*"))
	if len(temps) > 0 {
		t.Errorf("temporary directories left: %v", temps)
	}
}

// TestTokenize: ids as the tokenizer gives them, chats rendered by the
// model's template, and bad lines refused naming the line.
func TestTokenize(t *testing.T) {
	dir := models(t)
	model := filepath.Join(dir, "qwen3")
	tok, err := tokenizer.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	raises := t.TempDir()
	copyModel(t, model, raises)
	setTemplate(t, raises, `{{ raise_exception('only user turns, please') }}`)
	badSyntax := t.TempDir()
	copyModel(t, model, badSyntax)
	setTemplate(t, badSyntax, `{% for m in messages %}{{ m.content }`)
	vars := t.TempDir()
	copyModel(t, model, vars)
	setTemplate(t, vars, `{% for m in messages %}{{ m.content }}{% endfor %}{% if enable_thinking is defined and not enable_thinking %}<no-think>{% endif %}`)

	type line struct {
		IDs  []int  `json:"ids"`
		Text string `json:"text"`
	}
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		want   []line // the lines on stdout
		stderr string
	}{
		{"strings", []string{"--model", model}, "\"Hello world\"\n\n\"<|im_end|>x\"\n", 0,
			[]line{{tok.Encode("Hello world", true), "Hello world"}, {tok.Encode("<|im_end|>x", true), "<|im_end|>x"}}, ""},
		{"chat", []string{"--model", model, "--chat"}, `[{"role":"user","content":"hi"}]`, 0,
			[]line{{nil, "<|im_start|>user\nhi<|im_end|>\n"}}, ""},
		{"chat generation prompt", []string{"--model", model, "--chat", "--generation-prompt"}, `[{"role":"user","content":"hi"}]`, 0,
			[]line{{nil, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"}}, ""},
		{"chatml format", []string{"--model", vars, "--chat", "--format", "chatml"}, `[{"role":"user","content":"hi"}]`, 0,
			[]line{{nil, "<|im_start|>user\nhi<|im_end|>\n"}}, ""},
		{"var", []string{"--model", vars, "--chat", "--var", "enable_thinking=false"}, `[{"role":"user","content":"hi"}]`, 0,
			[]line{{nil, "hi<no-think>"}}, ""},
		{"not a model", []string{"--model", t.TempDir()}, `"x"`, 2, nil, "is not a model directory"},
		{"no model", []string{"--model", filepath.Join(dir, "nope")}, `"x"`, 2, nil, "no such file"},
		{"not JSON", []string{"--model", model}, "\"ok\"\nhello\n", 2, []line{{tok.Encode("ok", true), "ok"}}, "line 2 of the input: want a JSON string"},
		{"chat not messages", []string{"--model", model, "--chat"}, `"x"`, 2, nil, `line 1 of the input: want an array of {"role", "content"} messages`},
		{"template raises", []string{"--model", raises, "--chat"}, `[{"role":"user","content":"hi"}]`, 2, nil, "only user turns, please"},
		{"template syntax", []string{"--model", badSyntax, "--chat"}, `[{"role":"user","content":"hi"}]`, 2, nil, "tokenizer_config.json"},
		{"var without chat", []string{"--model", model, "--var", "a=b"}, "", 2, nil, "--chat only"},
		{"format", []string{"--model", model, "--chat", "--format", "alpaca"}, "", 2, nil, "choose template, chatml or llama3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.stdin, append([]string{"lm", "tokenize"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q in it)", code, tc.code, stderr, tc.stderr)
			}
			got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if stdout == "" {
				got = nil
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d lines out, want %d: %q", len(got), len(tc.want), stdout)
			}
			for i, s := range got {
				var l line
				if err := json.Unmarshal([]byte(s), &l); err != nil {
					t.Fatalf("line %d %q: %v", i+1, s, err)
				}
				want := tc.want[i]
				if want.IDs == nil { // a chat: its text tokenized as it stands
					want.IDs = tok.Encode(want.Text, false)
				}
				if l.Text != want.Text || !equalInts(l.IDs, want.IDs) {
					t.Errorf("line %d = %+v, want %+v", i+1, l, want)
				}
			}
		})
	}
}

// TestScore: the log-probs of a completion sampled through the KV cache
// equal the teacher-forced ones of score; texts and ids score alike;
// lines batched together score as alone; bad lines are refused.
func TestScore(t *testing.T) {
	dir := models(t)
	model := filepath.Join(dir, "qwen2")
	dev := gpu.NewCPU(1)
	m, err := lm.Load(dev, model, lm.LoadOptions{Inference: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.NewGenerator(2, 64)
	if err != nil {
		t.Fatal(err)
	}
	prompts := [][]int32{{5, 9, 30, 41}, {60, 7}}
	res, err := g.Generate(prompts, lm.SampleOptions{MaxNewTokens: 20, Temperature: 1, Seeds: []uint64{3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for i, p := range prompts {
		b, _ := json.Marshal(map[string]any{"prompt_ids": p, "completion_ids": res[i].Tokens})
		in.Write(append(b, '\n'))
	}
	code, stdout, stderr := run(t, in.String(), "lm", "score", "--model", model, "--threads", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := scoreLines(t, stdout)
	if len(got) != 2 {
		t.Fatalf("%d lines out, want 2: %q", len(got), stdout)
	}
	for i := range prompts {
		if len(got[i]) != len(res[i].LogProbs) {
			t.Fatalf("line %d: %d log-probs, want %d", i+1, len(got[i]), len(res[i].LogProbs))
		}
		for k, lp := range got[i] {
			if d := math.Abs(lp - float64(res[i].LogProbs[k])); d > 1e-4 || lp > 0 {
				t.Errorf("line %d token %d: score %v, generation %v", i+1, k, lp, res[i].LogProbs[k])
			}
		}
	}

	// One line at a time (a batch budget too small for two) scores alike.
	for i, l := range strings.SplitAfter(in.String(), "\n")[:2] {
		code, stdout, stderr := run(t, l, "lm", "score", "--model", model, "--batch-tokens", "1")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if one := scoreLines(t, stdout); len(one) != 1 || !close(one[0], got[i], 1e-5) {
			t.Errorf("line %d alone scores %v, batched %v", i+1, one, got[i])
		}
	}

	// Texts are the ids their tokenizer gives.
	tok, _ := tokenizer.Load(model)
	p, c := tok.Encode("Hello", true), tok.Encode(" there!", false)
	b, _ := json.Marshal(map[string]any{"prompt_ids": p, "completion_ids": c})
	code, stdout, stderr = run(t, `{"prompt": "Hello", "completion": " there!"}`+"\n"+string(b)+"\n", "lm", "score", "--model", model)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if two := scoreLines(t, stdout); len(two) != 2 || len(two[0]) != len(c) || !close(two[0], two[1], 1e-5) {
		t.Errorf("texts and ids score %v", two)
	}

	short := filepath.Join(dir, "short")
	for _, tc := range []struct {
		name, model, stdin string
		lines              int // answered before the bad line
		stderr             string
	}{
		{"id outside vocabulary", model, `{"prompt_ids": [1, 2], "completion_ids": [3, 101]}`, 0, "completion_ids[1] = 101 is outside the vocabulary of 101 tokens"},
		{"negative id", model, `{"prompt_ids": [-1], "completion_ids": [3]}`, 0, "prompt_ids[0] = -1 is outside"},
		{"over the context", short, `{"prompt": "a prompt longer than", "completion": " sixteen tokens"}`, 0, "longer than the model's context of 16"},
		{"both", model, `{"prompt": "a", "completion": "b", "prompt_ids": [1], "completion_ids": [2]}`, 0, "not both"},
		{"half", model, `{"prompt": "a"}`, 0, `"prompt" and "completion" are both needed`},
		{"empty prompt", model, `{"prompt_ids": [], "completion_ids": [2]}`, 0, "the prompt is empty"},
		{"unknown field", model, `{"prompt": "a", "completion": "b", "answer": "c"}`, 0, `unknown field "answer"`},
		{"second line", model, `{"prompt": "a", "completion": "b"}` + "\n[1, 2]\n", 1, "line 2 of the input"},
		{"not a model", t.TempDir(), `{"prompt": "a", "completion": "b"}`, 0, "is not a model directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.stdin, "lm", "score", "--model", tc.model)
			if code != 2 || !strings.Contains(stderr, tc.stderr) || len(scoreLines(t, stdout)) != tc.lines {
				t.Errorf("exit %d (want 2), stdout %q (want %d lines), stderr %q (want %q in it)", code, stdout, tc.lines, stderr, tc.stderr)
			}
		})
	}
}

// TestGenerate: a seed gives one completion, streamed to stdout; greedy
// decoding is the likeliest tokens; bad requests exit 2.
func TestGenerate(t *testing.T) {
	dir := models(t)
	model := filepath.Join(dir, "qwen3")
	gen := func(args ...string) (int, string, string) {
		return run(t, "", append([]string{"lm", "generate", "--model", model}, args...)...)
	}
	code, a, stderr := gen("--prompt", "Once upon a time", "--seed", "11", "--max-tokens", "30")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "16 prompt tokens") || !strings.Contains(stderr, "seed 11") {
		t.Errorf("stderr %q: want the prompt's 16 tokens and seed 11", stderr)
	}
	if _, b, _ := gen("--prompt", "Once upon a time", "--seed", "11", "--max-tokens", "30"); a != b {
		t.Errorf("seed 11 twice: %q then %q", a, b)
	}

	// The text is the tokens the library samples for that seed, decoded
	// without the end-of-sequence token.
	tok, _ := tokenizer.Load(model)
	m, err := lm.Load(gpu.NewCPU(1), model, lm.LoadOptions{Inference: true})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.NewGenerator(1, 64)
	var prompt []int32
	for _, id := range tok.Encode("Once upon a time", true) {
		prompt = append(prompt, int32(id))
	}
	var stops []int32
	for _, id := range m.Config.EOS {
		stops = append(stops, int32(id))
	}
	res, err := g.Generate([][]int32{prompt}, lm.SampleOptions{MaxNewTokens: 30, Temperature: 1, Seeds: []uint64{11}, StopIDs: stops})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, id := range res[0].Tokens {
		if !containsInt32(stops, id) {
			ids = append(ids, int(id))
		}
	}
	if want := tok.Decode(ids); a != want {
		t.Errorf("generate printed %q, the library's sample decodes to %q", a, want)
	}

	// --stop ends the text before the stop string.
	if len(a) > 3 {
		stop := a[2:4]
		code, s, _ := gen("--prompt", "Once upon a time", "--seed", "11", "--max-tokens", "30", "--stop", stop)
		if code != 0 || s != a[:strings.Index(a, stop)] {
			t.Errorf("--stop %q printed %q, want %q", stop, s, a[:strings.Index(a, stop)])
		}
	}

	code, c, stderr := gen("--prompt", "hi", "--chat", "--temperature", "0", "--max-tokens", "5")
	if code != 0 || !strings.Contains(stderr, "generated") {
		t.Fatalf("--chat: exit %d: %s", code, stderr)
	}
	if _, d, _ := gen("--prompt", "hi", "--chat", "--temperature", "0", "--max-tokens", "5", "--seed", "99"); c != d {
		t.Errorf("greedy decoding depends on the seed: %q, %q", c, d)
	}

	short := filepath.Join(dir, "short")
	raises := t.TempDir()
	copyModel(t, model, raises)
	setTemplate(t, raises, `{{ raise_exception('no chats here') }}`)
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"over the context", []string{"--model", short, "--prompt", "a prompt longer than sixteen tokens"}, "the prompt is 35 tokens, and the model's context is 16"},
		{"not a model", []string{"--model", t.TempDir(), "--prompt", "x"}, "is not a model directory"},
		{"template raises", []string{"--model", raises, "--prompt", "x", "--chat"}, "no chats here"},
		{"no prompt", []string{"--model", model}, "needs --prompt"},
		{"no model", []string{"--prompt", "x"}, "needs --model"},
		{"temperature", []string{"--model", model, "--prompt", "x", "--temperature", "-1"}, "--temperature must be 0"},
		{"top-p", []string{"--model", model, "--prompt", "x", "--top-p", "0"}, "--top-p must lie in (0, 1]"},
		{"max tokens", []string{"--model", model, "--prompt", "x", "--max-tokens", "0"}, "--max-tokens must be at least 1"},
		{"system without chat", []string{"--model", model, "--prompt", "x", "--system", "be brief"}, "--chat only"},
		{"device", []string{"--model", model, "--prompt", "x", "--device", "tpu"}, "tpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", append([]string{"lm", "generate"}, tc.args...)...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d (want 2), stdout %q, stderr %q (want %q in it)", code, stdout, stderr, tc.stderr)
			}
		})
	}
}

// TestHelp: `help lm` and `lm --help` print lm's usage; a command lm does
// not have is a usage error.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"help", "lm"}, 0, "agenttrainer lm tokenize --model DIR", ""},
		{[]string{"lm", "--help"}, 0, "agenttrainer lm score --model DIR", ""},
		{[]string{"lm", "generate", "--help"}, 0, "--top-p", ""},
		{[]string{"lm"}, 2, "", "lm needs a command"},
		{[]string{"lm", "train"}, 2, "", `lm has no command "train"`},
	} {
		code, stdout, stderr := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q", tc.args, code, tc.code, stdout, stderr)
		}
	}
}

func scoreLines(t *testing.T, stdout string) [][]float64 {
	t.Helper()
	var out [][]float64
	for _, s := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if s == "" {
			continue
		}
		var l struct {
			LogProbs []float64 `json:"logprobs"`
		}
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, l.LogProbs)
	}
	return out
}

func close(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func containsInt32(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// copyModel copies a model directory's files.
func copyModel(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// setTemplate replaces a model directory's chat template.
func setTemplate(t *testing.T, dir, tmpl string) {
	t.Helper()
	path := filepath.Join(dir, "tokenizer_config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["chat_template"] = tmpl
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
