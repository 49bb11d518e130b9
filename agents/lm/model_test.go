package lm

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// realRow returns row r's real tokens.
func realRow(b Batch, r int) []int32 {
	var out []int32
	for t := 0; t < b.Seq; t++ {
		if b.real(r*b.Seq + t) {
			out = append(out, b.IDs[r*b.Seq+t])
		}
	}
	return out
}

// scoreAlone scores every next token of one unpadded sequence.
func scoreAlone(t *testing.T, m *Model, ids []int32, temperature float64) []float32 {
	t.Helper()
	b := Batch{Rows: 1, Seq: len(ids), IDs: ids}
	b.NextTokenTargets()
	p, err := m.NewPass(len(ids), len(ids))
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Forward(b, ForwardOptions{Temperature: temperature})
	if err != nil {
		t.Fatal(err)
	}
	return s.LogProbs
}

// Padding on either side changes no real token's log-probability: each
// row of the padded batch scores as its real tokens alone.
func TestPaddingChangesNothing(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	b := testBatch(t)
	for _, name := range parityModels {
		m := loadTest(t, dev, name)
		p, _ := m.NewPass(b.Rows*b.Seq, b.Rows*b.Seq)
		s, err := p.Forward(b, ForwardOptions{})
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for r := 0; r < b.Rows; r++ {
			alone := scoreAlone(t, m, realRow(b, r), 1)
			for i, want := range alone {
				if d := math.Abs(float64(s.LogProbs[k+i] - want)); d > 1e-5 {
					t.Fatalf("%s row %d token %d: %v in the padded batch, %v alone", name, r, i, s.LogProbs[k+i], want)
				}
			}
			k += len(alone)
		}
	}
}

// The KV-cache path gives the full forward's log-probabilities: a prompt
// in chunks, then token after token.
func TestCacheMatchesFullForward(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	defer func(c int) { prefillChunk = c }(prefillChunk)
	prefillChunk = 7 // several chunks per prompt
	b := testBatch(t)
	for _, name := range parityModels {
		m := loadTest(t, dev, name)
		ids := realRow(b, 3)
		want := scoreAlone(t, m, ids, 1)
		g, err := m.NewGenerator(2, 100)
		if err != nil {
			t.Fatal(err)
		}
		const prompt = 20
		var got []float32
		v := m.Config.VocabSize
		logp := func(row []float32, tok int32) float32 {
			lse, _ := rowLSE(row)
			return float32(float64(row[tok]) - lse)
		}
		// The prompt through the generator's own admission path, slot 1.
		for c0 := 0; c0 < prompt; c0 += prefillChunk {
			c1 := min(c0+prefillChunk, prompt)
			var slot, pos []int32
			for i := c0; i < c1; i++ {
				slot, pos = append(slot, 1), append(pos, int32(i))
			}
			want := []int32{}
			if c1 == prompt {
				want = []int32{int32(c1 - c0 - 1)}
			}
			logits := g.step(ids[c0:c1], slot, pos, want)
			if c1 == prompt {
				got = append(got, logp(logits[:v], ids[prompt]))
			}
		}
		for i := prompt; i < len(ids)-1; i++ {
			logits := g.step(ids[i:i+1], []int32{1}, []int32{int32(i)}, []int32{0})
			got = append(got, logp(logits[:v], ids[i+1]))
		}
		var worst float64
		for i, lp := range got {
			worst = math.Max(worst, math.Abs(float64(lp-want[prompt-1+i])))
		}
		t.Logf("%s: %d tokens through the cache, max |Δ logp| %.2g", name, len(got), worst)
		if worst > 2e-5 {
			t.Fatalf("%s: the cache path differs from the full forward by %.3g", name, worst)
		}
	}
}

func rowLSE(row []float32) (float64, int) {
	mx, arg := row[0], 0
	for j, x := range row {
		if x > mx {
			mx, arg = x, j
		}
	}
	var s float64
	for _, x := range row {
		s += math.Exp(float64(x - mx))
	}
	return float64(mx) + math.Log(s), arg
}

func testPrompts(r *rand.Rand, v int, lens ...int) [][]int32 {
	var out [][]int32
	for _, n := range lens {
		p := make([]int32, n)
		for i := range p {
			p[i] = int32(r.IntN(v))
		}
		out = append(out, p)
	}
	return out
}

