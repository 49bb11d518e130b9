package layers

import "github.com/agenttrainer/agenttrainer/gpu"

// Layer is one step of a network on a device: the shape every layer takes
// (dense, convolution; embedding, normalisation, attention next).
//
// A layer registers its parameters with the network's Params when it is
// made, sizes its buffers for the largest batch it has seen (so that a pass
// allocates nothing once they are sized), and keeps from its last Forward
// what its Backward needs. Gradients flow down as gradients of a layer's
// output before its activation ("dz"): whoever makes a layer's dz takes the
// activation's derivative, so that the layer above can fold it into the
// product that makes its input gradient (one pass on a device that fuses
// them, gpu.FusedActGrad).
type Layer interface {
	// Forward computes the layer's output for the rows of x, its
	// activation applied, and keeps x (and what else Backward needs). The
	// output is the layer's own buffer, valid until its next Forward.
	Forward(dev gpu.Device, x gpu.Tensor) gpu.Tensor
	// Backward takes dz, the gradient of the loss with respect to the last
	// Forward's output before the activation, sets the gradients of the
	// layer's parameters (overwriting them) and hands the gradient with
	// respect to its input on as in says.
	Backward(dev gpu.Device, dz gpu.Tensor, in InputGrad)
	// Grad is the layer's buffer for the dz of rows rows: where the layer
	// above, or a loss, writes it.
	Grad(rows int) gpu.Tensor
	// Activation is what the layer applies to its output; the layer above
	// takes its derivative (InputGrad.Through).
	Activation() gpu.Activation
	// Params are the layer's registered tensors.
	Params() []*Param
}

// InputGrad says what a Backward does with the gradient with respect to the
// layer's input x.
type InputGrad struct {
	// DX receives it; an empty tensor (a first layer's) skips it.
	DX gpu.Tensor
	// Add adds it to what DX holds (a second head on the same features, a
	// residual connection) instead of overwriting DX.
	Add bool
	// Through is the activation that made x (the layer below's): DX then
	// ends as the gradient before it, (DX ⊙ Through′(x)), ready to be
	// that layer's dz. Identity leaves the gradient with respect to x.
	Through gpu.Activation
}

// Wanted reports whether the input gradient is asked for.
func (in InputGrad) Wanted() bool { return in.DX.Rows > 0 }

// Stack is layers applied in turn, each to the output of the one before.
type Stack []Layer

// Forward runs every layer; the last one's output is returned.
func (s Stack) Forward(dev gpu.Device, x gpu.Tensor) gpu.Tensor {
	for _, l := range s {
		x = l.Forward(dev, x)
	}
	return x
}

// Grad is the last layer's dz buffer: where the loss writes.
func (s Stack) Grad(rows int) gpu.Tensor { return s[len(s)-1].Grad(rows) }

// Backward runs every layer's Backward from the last, dz being the last
// layer's (usually in its Grad buffer); in is what the first layer does
// with its input gradient.
func (s Stack) Backward(dev gpu.Device, dz gpu.Tensor, in InputGrad) {
	rows := dz.Rows
	for i := len(s) - 1; i >= 0; i-- {
		next := in
		if i > 0 {
			next = InputGrad{DX: s[i-1].Grad(rows), Through: s[i-1].Activation()}
		}
		s[i].Backward(dev, dz, next)
		dz = next.DX
	}
}

// ZeroGrads sets the gradients of every layer's parameters to zero (a part
// of the network the loss does not reach this time).
func (s Stack) ZeroGrads(dev gpu.Device) {
	for _, l := range s {
		for _, p := range l.Params() {
			dev.Fill(p.G, 0)
		}
	}
}
