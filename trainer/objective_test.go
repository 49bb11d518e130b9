package trainer

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents/dist"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/internal/numtest"
)

// TestObjective holds the CPU device's fused losses (one core and two) to
// the plain-Go objective; TestCUDAObjective (cuda tag) holds CUDA's.
func TestObjective(t *testing.T) {
	for _, threads := range []int{1, 2} {
		dev := gpu.NewCPU(threads)
		checkObjective(t, dev, 1e-5)
		dev.Close()
	}
}

// checkObjective runs every distribution's loss and the value loss on dev
// with random minibatches (ratios inside and outside the clip range, a
// mask for the tokens) and compares the statistics with the objective's
// terms, within a relative error of tol, and the gradients with central
// differences of the objective's loss.
func checkObjective(t *testing.T, dev gpu.Device, tol float64) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 12))
	up := func(rows, cols int, v []float32) gpu.Tensor {
		x := dev.Alloc(rows, cols)
		dev.Upload(x, v)
		return x
	}
	down := func(x gpu.Tensor) []float32 {
		v := make([]float32, x.Len())
		dev.Download(v, x)
		return v
	}
	normal := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(scale * r.NormFloat64())
		}
		return v
	}
	for _, tc := range []struct {
		name    string
		d       dist.Distribution
		B       int
		masked  bool
		normAdv bool
	}{
		{"categorical", dist.NewCategorical(4), 40, false, true},
		{"categorical over more rows than a chunk, advantages as they are", dist.NewCategorical(3), 300, false, false},
		{"gaussian", dist.NewGaussian(3), 24, false, true},
		{"tokens at temperature 0.7, masked", dist.NewTokens(7, 0.7), 30, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, B := tc.d, tc.B
			W, S := d.Width(), d.Shared()
			o := objective{clip: 0.2, entCoef: 0.01, vfCoef: 0.5, normAdv: tc.normAdv}
			out, shared := normal(B*W, 1), normal(S, 0.3)
			acts, old := make([]float32, B*d.ActionDim()), make([]float32, B)
			d.Sample(out, shared, r, false, acts, old)
			for i := range old {
				old[i] += float32((r.Float64() - 0.5) * 0.6) // ratios from 0.74 to 1.35
			}
			adv := normal(B, 2)
			var mask []float32
			if tc.masked {
				mask = make([]float32, B)
				for i := range mask {
					if r.Float64() < 0.7 {
						mask[i] = 1
					}
				}
			}
			stats := dev.Alloc(1, gpu.NumStats)
			p := o.policyArgs(up(B, d.ActionDim(), acts), up(B, 1, old), up(B, 1, adv), stats)
			p.Out, p.DOut = up(B, W, out), dev.Alloc(B, W)
			if S > 0 {
				p.LogStd, p.DLogStd = up(1, S, shared), dev.Alloc(1, S)
			}
			if mask != nil {
				p.Mask = up(B, 1, mask)
			}
			d.Loss(dev, p)

			outF, sharedF := f64(out), f64(shared)
			want := o.policy(d, outF, sharedF, acts, old, adv, mask)
			got := down(stats)
			for _, c := range []struct {
				name string
				got  float32
				want float64
			}{{"policy loss", got[gpu.StatPolicyLoss], want.clipLoss}, {"entropy", got[gpu.StatEntropy], want.entropy},
				{"approx_kl", got[gpu.StatApproxKL], want.approxKL}} {
				if math.Abs(float64(c.got)-c.want) > tol*math.Max(1, math.Abs(c.want)) {
					t.Errorf("%s: device %v, objective %v", c.name, c.got, c.want)
				}
			}
			if math.Abs(float64(got[gpu.StatClipFrac])-want.clipFrac) > 1.5/float64(B) {
				t.Errorf("clipfrac: device %v, objective %v", got[gpu.StatClipFrac], want.clipFrac)
			}
			loss := func(out, shared []float64) float64 { return o.loss(o.policy(d, out, shared, acts, old, adv, mask)) }
			checkObjectiveGradient(t, "outputs", func(x []float64) float64 { return loss(x, sharedF) }, outF, down(p.DOut))
			if S > 0 {
				checkObjectiveGradient(t, "shared parameters", func(x []float64) float64 { return loss(outF, x) }, sharedF, down(p.DLogStd))
			}
		})
	}
	for _, clip := range []bool{false, true} {
		const B = 50
		o := objective{clip: 0.2, vfCoef: 0.5, clipVLoss: clip}
		v, old, ret := normal(B, 1), normal(B, 1), normal(B, 2)
		stats := dev.Alloc(1, gpu.NumStats)
		args := o.valueArgs(up(B, 1, old), up(B, 1, ret), stats)
		args.Value, args.DValue = up(B, 1, v), dev.Alloc(B, 1)
		dev.ValueLoss(args)
		want := o.value(f64(v), old, ret)
		if got := float64(down(stats)[gpu.StatValueLoss]); math.Abs(got-want) > tol*math.Max(1, want) {
			t.Errorf("value loss, clip %v: device %v, objective %v", clip, got, want)
		}
		checkObjectiveGradient(t, "values", func(x []float64) float64 { return o.vfCoef * o.value(x, old, ret) }, f64(v), down(args.DValue))
	}
}

// checkObjectiveGradient compares an analytic gradient with central
// differences of f.
func checkObjectiveGradient(t *testing.T, what string, f func([]float64) float64, x []float64, grad []float32) {
	t.Helper()
	numtest.Gradient(func() float64 { return f(x) }, x, grad, 1e-5, 1e-4, 1e-3, func(i int, analytic float32, numeric float64) {
		t.Errorf("%s: d/dx[%d] device %v, objective %v", what, i, analytic, numeric)
	})
}

func f64(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}
