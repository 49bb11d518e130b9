package lm

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// valueFixture is a small model with a random value head and a padded
// batch whose scored positions have random loss weights.
func valueFixture(t *testing.T, dev gpu.Device, arch hf.Arch) (*Model, *ValueHead, Batch) {
	t.Helper()
	cfg, err := hf.NewConfig(arch, 32, 16, 32, 1, 2, 1, 0, arch != hf.Qwen3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(dev, cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(3)
	r := rand.New(rand.NewPCG(5, 6))
	// Larger weights than Init's, so that every path carries gradient.
	host := make([]float32, m.NumParams())
	dev.Download(host, m.Params)
	for i := range host {
		if host[i] != 1 {
			host[i] += float32(r.NormFloat64() * 0.2)
		}
	}
	dev.Upload(m.Params, host)
	v := m.NewValueHead()
	w := make([]float32, cfg.Hidden)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.5)
	}
	if err := v.Set(w, []float32{0.3}); err != nil {
		t.Fatal(err)
	}
	const rows, seq = 3, 7
	b := Batch{Rows: rows, Seq: seq, IDs: make([]int32, rows*seq), Mask: make([]int32, rows*seq)}
	for i := range b.IDs {
		b.IDs[i] = int32(r.IntN(cfg.VocabSize))
		b.Mask[i] = 1
	}
	b.Mask[0], b.Mask[1] = 0, 0 // left padding in row 0
	b.Mask[2*seq-1] = 0         // right padding in row 1
	b.NextTokenTargets()
	for i := 0; i < rows*seq; i += 4 { // some positions unscored
		b.Targets[i] = -1
	}
	return m, v, b
}

// The value path's gradients — the head's and, through the final norm and
// every layer, the trunk's — match central differences of the loss Σ c·V.
func TestValueHeadGradients(t *testing.T) {
	dev := gpu.NewCPU(1)
	defer dev.Close()
	for _, arch := range []hf.Arch{hf.Qwen2, hf.Qwen3, hf.Llama} {
		m, v, b := valueFixture(t, dev, arch)
		p, err := m.NewPass(b.Rows*b.Seq, b.Rows*b.Seq)
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.Forward(b, ForwardOptions{Values: v})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(7, 8))
		cv := make([]float32, len(s.Values))
		for i := range cv {
			cv[i] = float32(r.NormFloat64())
		}
		loss := func() float64 {
			s, err := p.Forward(b, ForwardOptions{Values: v})
			if err != nil {
				t.Fatal(err)
			}
			l := 0.0
			for i := range s.Values {
				l += float64(cv[i]) * float64(s.Values[i])
			}
			return l
		}
		loss()
		m.ZeroGrad()
		v.ZeroGrad()
		if err := p.BackwardScores(ScoreGrads{LogP: make([]float32, len(cv)), Values: cv}); err != nil {
			t.Fatal(err)
		}
		check := func(what string, params, grads gpu.Tensor, idx []int) {
			t.Helper()
			host, g := make([]float32, params.Len()), make([]float32, grads.Len())
			dev.Download(host, params)
			dev.Download(g, grads)
			const eps = 1e-2
			worst := 0.0
			for _, i := range idx {
				x := host[i]
				host[i] = x + eps
				dev.Upload(params, host)
				up := loss()
				host[i] = x - eps
				dev.Upload(params, host)
				down := loss()
				host[i] = x
				dev.Upload(params, host)
				num := (up - down) / (2 * eps)
				err := math.Abs(num-float64(g[i])) / (math.Max(math.Abs(num), math.Abs(float64(g[i]))) + 1e-2)
				worst = math.Max(worst, err)
				if err > 2e-2 {
					t.Errorf("%s %s[%d]: backward %.5g, central difference %.5g", arch, what, i, g[i], num)
				}
			}
			t.Logf("%s %s: worst relative error %.2g over %d parameters", arch, what, worst, len(idx))
		}
		all := func(n int) []int {
			out := make([]int, n)
			for i := range out {
				out[i] = i
			}
			return out
		}
		check("value head", v.Params, v.Grads, all(v.Len()))
		var trunk []int
		for len(trunk) < 60 {
			trunk = append(trunk, r.IntN(m.NumParams()))
		}
		check("trunk", m.Params, m.Grads, trunk)
	}
}