// A completion depends only on its prompt, seed and the model: the same
// whether generated alone or beside others, and again next time; each
// returned log-probability is the raw model's, as a full forward scores it.
func TestGenerateIsDeterministicAndScoresRaw(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	m := loadTest(t, dev, "qwen2")
	r := rand.New(rand.NewPCG(1, 2))
	prompts := testPrompts(r, 128, 5, 17, 1, 30, 9)
	opt := SampleOptions{MaxNewTokens: 24, Temperature: 0.9, TopP: 0.95, TopK: 50, Seeds: []uint64{7, 8, 9, 10, 11}}
	gen := func(slots int, ps [][]int32, o SampleOptions) []Completion {
		g, err := m.NewGenerator(slots, 64)
		if err != nil {
			t.Fatal(err)
		}
		out, err := g.Generate(ps, o)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	batched := gen(3, prompts, opt) // five prompts through three slots
	again := gen(3, prompts, opt)
	for i, p := range prompts {
		o := opt
		o.Seeds = []uint64{opt.Seeds[i]}
		alone := gen(1, [][]int32{p}, o)[0]
		for _, other := range []Completion{batched[i], again[i]} {
			if !slices.Equal(alone.Tokens, other.Tokens) || !slices.Equal(alone.LogProbs, other.LogProbs) || alone.Finish != other.Finish {
				t.Fatalf("prompt %d: %v (%v) alone, %v (%v) batched", i, alone.Tokens, alone.Finish, other.Tokens, other.Finish)
			}
		}
		if len(alone.Tokens) != opt.MaxNewTokens || alone.Finish != FinishLength {
			t.Fatalf("prompt %d: %d tokens, finish %q", i, len(alone.Tokens), alone.Finish)
		}
		full := append(slices.Clone(p), alone.Tokens...)
		scored := scoreAlone(t, m, full, 1)[len(p)-1:]
		for j, lp := range alone.LogProbs {
			if d := math.Abs(float64(lp - scored[j])); d > 2e-5 {
				t.Fatalf("prompt %d token %d: log-prob %v at sampling, %v scored", i, j, lp, scored[j])
			}
		}
	}
	o := opt
	o.Seeds = []uint64{1, 2, 3, 4, 5}
	other := gen(3, prompts, o)
	same := 0
	for i := range prompts {
		if slices.Equal(other[i].Tokens, batched[i].Tokens) {
			same++
		}
	}
	if same == len(prompts) {
		t.Error("other seeds gave the same completions")
	}
}

func TestGenerateStopsAndStreams(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	m := loadTest(t, dev, "llama")
	r := rand.New(rand.NewPCG(3, 4))
	prompts := testPrompts(r, 128, 6, 6)
	g, _ := m.NewGenerator(2, 40)
	greedy, err := g.Generate(prompts, SampleOptions{MaxNewTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	// A stop id: the first completion's fourth token.
	stop := greedy[0].Tokens[3]
	first := slices.Index(greedy[0].Tokens, stop)
	var streamed []int32
	out, _ := g.Generate(prompts[:1], SampleOptions{MaxNewTokens: 10, StopIDs: []int32{stop}, OnToken: func(seq int, id int32, lp float32) {
		streamed = append(streamed, id)
	}})
	if out[0].Finish != FinishStop || !slices.Equal(out[0].Tokens, greedy[0].Tokens[:first+1]) || !slices.Equal(streamed, out[0].Tokens) {
		t.Errorf("stop id %d: %v (%s), streamed %v; greedy %v", stop, out[0].Tokens, out[0].Finish, streamed, greedy[0].Tokens)
	}
	// The Stop callback (what a stop string becomes).
	out, _ = g.Generate(prompts, SampleOptions{MaxNewTokens: 10, Stop: func(seq int, toks []int32) bool { return seq == 1 && len(toks) == 2 }})
	if len(out[0].Tokens) != 10 || out[0].Finish != FinishLength || len(out[1].Tokens) != 2 || out[1].Finish != FinishStop {
		t.Errorf("stop callback: %d tokens (%s), %d tokens (%s)", len(out[0].Tokens), out[0].Finish, len(out[1].Tokens), out[1].Finish)
	}
	// The end of the context.
	out, _ = g.Generate([][]int32{testPrompts(r, 128, 35)[0]}, SampleOptions{MaxNewTokens: 10})
	if len(out[0].Tokens) != 5 || out[0].Finish != FinishLength {
		t.Errorf("context end: %d tokens (%s), want 5 (length)", len(out[0].Tokens), out[0].Finish)
	}
}

// Draws follow softmax(z/T), cut by top-k and top-p as transformers cuts.
func TestSamplingFollowsTheDistribution(t *testing.T) {
	z := []float32{2, 1.5, 1, 0.5, 0, -1, -3, 1.4}
	for _, opt := range []SampleOptions{{Temperature: 1}, {Temperature: 0.5}, {Temperature: 2, TopK: 3}, {Temperature: 1, TopP: 0.7}, {Temperature: 1.5, TopK: 5, TopP: 0.8}} {
		// The expected distribution, by definition.
		w := make([]float64, len(z))
		order := make([]int, len(z))
		for j := range z {
			w[j], order[j] = math.Exp(float64(z[j])/opt.Temperature), j
		}
		slices.SortFunc(order, func(a, b int) int { return int(math.Copysign(1, w[b]-w[a])) })
		keep := len(z)
		if opt.TopK > 0 {
			keep = opt.TopK
		}
		if opt.TopP > 0 {
			var total, cum float64
			for _, j := range order[:keep] {
				total += w[j]
			}
			for i, j := range order[:keep] {
				cum += w[j]
				if cum >= opt.TopP*total {
					keep = i + 1
					break
				}
			}
		}
		var total float64
		for _, j := range order[:keep] {
			total += w[j]
		}
		want := make([]float64, len(z))
		for _, j := range order[:keep] {
			want[j] = w[j] / total
		}
		const draws = 40000
		counts := make([]float64, len(z))
		r := rand.New(rand.NewPCG(5, 6))
		sc := &sampleScratch{}
		lse, _ := rowLSE(z)
		for i := 0; i < draws; i++ {
			tok, lp := sampleRow(z, &opt, r, sc)
			counts[tok]++
			if math.Abs(float64(lp)-(float64(z[tok])-lse)) > 1e-6 {
				t.Fatalf("log-prob %v of token %d, want the raw %v", lp, tok, float64(z[tok])-lse)
			}
		}
		for j := range z {
			got := counts[j] / draws
			sd := math.Sqrt(want[j]*(1-want[j])/draws) + 1e-9
			if math.Abs(got-want[j]) > 5*sd {
				t.Errorf("%+v: token %d drawn %.4f of the time, want %.4f", opt, j, got, want[j])
			}
		}
	}
}

// Training on a repeating pattern lowers its loss: the gradients point
// the right way end to end.
func TestTrainingLearnsAPattern(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	for _, arch := range []hf.Arch{hf.Qwen2, hf.Qwen3, hf.Llama} {
		cfg, err := hf.NewConfig(arch, 32, 64, 128, 2, 4, 2, 0, arch != hf.Qwen3)
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(dev, cfg, 0)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(1)
		const rows, seq = 4, 24
		ids := make([]int32, rows*seq)
		for i := range ids {
			ids[i] = int32((i%seq)*5%17 + (i/seq)%3)
		}
		b := Batch{Rows: rows, Seq: seq, IDs: ids}
		b.NextTokenTargets()
		p, _ := m.NewPass(rows*seq, rows*seq)
		mom, vel := dev.Alloc(1, m.NumParams()), dev.Alloc(1, m.NumParams())
		var first, last float64
		for step := 1; step <= 60; step++ {
			s, err := p.Forward(b, ForwardOptions{})
			if err != nil {
				t.Fatal(err)
			}
			loss, grad := 0.0, make([]float32, len(s.LogProbs))
			for i, lp := range s.LogProbs {
				loss -= float64(lp) / float64(len(s.LogProbs))
				grad[i] = -1 / float32(len(s.LogProbs))
			}
			if step == 1 {
				first = loss
			}
			last = loss
			m.ZeroGrad()
			if err := p.Backward(grad, nil); err != nil {
				t.Fatal(err)
			}
			dev.Adam(m.Params, m.Grads, mom, vel, gpu.AdamArgs{LR: 3e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: step})
		}
		t.Logf("%s: loss %.3f → %.3f", arch, first, last)
		if !(last < 0.3*first) {
			t.Errorf("%s: loss %.3f → %.3f after 60 steps", arch, first, last)
		}
	}
}

func TestPassRefusesBadBatches(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	m := loadTest(t, dev, "qwen3")
	p, _ := m.NewPass(16, 6)
	ok := func() Batch {
		return Batch{Rows: 2, Seq: 4, IDs: []int32{1, 2, 3, 4, 5, 6, 7, 8}, Mask: []int32{0, 1, 1, 1, 1, 1, 1, 0}, Targets: []int32{-1, 3, 4, -1, 6, 7, -1, -1}}
	}
	for _, tt := range []struct {
		edit func(*Batch)
		want string
	}{
		{func(b *Batch) { b.IDs[2] = 128 }, "token id 128 is outside the vocabulary of 128"},
		{func(b *Batch) { b.Mask[1] = 2 }, "neither 0 nor 1"},
		{func(b *Batch) { b.Targets[0] = 5 }, "padding position cannot be scored"},
		{func(b *Batch) { b.Targets[1] = -2 }, "−1 means none"},
		{func(b *Batch) { b.Targets[1] = 1000 }, "target 1000 is outside"},
		{func(b *Batch) { b.Rows, b.Seq = 4, 5 }, "larger than the 16"},
		{func(b *Batch) { b.IDs = b.IDs[:7] }, "needs 8 ids"},
		{func(b *Batch) { b.Targets = []int32{1, 1, 1, 1, 1, 1, 1, 1}; b.Mask = nil }, "scores 8 positions"},
	} {
		b := ok()
		if _, err := p.Forward(b, ForwardOptions{}); err != nil {
			t.Fatalf("the good batch: %v", err)
		}
		tt.edit(&b)
		_, err := p.Forward(b, ForwardOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
	if err := p.Backward([]float32{1}, nil); err == nil || !strings.Contains(err.Error(), "one gradient per scored position") {
		t.Errorf("backward with the wrong count: %v", err)
	}
}

func TestGenerateRefusesBadRequests(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	m := loadTest(t, dev, "qwen2")
	g, _ := m.NewGenerator(2, 16)
	for _, tt := range []struct {
		prompts [][]int32
		opt     SampleOptions
		want    string
	}{
		{[][]int32{{1}}, SampleOptions{}, "max new tokens"},
		{[][]int32{{1}}, SampleOptions{MaxNewTokens: 1, Temperature: -1}, "temperature"},
		{[][]int32{{1}}, SampleOptions{MaxNewTokens: 1, TopP: 1.5}, "top-p"},
		{[][]int32{{1}}, SampleOptions{MaxNewTokens: 1, TopK: -1}, "top-k"},
		{[][]int32{{}}, SampleOptions{MaxNewTokens: 1}, "prompt 0 is empty"},
		{[][]int32{make([]int32, 16)}, SampleOptions{MaxNewTokens: 1}, "too long for a context of 16"},
		{[][]int32{{1, 500}}, SampleOptions{MaxNewTokens: 1}, "id 500 is outside"},
		{[][]int32{{1}}, SampleOptions{MaxNewTokens: 1, StopIDs: []int32{-3}}, "stop id -3"},
		{[][]int32{{1}, {2}}, SampleOptions{MaxNewTokens: 1, Seeds: []uint64{1}}, "1 seeds for 2 prompts"},
	} {
		_, err := g.Generate(tt.prompts, tt.opt)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
	if _, err := m.NewGenerator(1, 5000); err == nil || !strings.Contains(err.Error(), "context of 4096") {
		t.Errorf("a generator longer than the context: %v", err)
	}
}

func TestMemoryIsEstimatedFirst(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	cfg, _ := hf.NewConfig(hf.Llama, 49152, 576, 1536, 30, 9, 3, 0, true)
	if _, err := New(dev, cfg, 256<<20); err == nil || !strings.Contains(err.Error(), "135M parameters") {
		t.Errorf("a 135M model in 256 MiB: %v", err)
	}
	small, _ := hf.NewConfig(hf.Qwen2, 100, 32, 64, 1, 2, 1, 0, true)
	m, err := New(dev, small, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.NewPass(1<<20, 1<<20); err == nil || !strings.Contains(err.Error(), "a pass over 1048576 tokens") {
		t.Errorf("a pass of a million tokens in 64 MiB: %v", err)
	}
	if _, err := m.NewGenerator(4096, 4096); err == nil || !strings.Contains(err.Error(), "generate fewer sequences") {
		t.Errorf("a generator of 4096×4096 in 64 MiB: %v", err)
	}
	if got, want := PassBytes(cfg, 2048, 2048), int64(0); got <= want {
		t.Errorf("pass estimate %d", got)
	}
}

// A model made from scratch starts as transformers initialises one, and
// round-trips through Save.
func TestInitFromScratch(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	cfg, _ := hf.NewConfig(hf.Qwen3, 300, 64, 96, 2, 4, 2, 32, false)
	m, _ := New(dev, cfg, 0)
	m.Init(3)
	ts := m.Tensors()
	for _, tn := range ts {
		var sum, sq float64
		for _, v := range tn.Data {
			sum, sq = sum+float64(v), sq+float64(v)*float64(v)
		}
		n := float64(len(tn.Data))
		switch {
		case strings.HasSuffix(tn.Name, "norm.weight"):
			if sum != n {
				t.Errorf("%s: not all ones", tn.Name)
			}
		case len(tn.Shape) == 2:
			if sd := math.Sqrt(sq / n); math.Abs(sd-0.02) > 0.002 {
				t.Errorf("%s: std %.4f, want 0.02", tn.Name, sd)
			}
		default:
			t.Errorf("unexpected tensor %s", tn.Name)
		}
	}
	dir := t.TempDir()
	if err := m.Save(dir, hf.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dev, dir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := make([]float32, m.NumParams()), make([]float32, back.NumParams())
	dev.Download(a, m.Params)
	dev.Download(b, back.Params)
	if !slices.Equal(a, b) {
		t.Error("a model made here did not reload to the same parameters")
	}
	if back.Config.HeadDim != 32 || back.Config.Tied {
		t.Errorf("config back: head_dim %d tied %v", back.Config.HeadDim, back.Config.Tied)
	}
}

func TestKthLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(300)
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(r.IntN(20)) // many ties
		}
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		k := 1 + r.IntN(n)
		if got, want := kthLargest(vals, k), sorted[n-k]; got != want {
			t.Fatalf("k=%d of %d: %v, want %v", k, n, got, want)
		}
	}
}

// A model loaded for inference holds no gradients, scores as the full
// one does, refuses a backward, and is refused by the memory estimate from
// its config before any weight file is opened.
func TestLoadForInference(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	cfg, _ := hf.NewConfig(hf.Llama, 200, 32, 64, 2, 4, 2, 0, true)
	m, _ := New(dev, cfg, 0)
	m.Init(5)
	dir := t.TempDir()
	if err := m.Save(dir, hf.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	inf, err := Load(dev, dir, LoadOptions{Inference: true})
	if err != nil {
		t.Fatal(err)
	}
	if inf.HasGrads() || !m.HasGrads() {
		t.Fatalf("gradients: inference model %v, full model %v", inf.HasGrads(), m.HasGrads())
	}
	ids := []int32{5, 9, 13, 2, 7}
	if a, b := scoreAlone(t, m, ids, 1), scoreAlone(t, inf, ids, 1); !slices.Equal(a, b) {
		t.Errorf("log-probs differ: %v and %v", a, b)
	}
	p, _ := inf.NewPass(8, 8)
	b := Batch{Rows: 1, Seq: len(ids), IDs: ids}
	b.NextTokenTargets()
	if _, err := p.Forward(b, ForwardOptions{}); err != nil {
		t.Fatal(err)
	}
	inf.ZeroGrad()
	if err := p.Backward(make([]float32, len(ids)-1), nil); err == nil || !strings.Contains(err.Error(), "inference") {
		t.Errorf("backward without gradients: %v", err)
	}
	// Weights of 4 bytes a parameter fit where weights and gradients do not.
	limit := modelBytes(cfg, false) + 1
	if _, err := Load(dev, dir, LoadOptions{MemoryLimit: limit, Inference: true}); err != nil {
		t.Errorf("inference load within %d bytes: %v", limit, err)
	}
	if _, err := Load(dev, dir, LoadOptions{MemoryLimit: limit}); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("training load within %d bytes: %v", limit, err)
	}
	// The estimate comes first: no weight file is needed to refuse.
	os.Remove(filepath.Join(dir, "model.safetensors"))
	if _, err := Load(dev, dir, LoadOptions{MemoryLimit: 1}); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Errorf("a model without weights in 1 byte: %v", err)
	}
}
