package sft

import (
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/agents/lmagent"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	_ "github.com/agenttrainer/agenttrainer/envs/text/arith"
	tfl "github.com/agenttrainer/agenttrainer/envs/text/frozenlake"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// shape is a from-scratch lm agent's [agent] keys.
type shape struct{ hidden, inter, layers, heads int64 }

var tinyShape = shape{16, 32, 1, 2}

// setup is a from-scratch lm agent with the character tokenizer and ChatML.
type setup struct{ *lmagent.Policy }

func charSetup(t testing.TB, sh shape, seed uint64) setup {
	t.Helper()
	dev := gpu.NewCPU(1)
	t.Cleanup(dev.Close)
	c := agents.Config{"model": "", "arch": "llama", "hidden_size": sh.hidden, "intermediate_size": sh.inter, "num_hidden_layers": sh.layers,
		"num_attention_heads": sh.heads, "num_key_value_heads": sh.heads, "vocab": "char", "chat_format": "chatml"}
	p, err := lmagent.Open(c, dev, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	return setup{p}
}

func (s setup) encoder() Encoder {
	return Encoder{Renderer: s.Renderer, Tokenizer: s.Tokenizer, EndOfTurn: EndOfTurn(s.Policy), MaxLength: 4096}
}

func msgs(kv ...string) []chat.Message {
	var out []chat.Message
	for i := 0; i < len(kv); i += 2 {
		out = append(out, chat.Message{Role: kv[i], Content: kv[i+1]})
	}
	return out
}

// show writes ids as text with the trained spans in ⟦ ⟧.
func show(tok Tokenizer, ex Example) string {
	var b strings.Builder
	in := false
	for i, id := range ex.IDs {
		if on := ex.Mask[i] == 1; on != in {
			b.WriteString(map[bool]string{true: "⟦", false: "⟧"}[on])
			in = on
		}
		b.WriteString(tok.DecodeWith([]int{int(id)}, tokenizer.DecodeOptions{}))
	}
	if in {
		b.WriteString("⟧")
	}
	return b.String()
}

// The mask is 1 exactly on the assistant turns' tokens and their
// end-of-turn token (golden), and a trailing user turn is dropped.
func TestEncodeMasksGolden(t *testing.T) {
	s := charSetup(t, tinyShape, 1)
	ex, err := s.encoder().Encode(msgs("system", "Play.", "user", "1+2=", "assistant", "3", "user", "and 4+5?", "assistant", "```9```", "user", "done"))
	if err != nil {
		t.Fatal(err)
	}
	got := show(s.Tokenizer, ex)
	path := filepath.Join("testdata", "masks.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("masks:\n%s\nwant:\n%s", got, want)
	}
	if n := ex.Trained(); n != len("3")+1+len("```9```")+1 {
		t.Fatalf("%d trained tokens", n)
	}
}

// scripted answers a workflow's model calls with given texts in order.
type scripted struct {
	tok     Tokenizer
	eot     int
	answers []string
}

func (g *scripted) Generate(_ context.Context, reqs []textrl.Request) ([]textrl.Generation, error) {
	var out []textrl.Generation
	for range reqs {
		ids := append(g.tok.Encode(g.answers[0], false), g.eot)
		g.answers = g.answers[1:]
		out = append(out, textrl.Generation{IDs: ids, LogProbs: make([]float32, len(ids)), Finish: textrl.FinishStop})
	}
	return out, nil
}

// A demonstration encodes to exactly the token row and mask the RL
// engine builds when the policy gives the same answers: SFT trains on the
// sequences RL samples.
func TestEncodeMatchesTheRLRows(t *testing.T) {
	s := charSetup(t, tinyShape, 1)
	for _, id := range []string{tfl.ID, "Arithmetic-v0"} {
		spec, _ := text.Lookup(id)
		rows, err := spec.Generate(text.GenerateOptions{N: 5, Seed: 3, Args: envs.Params{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			wo := textrl.MultiTurnOptions{Env: id, MaxTurns: 20}
			tr, err := textrl.Demonstrate(wo, row)
			if err != nil {
				t.Fatal(err)
			}
			ex, err := s.encoder().Encode(tr.Messages)
			if err != nil {
				t.Fatal(err)
			}
			var answers []string
			for _, m := range tr.Messages {
				if m.Role == "assistant" {
					answers = append(answers, m.Content)
				}
			}
			eng, err := textrl.NewEngine(textrl.Options{Tokenizer: s.Tokenizer, Renderer: s.Renderer,
				Generator:       &scripted{tok: s.Tokenizer, eot: EndOfTurn(s.Policy), answers: answers},
				MaxPromptLength: 8192, MaxResponseLength: 64, MaxConcurrent: 1})
			if err != nil {
				t.Fatal(err)
			}
			wf, err := textrl.MultiTurn(wo)
			if err != nil {
				t.Fatal(err)
			}
			groups, _, err := eng.Run(context.Background(), []envs.Params{row}, 1, wf)
			if err != nil {
				t.Fatal(err)
			}
			ep := groups[0][0]
			if !ep.Correct || len(ep.Rows) != 1 {
				t.Fatalf("%s: the scripted episode: correct %v, %d rows, %v", id, ep.Correct, len(ep.Rows), ep.Info)
			}
			r := ep.Rows[0]
			var ids []int32
			var mask []uint8
			for _, v := range append(slices.Clone(r.PromptIDs), r.ResponseIDs...) {
				ids = append(ids, int32(v))
			}
			mask = append(make([]uint8, len(r.PromptIDs)), r.Mask...)
			if !slices.Equal(ids, ex.IDs) || !slices.Equal(mask, ex.Mask) {
				t.Fatalf("%s %v: SFT encodes\n%s\nthe RL row is\n%s", id, row, show(s.Tokenizer, ex), show(s.Tokenizer, Example{IDs: ids, Mask: mask}))
			}
		}
	}
}

// Malformed transcripts: an error naming the line, or skipped and
// counted on request; never a panic.
func TestReadHostile(t *testing.T) {
	old := MaxLineBytes
	MaxLineBytes = 200
	t.Cleanup(func() { MaxLineBytes = old })
	good := `{"messages":[{"role":"user","content":"1+1="},{"role":"assistant","content":"2"}]}`
	for _, c := range []struct {
		name, line, want string
	}{
		{"bad json", `{"messages": [`, "not a JSON transcript"},
		{"not an object", `[1,2]`, "not a JSON transcript"},
		{"no messages", `{"turns": 3}`, `no "messages"`},
		{"unknown role", `{"messages":[{"role":"robot","content":"x"},{"role":"assistant","content":"y"}]}`, `unknown role "robot"`},
		{"no role", `{"messages":[{"content":"x"}]}`, "needs a \"role\""},
		{"content not text", `{"messages":[{"role":"assistant","content":[1]}]}`, "content must be a string"},
		{"no assistant", `{"messages":[{"role":"user","content":"x"}]}`, "no assistant turn"},
		{"over-long", `{"messages":[{"role":"assistant","content":"` + strings.Repeat("x", 300) + `"}]}`, "longer than 200 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := good + "\n\n" + c.line + "\n" + good + "\n"
			_, _, err := Read(strings.NewReader(in), false)
			if err == nil || !strings.Contains(err.Error(), "line 3: ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want line 3: …%s", err, c.want)
			}
			ts, bad, err := Read(strings.NewReader(in), true)
			if err != nil || len(ts) != 2 || len(bad) != 1 || bad[0].Line != 3 || ts[1].Line != 4 {
				t.Fatalf("skipping: %d transcripts, %v, %v", len(ts), bad, err)
			}
		})
	}
	if _, _, err := Read(strings.NewReader("\n\n"), true); err == nil {
		t.Fatal("an empty file was accepted")
	}
	// Encoding failures: a role the renderer refuses, over the length.
	s := charSetup(t, tinyShape, 1)
	e := s.encoder()
	e.MaxLength = 40
	ts := []Transcript{{Line: 1, Messages: msgs("user", "hi", "assistant", "yo")}, {Line: 2, Messages: msgs("user", strings.Repeat("z", 60), "assistant", "a")}}
	if _, _, err := e.EncodeAll(ts, false); err == nil || !strings.Contains(err.Error(), "line 2: ") || !strings.Contains(err.Error(), "over 40 tokens") {
		t.Fatalf("over-long: %v", err)
	}
	if exs, bad, err := e.EncodeAll(ts, true); err != nil || len(exs) != 1 || len(bad) != 1 {
		t.Fatalf("skipping over-long: %d %v %v", len(exs), bad, err)
	}
}

func additionExamples(t testing.TB, s setup, n int) []Example {
	t.Helper()
	var out []Example
	for i := range n {
		a, b := 10+7*i, 3+5*i
		ex, err := s.encoder().Encode(msgs("user", itoa(a)+"+"+itoa(b)+"=", "assistant", itoa(a+b)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ex)
	}
	return out
}

func itoa(v int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(v)) }

func fmtInt(v int) string {
	if v == 0 {
		return "0"
	}
	var d []byte
	for ; v > 0; v /= 10 {
		d = append([]byte{byte('0' + v%10)}, d...)
	}
	return string(d)
}

// Training on a tiny set lowers its loss well below the start.
func TestLossDecreases(t *testing.T) {
	s := charSetup(t, shape{32, 64, 1, 2}, 2)
	exs := additionExamples(t, s, 8)
	o := DefaultTrainOptions
	o.Epochs, o.BatchTokens, o.LearningRate, o.Seed = 200, 512, 1e-2, 1
	tr, err := NewTrainer(s.Model, o)
	if err != nil {
		t.Fatal(err)
	}
	before, n, err := tr.Loss(exs)
	if err != nil || n != s.encoder().countTrained(exs) {
		t.Fatalf("loss %v over %d tokens: %v", before, n, err)
	}
	res, err := Train(context.Background(), s.Model, exs, exs, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.HeldOutLoss < before/10) || res.Steps != 200 {
		t.Fatalf("loss %.3f → %.3f in %d steps", before, res.HeldOutLoss, res.Steps)
	}
}

func (Encoder) countTrained(exs []Example) int {
	n := 0
	for _, e := range exs {
		n += e.Trained() // every trained id follows another id
	}
	return n
}

// The gradient Backward leaves is that of the mean negative
// log-likelihood: central differences of Loss agree on the parameters
// with the largest gradients.
func TestGradientFiniteDifferences(t *testing.T) {
	s := charSetup(t, tinyShape, 3)
	exs := additionExamples(t, s, 3)
	o := DefaultTrainOptions
	o.BatchTokens = 256
	tr, err := NewTrainer(s.Model, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Gradient(exs); err != nil {
		t.Fatal(err)
	}
	m := s.Model
	n := m.NumParams()
	grads, params := make([]float32, n), make([]float32, n)
	m.Dev.Download(grads, m.Grads)
	m.Dev.Download(params, m.Params)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return -cmpAbs(grads[a], grads[b]) })
	const h = 1e-2
	for _, i := range idx[:12] {
		at := func(v float32) float64 {
			p := slices.Clone(params)
			p[i] = v
			m.Dev.Upload(m.Params, p)
			l, _, err := tr.Loss(exs)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		fd := (at(params[i]+h) - at(params[i]-h)) / (2 * h)
		if g := float64(grads[i]); math.Abs(fd-g) > 0.03*math.Abs(g)+2e-4 {
			t.Errorf("parameter %d: backward %.5f, finite differences %.5f", i, g, fd)
		}
	}
	m.Dev.Upload(m.Params, params)
}

func cmpAbs(a, b float32) int {
	x, y := math.Abs(float64(a)), math.Abs(float64(b))
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// Warmup rises linearly, the cosine ends at the floor.
func TestSchedule(t *testing.T) {
	o := TrainOptions{LearningRate: 1, WarmupRatio: 0.1, MinLRRatio: 0.1}
	steps := 100
	if got := o.LR(0, steps); math.Abs(got-1.0/11) > 1e-12 {
		t.Fatalf("first warmup step %v", got)
	}
	if got := o.LR(10, steps); got != 1 {
		t.Fatalf("peak %v", got)
	}
	if got := o.LR(99, steps); math.Abs(got-0.1) > 1e-12 {
		t.Fatalf("last step %v", got)
	}
	for k := 11; k < steps; k++ {
		if o.LR(k, steps) > o.LR(k-1, steps) {
			t.Fatalf("the cosine rises at %d", k)
		}
	}
}

// Batches hold every example once and stay within the token budget.
func TestBatches(t *testing.T) {
	var exs []Example
	for i := range 100 {
		exs = append(exs, Example{Line: i, IDs: make([]int32, 1+i%37), Mask: make([]uint8, 1+i%37)})
	}
	seen := map[int]bool{}
	for _, b := range epochBatches(exs, 128, newRand(1)) {
		longest := 0
		for _, e := range b {
			longest = max(longest, len(e.IDs))
			if seen[e.Line] {
				t.Fatalf("example %d twice", e.Line)
			}
			seen[e.Line] = true
		}
		if longest*len(b) > 128 {
			t.Fatalf("a batch of %d×%d", len(b), longest)
		}
	}
	if len(seen) != 100 {
		t.Fatalf("%d of 100 examples batched", len(seen))
	}
}

// The time-based schedule warms up, peaks and ends at the floor.
func TestScheduleByFraction(t *testing.T) {
	o := TrainOptions{LearningRate: 1, WarmupRatio: 0.1, MinLRRatio: 0.1}
	for _, c := range []struct{ frac, want float64 }{{0, 0}, {0.05, 0.5}, {0.1, 1}, {0.55, 0.55}, {1, 0.1}, {2, 0.1}} {
		if got := o.LRAt(c.frac); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("LRAt(%v) = %v, want %v", c.frac, got, c.want)
		}
	}
}
