package layers

import (
	"fmt"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// Dense is a fully connected layer, y = act(x·W + b). W is stored in×out,
// so that the forward product needs no transpose, and exported as
// PyTorch's nn.Linear weight (out×in).
type Dense struct {
	In, Out int
	Act     gpu.Activation
	W, B    *Param

	params []*Param
	x      gpu.Tensor // the last Forward's input
	y, dz  gpu.Tensor // output and dz buffers, for the largest batch yet
}

// NewDense registers a dense layer named name ("actor.0": its tensors are
// name.weight and name.bias) in p, its weight initialised by init and its
// bias zero.
func NewDense(p *Params, name string, in, out int, act gpu.Activation, init Init) *Dense {
	return newDense(p, name, in, out, act, init, NamedTensor{Transposed: true})
}

// NewDenseOnImage is a dense layer whose input is a channel-last h×w×c map
// (a convolution's output, flattened as it lies): its weight is exported as
// PyTorch's nn.Linear after nn.Flatten of the NCHW map, so that a
// checkpoint loads into the usual PyTorch module.
func NewDenseOnImage(p *Params, name string, h, w, c, out int, act gpu.Activation, init Init) *Dense {
	in := h * w * c
	index := make([]int, in*out)
	for o := 0; o < out; o++ {
		for ch := 0; ch < c; ch++ {
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					index[o*in+(ch*h+y)*w+x] = ((y*w+x)*c+ch)*out + o
				}
			}
		}
	}
	return newDense(p, name, in, out, act, init, NamedTensor{Shape: []int{out, in}, Index: index})
}

func newDense(p *Params, name string, in, out int, act gpu.Activation, init Init, layout NamedTensor) *Dense {
	l := &Dense{In: in, Out: out, Act: act}
	l.W = p.Add(name+".weight", in, out, layout)
	if init != nil {
		init(l.W)
	}
	l.B = p.Add(name+".bias", 1, out, NamedTensor{})
	l.params = []*Param{l.W, l.B}
	return l
}

// Forward implements Layer.
func (l *Dense) Forward(dev gpu.Device, x gpu.Tensor) gpu.Tensor {
	y := l.out(dev, x)
	dev.MatMul(y, x, false, l.W.T, false, 0)
	dev.BiasAct(y, l.B.T, l.Act)
	return y
}

// out keeps x and returns the output buffer for its rows.
func (l *Dense) out(dev gpu.Device, x gpu.Tensor) gpu.Tensor {
	if x.Cols != l.In {
		panic(fmt.Sprintf("layers: a dense layer of %d inputs given %d", l.In, x.Cols))
	}
	l.y, l.dz = grow(dev, l.y, x.Rows, l.Out), grow(dev, l.dz, x.Rows, l.Out)
	l.x = x
	return l.y.RowRange(0, x.Rows)
}

// Backward implements Layer.
func (l *Dense) Backward(dev gpu.Device, dz gpu.Tensor, in InputGrad) {
	dev.MatMul(l.W.G, l.x, true, dz, false, 0)
	dev.ColSum(l.B.G, dz, 0)
	if !in.Wanted() {
		return
	}
	if in.Through != gpu.Identity && !in.Add {
		gpu.MatMulActGrad(dev, in.DX, dz, l.W.T, l.x, in.Through)
		return
	}
	beta := float32(0)
	if in.Add {
		beta = 1
	}
	dev.MatMul(in.DX, dz, false, l.W.T, true, beta)
	if in.Through != gpu.Identity {
		dev.ActGrad(in.DX, l.x, in.Through)
	}
}

// Grad implements Layer.
func (l *Dense) Grad(rows int) gpu.Tensor {
	return l.dz.RowRange(0, rows)
}

// Activation implements Layer.
func (l *Dense) Activation() gpu.Activation { return l.Act }

// Params implements Layer.
func (l *Dense) Params() []*Param { return l.params }
