package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// TestStackGradients checks a Stack's Backward against central differences
// of its forward pass, for every parameter and the input: a convolution
// with padding and one with a stride (ReLU both: the second takes the
// first's activation into its input gradient), a dense layer on their
// image (tanh) and a linear head,
// under the loss ½·Σ y² (whose dz is y). A second head on the same features
// adds its gradient (InputGrad.Add) before the features' activation
// (Through).
func TestStackGradients(t *testing.T) {
	dev := gpu.NewCPU(1)
	r := rand.New(rand.NewPCG(1, 2))
	var p Params
	g := gpu.Conv2D{H: 4, W: 5, C: 2, K: 3, Stride: 1, Pad: 1}
	conv := NewConv(&p, "conv", g, 3, dev, Orthogonal(math.Sqrt2, r))
	oh, ow, oc := conv.OutShape()
	conv2 := NewConv(&p, "conv2", gpu.Conv2D{H: oh, W: ow, C: oc, K: 2, Stride: 2}, 4, dev, Orthogonal(math.Sqrt2, r))
	oh, ow, oc = conv2.OutShape()
	body := NewDenseOnImage(&p, "body", oh, ow, oc, 6, gpu.Tanh, Orthogonal(math.Sqrt2, r))
	head := NewDense(&p, "head", 6, 2, gpu.Identity, Orthogonal(1, r))
	other := NewDense(&p, "other", 6, 1, gpu.Identity, Orthogonal(1, r))
	p.Build(dev)
	params := dev.Data(p.Flat())
	for i := range params {
		params[i] += float32(0.2 * r.NormFloat64()) // non-zero biases too
	}
	const B = 3
	x := dev.Alloc(B, g.H*g.W*g.C)
	for i, xs := 0, dev.Data(x); i < len(xs); i++ {
		xs[i] = float32(r.NormFloat64())
	}
	torso := Stack{conv, conv2, body}
	loss := func() float64 {
		h := torso.Forward(dev, x)
		var l float64
		for _, y := range [][]float32{dev.Data(head.Forward(dev, h)), dev.Data(other.Forward(dev, h))} {
			for _, v := range y {
				l += 0.5 * float64(v) * float64(v)
			}
		}
		return l
	}
	loss()
	h := torso.Forward(dev, x)
	dy, do := head.Grad(B), other.Grad(B)
	copy(dev.Data(dy), dev.Data(head.Forward(dev, h)))
	copy(dev.Data(do), dev.Data(other.Forward(dev, h)))
	dx := dev.Alloc(B, x.Cols)
	dh := body.Grad(B)
	head.Backward(dev, dy, InputGrad{DX: dh})
	other.Backward(dev, do, InputGrad{DX: dh, Add: true, Through: body.Activation()})
	torso.Backward(dev, dh, InputGrad{DX: dx})
	grads := append([]float32(nil), dev.Data(p.Grads())...)
	dxs := append([]float32(nil), dev.Data(dx)...)

	check := func(what string, v []float32, analytic []float32) {
		for i := range v {
			orig := v[i]
			const e = 1e-3
			v[i] = orig + e
			up := loss()
			v[i] = orig - e
			down := loss()
			v[i] = orig
			num := (up - down) / (2 * e)
			if math.Abs(num-float64(analytic[i])) > 2e-3+2e-2*math.Abs(num) {
				t.Errorf("%s[%d]: Backward %v, numeric %v", what, i, analytic[i], num)
			}
		}
	}
	check("parameter", params, grads)
	check("input", dev.Data(x), dxs)
}
