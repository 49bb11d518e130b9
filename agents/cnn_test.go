package agents

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// testImage is a 5×6×2 image: small, not square, two channels.
var testImage = envs.Space{Kind: envs.Box, Dim: 60, Shape: []int{5, 6, 2}}

// testConv has padding, a stride of 2 and two layers, so that every path of
// im2col and col2im (the second layer's input gradient) is taken.
var testConv = [][]int{{3, 3, 1, 1}, {2, 2, 2}}

func newTestCNN(t *testing.T, act envs.Space, noCritic bool) (*CNN, *gpu.CPU) {
	dev := gpu.NewCPU(1)
	a, err := NewCNN(Build{Obs: testImage, Act: act, Config: Config{"conv": testConv, "hidden": []int{4}, "activation": "tanh"},
		NoCritic: noCritic, Device: dev, RNG: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	return a, dev
}

// TestCNNGradients checks Gradients against central differences of the
// whole PPO loss (policy + entropy + value) in every parameter: the
// convolutions (with padding, stride and col2im), the torso, both heads.
func TestCNNGradients(t *testing.T) {
	for _, tc := range []struct {
		name     string
		act      envs.Space
		noCritic bool
	}{
		{"categorical", envs.Space{Kind: envs.Discrete, N: 3}, false},
		{"gaussian", envs.Space{Kind: envs.Box, Dim: 2}, false},
		{"no-critic", envs.Space{Kind: envs.Discrete, N: 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, dev := newTestCNN(t, tc.act, tc.noCritic)
			a.setChunk(4) // patches for 4 images, then 2: the chunked passes are checked too
			r := rand.New(rand.NewPCG(3, 4))
			const B = 6
			ad, od := tc.act.Size(), testImage.Dim
			obs, acts := make([]float32, B*od), make([]float32, B*ad)
			for i := range obs {
				obs[i] = float32(r.NormFloat64())
			}
			p := dev.Data(a.Params())
			for i := range p {
				p[i] += float32(r.NormFloat64() * 0.2)
			}
			old, vals := make([]float32, B), make([]float32, B)
			a.Act(obs, B, r, false, acts, old, vals)
			for i := range old {
				old[i] += float32(r.NormFloat64() * 0.05)
			}
			adv, ret := make([]float32, B), make([]float32, B)
			for i := range adv {
				adv[i], ret[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			up := func(rows, cols int, v []float32) gpu.Tensor { x := dev.Alloc(rows, cols); dev.Upload(x, v); return x }
			obsT, actT, oldT, advT, retT, valT := up(B, od, obs), up(B, ad, acts), up(B, 1, old), up(B, 1, adv), up(B, 1, ret), up(B, 1, vals)
			stats := dev.Alloc(1, gpu.NumStats)
			loss := func() float64 {
				dev.Fill(stats, 0)
				var v *gpu.ValueArgs
				if !tc.noCritic {
					v = &gpu.ValueArgs{OldValue: valT, Returns: retT, ClipCoef: 10, Clip: true, VFCoef: 0.5, Stats: stats}
				}
				a.Gradients(obsT, gpu.PPOPolicyArgs{Actions: actT, OldLogp: oldT, Adv: advT, ClipCoef: 10, EntCoef: 0.05, NormAdv: true, Stats: stats}, v)
				s := dev.Data(stats)
				return float64(s[gpu.StatPolicyLoss]) - 0.05*float64(s[gpu.StatEntropy]) + 0.5*float64(s[gpu.StatValueLoss])
			}
			loss()
			grad := append([]float32(nil), dev.Data(a.Grads())...)
			name := func(i int) string {
				for _, nt := range a.Tensors() {
					if i >= nt.T.Offset() && i < nt.T.Offset()+nt.T.Len() {
						return nt.Name
					}
				}
				return "?"
			}
			// A step that moves a ReLU's input across zero makes the
			// difference quotient meaningless there: where the quotients of
			// two step sizes disagree, the parameter is skipped (a few may
			// be), and everywhere else the gradient must match.
			diff := func(i int, h float32) float64 {
				orig := p[i]
				p[i] = orig + h
				lu := loss()
				p[i] = orig - h
				ld := loss()
				p[i] = orig
				return (lu - ld) / (2 * float64(h))
			}
			tol := func(x float64) float64 { return 3e-4 + 2e-2*math.Abs(x) }
			skipped := 0
			for i := range p {
				num, half := diff(i, 3e-3), diff(i, 1.5e-3)
				if math.Abs(num-half) > tol(num) {
					skipped++
					continue
				}
				if math.Abs(num-float64(grad[i])) > tol(num) {
					t.Errorf("param %d (%s): analytic %v, numeric %v", i, name(i), grad[i], num)
				}
			}
			t.Logf("%d parameters checked, %d skipped at a ReLU kink", len(p)-skipped, skipped)
			if skipped > len(p)/20 {
				t.Errorf("%d of %d parameters sit on a ReLU kink", skipped, len(p))
			}
		})
	}
}

// TestCNNExportLayout runs the exported tensors through a direct NCHW
// convolution and linear layers, as PyTorch's Conv2d, Flatten and Linear
// compute them (the model in CNN's doc), and compares with the agent's own
// outputs: the checkpoint layout is PyTorch's.
func TestCNNExportLayout(t *testing.T) {
	a, dev := newTestCNN(t, envs.Space{Kind: envs.Discrete, N: 3}, false)
	r := rand.New(rand.NewPCG(5, 6))
	p := dev.Data(a.Params())
	for i := range p {
		p[i] += float32(r.NormFloat64() * 0.2) // non-zero biases too
	}
	tensors := map[string][]float32{}
	shapes := map[string][]int{}
	for _, nt := range a.Tensors() {
		out := make([]float32, nt.T.Len())
		nt.Export(out, p[nt.T.Offset():nt.T.Offset()+nt.T.Len()])
		tensors[nt.Name], shapes[nt.Name] = out, nt.ExportShape()
		back := make([]float32, nt.T.Len())
		nt.Import(back, out)
		if !slices.Equal(back, p[nt.T.Offset():nt.T.Offset()+nt.T.Len()]) {
			t.Fatalf("%s: Import does not undo Export", nt.Name)
		}
	}
	want := []string{"torso.0.weight", "torso.0.bias", "torso.2.weight", "torso.2.bias", "torso.5.weight", "torso.5.bias",
		"actor.weight", "actor.bias", "critic.weight", "critic.bias"}
	var names []string
	for _, nt := range a.Tensors() {
		names = append(names, nt.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("tensor names %v, want %v", names, want)
	}
	if s := shapes["torso.0.weight"]; !slices.Equal(s, []int{3, 2, 3, 3}) {
		t.Fatalf("torso.0.weight shape %v, want [3 2 3 3] (out, in, kh, kw)", s)
	}
	const B = 4
	obs := make([]float32, B*testImage.Dim)
	for i := range obs {
		obs[i] = float32(r.NormFloat64())
	}
	acts, logp, vals := make([]float32, B), make([]float32, B), make([]float32, B)
	a.Act(obs, B, r, true, acts, logp, vals)
	logits := make([]float32, B*3)
	a.PolicyOutputs(obs, B, logits)
	for b := 0; b < B; b++ {
		// NCHW input from the channel-last observation.
		H, W, C := 5, 6, 2
		x := make([]float64, C*H*W)
		for y := 0; y < H; y++ {
			for xx := 0; xx < W; xx++ {
				for c := 0; c < C; c++ {
					x[(c*H+y)*W+xx] = float64(obs[b*testImage.Dim+(y*W+xx)*C+c])
				}
			}
		}
		x, H, W, C = conv2dNCHW(x, H, W, C, tensors["torso.0.weight"], tensors["torso.0.bias"], shapes["torso.0.weight"], 1, 1)
		x, _, _, _ = conv2dNCHW(x, H, W, C, tensors["torso.2.weight"], tensors["torso.2.bias"], shapes["torso.2.weight"], 2, 0)
		h := linearRef(x, tensors["torso.5.weight"], tensors["torso.5.bias"], math.Tanh)
		pi := linearRef(h, tensors["actor.weight"], tensors["actor.bias"], nil)
		v := linearRef(h, tensors["critic.weight"], tensors["critic.bias"], nil)
		for j, l := range pi {
			if math.Abs(l-float64(logits[b*3+j])) > 1e-4 {
				t.Fatalf("sample %d logit %d: agent %v, PyTorch layout %v", b, j, logits[b*3+j], l)
			}
		}
		if math.Abs(v[0]-float64(vals[b])) > 1e-4 {
			t.Fatalf("sample %d value: agent %v, PyTorch layout %v", b, vals[b], v[0])
		}
	}
}

// conv2dNCHW is PyTorch's Conv2d with a ReLU, on one CHW image.
func conv2dNCHW(x []float64, H, W, C int, w, bias []float32, shape []int, stride, pad int) ([]float64, int, int, int) {
	O, K := shape[0], shape[2]
	oh, ow := (H+2*pad-K)/stride+1, (W+2*pad-K)/stride+1
	out := make([]float64, O*oh*ow)
	for o := 0; o < O; o++ {
		for y := 0; y < oh; y++ {
			for xx := 0; xx < ow; xx++ {
				s := float64(bias[o])
				for c := 0; c < C; c++ {
					for ky := 0; ky < K; ky++ {
						for kx := 0; kx < K; kx++ {
							iy, ix := y*stride+ky-pad, xx*stride+kx-pad
							if iy >= 0 && iy < H && ix >= 0 && ix < W {
								s += float64(w[((o*C+c)*K+ky)*K+kx]) * x[(c*H+iy)*W+ix]
							}
						}
					}
				}
				out[(o*oh+y)*ow+xx] = math.Max(s, 0)
			}
		}
	}
	return out, oh, ow, O
}

// linearRef is PyTorch's Linear (weight out×in) and an activation.
func linearRef(x []float64, w, b []float32, act func(float64) float64) []float64 {
	out := make([]float64, len(b))
	for o := range out {
		s := float64(b[o])
		for i, v := range x {
			s += float64(w[o*len(x)+i]) * v
		}
		if act != nil {
			s = act(s)
		}
		out[o] = s
	}
	return out
}

func TestCNNNeedsAnImage(t *testing.T) {
	_, err := New("cnn", Build{Obs: envs.Space{Kind: envs.Box, Dim: 4}, Act: envs.Space{Kind: envs.Discrete, N: 2},
		Config: Config{"conv": [][]int{{16, 3, 1}}, "hidden": []int{8}, "activation": "relu"}, Device: gpu.NewCPU(1), RNG: rand.New(rand.NewPCG(1, 1))})
	if err == nil || !strings.Contains(err.Error(), "image") {
		t.Fatalf("vector observations: %v", err)
	}
	_, err = New("cnn", Build{Obs: testImage, Act: envs.Space{Kind: envs.Discrete, N: 2},
		Config: Config{"conv": [][]int{{16, 7, 1}}, "hidden": []int{8}, "activation": "relu"}, Device: gpu.NewCPU(1), RNG: rand.New(rand.NewPCG(1, 1))})
	if err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("a 7×7 kernel on a 5×6 image: %v", err)
	}
}

// TestCNNRoutesGiveTheSameBits: a minibatch's gradients are the same bits
// whether the convolutions read pixels in place (gpu.DirectConv, where the
// CPU has AVX-512) or make patches, for all images at once or a chunk at a
// time: every CPU route sums the convolutions' gradients by blocks of
// gpu.ConvBlock images (70 images: blocks of 32, 32 and 6). Networks: one
// convolution (MinAtar's, whose gradients the direct route takes straight
// from the dense layer's); two on 10×10 frames, where the second one's rows
// (6 positions) are too short for the direct kernels; two on 12×12, both
// direct, the second with an input gradient.
func TestCNNRoutesGiveTheSameBits(t *testing.T) {
	const B = 70
	r := rand.New(rand.NewPCG(8, 9))
	for _, net := range []struct {
		side int
		conv [][]int
	}{{10, [][]int{{16, 3, 1}}}, {10, [][]int{{16, 3, 1}, {16, 3, 1}}}, {12, [][]int{{16, 3, 1}, {16, 3, 1}}}} {
		image := envs.Space{Kind: envs.Box, Dim: net.side * net.side * 4, Shape: []int{net.side, net.side, 4}}
		obs := make([]float32, B*image.Dim)
		for i := range obs {
			obs[i] = float32(r.IntN(2))
		}
		acts, adv := make([]float32, B), make([]float32, B)
		for i := range acts {
			acts[i], adv[i] = float32(r.IntN(3)), float32(r.NormFloat64())
		}
		routes := []struct {
			name   string
			direct bool
			chunk  int
		}{{"pixels in place", true, 0}, {"patches at once", false, B},
			{"patches 32 images at a time", false, gpu.ConvBlock}, {"patches 64 images at a time", false, 2 * gpu.ConvBlock}}
		var grads [][]float32
		for _, route := range routes {
			cpu := gpu.NewCPU(2)
			var dev gpu.Device = cpu
			if !route.direct {
				dev = patchesOnly{cpu}
			}
			a, err := NewCNN(Build{Obs: image, Act: envs.Space{Kind: envs.Discrete, N: 3}, Config: Config{"conv": net.conv,
				"hidden": []int{32}, "activation": "relu"}, Device: dev, RNG: rand.New(rand.NewPCG(1, 2))})
			if err != nil {
				t.Fatal(err)
			}
			if !route.direct { // the CPU behind the wrapper
				a.setPlan(route.chunk, true)
			}
			up := func(rows, cols int, v []float32) gpu.Tensor { x := dev.Alloc(rows, cols); dev.Upload(x, v); return x }
			zeros := make([]float32, B)
			stats := dev.Alloc(1, gpu.NumStats)
			a.Gradients(up(B, image.Dim, obs), gpu.PPOPolicyArgs{Actions: up(B, 1, acts), OldLogp: up(B, 1, zeros), Adv: up(B, 1, adv),
				ClipCoef: 0.2, EntCoef: 0.01, NormAdv: true, Stats: stats},
				&gpu.ValueArgs{OldValue: up(B, 1, zeros), Returns: up(B, 1, adv), ClipCoef: 0.2, Clip: true, VFCoef: 0.5, Stats: stats})
			grads = append(grads, append([]float32(nil), cpu.Data(a.Grads())...))
			cpu.Close()
		}
		for r := 1; r < len(routes); r++ {
			for i := range grads[0] {
				if math.Float32bits(grads[0][i]) != math.Float32bits(grads[r][i]) {
					t.Fatalf("%d×%d frames, convolutions %v: gradient %d: %v with %s, %v with %s", net.side, net.side, net.conv, i, grads[0][i], routes[0].name, grads[r][i], routes[r].name)
				}
			}
		}
	}
}

// setPlan makes every convolution take the patch route's plan given.
func (a *CNN) setPlan(chunk int, blocked bool) {
	for _, c := range a.convs {
		c.SetPlan(chunk, blocked)
	}
}

// setChunk changes the chunk of every convolution's patch route alone.
func (a *CNN) setChunk(chunk int) {
	for _, c := range a.convs {
		_, blocked := c.Plan()
		c.SetPlan(chunk, blocked)
	}
}

// patchesOnly hides a device's direct convolution kernels.
type patchesOnly struct{ gpu.Device }

// TestCNNGradientsAllocateNothing: once its buffers are sized, a minibatch
// pass (forward, losses, backward, products split across two cores) makes
// no garbage, by either convolution route.
func TestCNNGradientsAllocateNothing(t *testing.T) {
	image := envs.Space{Kind: envs.Box, Dim: 400, Shape: []int{10, 10, 4}}
	const B = 256
	for _, direct := range []bool{true, false} {
		cpu := gpu.NewCPU(2)
		var dev gpu.Device = cpu
		if !direct {
			dev = patchesOnly{cpu}
		}
		a, err := NewCNN(Build{Obs: image, Act: envs.Space{Kind: envs.Discrete, N: 3}, Config: Config{"conv": [][]int{{16, 3, 1}},
			"hidden": []int{128}, "activation": "relu"}, Device: dev, RNG: rand.New(rand.NewPCG(1, 2))})
		if err != nil {
			t.Fatal(err)
		}
		x, acts, zeros := dev.Alloc(B, image.Dim), dev.Alloc(B, 1), dev.Alloc(B, 1)
		stats := dev.Alloc(1, gpu.NumStats)
		p := gpu.PPOPolicyArgs{Actions: acts, OldLogp: zeros, Adv: zeros, ClipCoef: 0.2, EntCoef: 0.01, Stats: stats}
		v := gpu.ValueArgs{OldValue: zeros, Returns: zeros, ClipCoef: 0.2, VFCoef: 0.5, Stats: stats}
		if n := testing.AllocsPerRun(5, func() { a.Gradients(x, p, &v) }); n != 0 {
			t.Errorf("direct=%v: %v allocations per minibatch pass", direct, n)
		}
		cpu.Close()
	}
}