// A backward with log-probability and value gradients adds up what the
// two give apart: the trunk's gradient is the sum of the policy's and the
// critic's.
func TestValueHeadGradientsAdd(t *testing.T) {
	dev := gpu.NewCPU(1)
	defer dev.Close()
	m, v, b := valueFixture(t, dev, hf.Qwen3)
	p, err := m.NewPass(b.Rows*b.Seq, b.Rows*b.Seq)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Forward(b, ForwardOptions{Entropy: true, Values: v})
	if err != nil {
		t.Fatal(err)
	}
	n := len(s.LogProbs)
	dl, de, dv := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range dl {
		dl[i], de[i], dv[i] = float32(math.Sin(float64(i))), float32(math.Cos(float64(i)))*0.3, float32(i%3)-1
	}
	grads := func(g ScoreGrads) (trunk, head []float32) {
		m.ZeroGrad()
		v.ZeroGrad()
		if err := p.BackwardScores(g); err != nil {
			t.Fatal(err)
		}
		trunk, head = make([]float32, m.NumParams()), make([]float32, v.Len())
		dev.Download(trunk, m.Grads)
		dev.Download(head, v.Grads)
		return trunk, head
	}
	both, bothHead := grads(ScoreGrads{LogP: dl, Entropy: de, Values: dv})
	pol, polHead := grads(ScoreGrads{LogP: dl, Entropy: de})
	crit, critHead := grads(ScoreGrads{LogP: make([]float32, n), Values: dv})
	for i := range both {
		if d := math.Abs(float64(both[i] - pol[i] - crit[i])); d > 1e-5*(1+math.Abs(float64(both[i]))) {
			t.Fatalf("parameter %d: %g with both gradients, %g + %g apart", i, both[i], pol[i], crit[i])
		}
	}
	for i := range bothHead {
		if polHead[i] != 0 || math.Abs(float64(bothHead[i]-critHead[i])) > 1e-6 {
			t.Fatalf("value head parameter %d: %g with both, %g policy only, %g critic only", i, bothHead[i], polHead[i], critHead[i])
		}
	}
}

// Values change nothing else Forward returns, follow the head's bias, and
// a value gradient needs a forward that computed values.
func TestValueHeadForward(t *testing.T) {
	dev := gpu.NewCPU(1)
	defer dev.Close()
	m, v, b := valueFixture(t, dev, hf.Qwen2)
	p, err := m.NewPass(b.Rows*b.Seq, b.Rows*b.Seq)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := p.Forward(b, ForwardOptions{Entropy: true})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Values != nil {
		t.Fatal("values without a value head")
	}
	if err := p.BackwardScores(ScoreGrads{LogP: make([]float32, len(plain.LogProbs)), Values: make([]float32, len(plain.LogProbs))}); err == nil ||
		!strings.Contains(err.Error(), "ForwardOptions.Values") {
		t.Fatalf("a value gradient without values: %v", err)
	}
	with, err := p.Forward(b, ForwardOptions{Entropy: true, Values: v})
	if err != nil {
		t.Fatal(err)
	}
	for i := range plain.LogProbs {
		if plain.LogProbs[i] != with.LogProbs[i] || plain.Entropy[i] != with.Entropy[i] {
			t.Fatalf("position %d: the value head changed the log-probabilities or entropies", i)
		}
	}
	ts := v.Tensors()
	if err := v.Set(ts[0].Data, []float32{ts[1].Data[0] + 1}); err != nil {
		t.Fatal(err)
	}
	shifted, _ := p.Forward(b, ForwardOptions{Values: v})
	for i := range with.Values {
		if d := shifted.Values[i] - with.Values[i]; math.Abs(float64(d)-1) > 1e-5 {
			t.Fatalf("position %d: a bias one higher moved the value by %g", i, d)
		}
	}
	if err := v.Set(ts[0].Data[1:], ts[1].Data); err == nil || !strings.Contains(err.Error(), "needs 16 weights") {
		t.Fatalf("a short weight: %v", err)
	}
	if err := v.Set(ts[0].Data, []float32{float32(math.NaN())}); err == nil {
		t.Fatal("a NaN bias was accepted")
	}
	zero := m.NewValueHead()
	z, _ := p.Forward(b, ForwardOptions{Values: zero})
	for i, x := range z.Values {
		if x != 0 {
			t.Fatalf("a new value head's value %d is %g, not 0", i, x)
		}
	}
}

// A saved value head loads back bit for bit; a directory without one
// leaves the head as it was; another model's head or a damaged file is
// refused with the reason.
func TestValueHeadSaveLoad(t *testing.T) {
	dev := gpu.NewCPU(1)
	defer dev.Close()
	m, v, _ := valueFixture(t, dev, hf.Qwen2)
	dir := t.TempDir()
	if found, err := m.NewValueHead().Load(dir); found || err != nil {
		t.Fatalf("an empty directory: found %v, %v", found, err)
	}
	if err := v.Save(dir); err != nil {
		t.Fatal(err)
	}
	back := m.NewValueHead()
	if found, err := back.Load(dir); !found || err != nil {
		t.Fatalf("load: found %v, %v", found, err)
	}
	a, b := make([]float32, v.Len()), make([]float32, v.Len())
	dev.Download(a, v.Params)
	dev.Download(b, back.Params)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("parameter %d: saved %g, loaded %g", i, a[i], b[i])
		}
	}
	cfg, _ := hf.NewConfig(hf.Qwen2, 32, 24, 32, 1, 2, 1, 0, true)
	wide, err := New(dev, cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wide.NewValueHead().Load(dir); err == nil || !strings.Contains(err.Error(), "another model's") {
		t.Fatalf("a 16-wide head into a 24-wide model: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ValueHeadFile), []byte("not safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := back.Load(dir); err == nil {
		t.Fatal("a damaged file was accepted")
	}
}
