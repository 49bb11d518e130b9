package lm

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// The golden files are written by scripts/lm-golden.sh from the PyTorch
// reference (scripts/lm_reference.py); these tests replay them without
// Python.

var saveTo = flag.String("saveto", "", "TestSaveForTorch writes the testdata models as agents/lm saves them into this directory")

var parityModels = []string{"qwen2", "qwen3", "llama"}

type goldenBatch struct {
	Rows, Seq          int
	IDs, Mask, Targets []int32
}

type golden struct {
	Temperature       float64
	LogProbs, Entropy []float64
	DLogP             []float64 `json:"dlogp"`
	DEntropy          []float64 `json:"dentropy"`
	Grads             map[string]struct {
		Norm float64
		Head []float64
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func testBatch(t *testing.T) Batch {
	var b goldenBatch
	readJSON(t, filepath.Join("testdata", "batch.json"), &b)
	return Batch{Rows: b.Rows, Seq: b.Seq, IDs: b.IDs, Mask: b.Mask, Targets: b.Targets}
}

func loadTest(t *testing.T, dev gpu.Device, name string) *Model {
	t.Helper()
	m, err := Load(dev, filepath.Join("testdata", name), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// GradTensors returns the gradients as transformers names and shapes the
// parameters (as Tensors does for the values).
func gradTensors(m *Model) map[string][]float32 {
	saved := m.Params
	m.Params = m.Grads
	ts := m.Tensors()
	m.Params = saved
	out := map[string][]float32{}
	for _, t := range ts {
		out[t.Name] = t.Data
	}
	return out
}

// Log-probabilities, entropies and every parameter's gradient agree with
// the PyTorch reference on random Qwen2, Qwen3 and Llama-3 models over a
// padded batch of 283 scored tokens.
func TestParityWithTorch(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	b := testBatch(t)
	for _, name := range parityModels {
		t.Run(name, func(t *testing.T) {
			var g golden
			readJSON(t, filepath.Join("testdata", name+".golden.json"), &g)
			m := loadTest(t, dev, name)
			p, err := m.NewPass(b.Rows*b.Seq, len(g.LogProbs))
			if err != nil {
				t.Fatal(err)
			}
			s, err := p.Forward(b, ForwardOptions{Entropy: true, Temperature: g.Temperature})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.LogProbs) != len(g.LogProbs) {
				t.Fatalf("%d scored tokens, the reference %d", len(s.LogProbs), len(g.LogProbs))
			}
			lpErr, entErr := maxAbs(s.LogProbs, g.LogProbs), maxAbs(s.Entropy, g.Entropy)
			t.Logf("%s: %d tokens, max |Δ logp| %.2g, max |Δ entropy| %.2g (logp from %.2f to %.2f)",
				name, len(g.LogProbs), lpErr, entErr, slices.Min(g.LogProbs), slices.Max(g.LogProbs))
			if lpErr > 1e-3 || entErr > 1e-3 {
				t.Fatalf("log-probs differ by up to %.3g, entropies by %.3g (tolerance 1e-3)", lpErr, entErr)
			}
			m.ZeroGrad()
			if err := p.Backward(f32(g.DLogP), f32(g.DEntropy)); err != nil {
				t.Fatal(err)
			}
			grads := gradTensors(m)
			var worst float64
			worstName := ""
			for tn, want := range g.Grads {
				got, ok := grads[tn]
				if !ok {
					t.Fatalf("no gradient for %s", tn)
				}
				norm := 0.0
				for _, v := range got {
					norm += float64(v) * float64(v)
				}
				rel := math.Abs(math.Sqrt(norm)-want.Norm) / want.Norm
				for i, w := range want.Head {
					rel = math.Max(rel, math.Abs(float64(got[i])-w)/want.Norm)
				}
				if rel > worst {
					worst, worstName = rel, tn
				}
			}
			t.Logf("%s: gradients of %d tensors, largest error relative to the tensor's gradient norm %.2g (%s)", name, len(g.Grads), worst, worstName)
			if worst > 1e-3 {
				t.Fatalf("gradient of %s differs from the reference's by %.3g of its norm", worstName, worst)
			}
		})
	}
}

func maxAbs(got []float32, want []float64) float64 {
	var w float64
	for i, v := range want {
		w = math.Max(w, math.Abs(float64(got[i])-v))
	}
	return w
}

func f32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// A saved model reloads bit for bit, whatever dtype it came in (BF16
// widens exactly, so F32 holds it).
func TestSaveReloadsBitForBit(t *testing.T) {
	dev := gpu.NewCPU(0)
	defer dev.Close()
	for _, name := range parityModels {
		m := loadTest(t, dev, name)
		dir := t.TempDir()
		if err := m.Save(dir, hf.SaveOptions{MaxShard: 50000}); err != nil {
			t.Fatal(err)
		}
		back, err := Load(dev, dir, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a, b := make([]float32, m.Params.Len()), make([]float32, back.Params.Len())
		dev.Download(a, m.Params)
		dev.Download(b, back.Params)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s: parameter %d is %v after a save and a load, was %v", name, i, b[i], a[i])
			}
		}
		if !slices.Equal(back.Config.Tensors()[0].Shape, m.Config.Tensors()[0].Shape) || back.Config.Tied != m.Config.Tied {
			t.Fatalf("%s: config changed", name)
		}
	}
}

// TestSaveForTorch saves the testdata models into -saveto, for
// scripts/lm-golden.sh to load them in the PyTorch reference.
func TestSaveForTorch(t *testing.T) {
	if *saveTo == "" {
		t.Skip("needs -saveto DIR (scripts/lm-golden.sh passes it)")
	}
	dev := gpu.NewCPU(0)
	defer dev.Close()
	for _, name := range parityModels {
		m := loadTest(t, dev, name)
		if err := m.Save(filepath.Join(*saveTo, name), hf.SaveOptions{MaxShard: 100000}); err != nil {
			t.Fatal(err)
		}
	}
}
