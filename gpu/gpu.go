// Package gpu is the compute device that policy networks, PPO losses and the
// optimizer run on: one Device interface, a pure-Go CPU implementation in the
// default build, and a CUDA implementation behind the `cuda` build tag.
//
// Everything the update needs stays on the device: parameters and gradients
// live in flat tensors (so clipping and Adam are one call each), the losses
// are fused ops that write gradients directly, and statistics accumulate in a
// small device tensor that the trainer reads once per epoch.
package gpu

import "fmt"

// Activation is an elementwise nonlinearity applied after a bias add.
type Activation uint8

const (
	Identity Activation = iota
	Tanh
	ReLU
)

// ParseActivation maps a config name to an Activation.
func ParseActivation(name string) (Activation, error) {
	switch name {
	case "tanh":
		return Tanh, nil
	case "relu":
		return ReLU, nil
	case "identity", "linear":
		return Identity, nil
	}
	return 0, fmt.Errorf("unknown activation %q (choose tanh or relu)", name)
}

// Tensor is a row-major float32 matrix, or a view into one, held by a Device.
// It is a small value: views share storage with the tensor they came from.
type Tensor struct {
	Rows, Cols int
	buf        any // the device's storage handle
	off        int // element offset of the view into buf
}

// Len is the number of elements.
func (t Tensor) Len() int { return t.Rows * t.Cols }

// Offset is the element offset of this view into its storage.
func (t Tensor) Offset() int { return t.off }

// Storage is the device-specific storage handle; only devices use it.
func (t Tensor) Storage() any { return t.buf }

// NewTensor wraps device storage; only Device implementations call it.
func NewTensor(buf any, off, rows, cols int) Tensor {
	return Tensor{Rows: rows, Cols: cols, buf: buf, off: off}
}

// RowRange is the view of rows [from, to).
func (t Tensor) RowRange(from, to int) Tensor {
	if from < 0 || to > t.Rows || from > to {
		panic(fmt.Sprintf("gpu: row range [%d,%d) out of %d rows", from, to, t.Rows))
	}
	return Tensor{Rows: to - from, Cols: t.Cols, buf: t.buf, off: t.off + from*t.Cols}
}

// Slice is a rows×cols view starting at element offset off of t (which must
// be contiguous, as every tensor and row range is).
func (t Tensor) Slice(off, rows, cols int) Tensor {
	if off < 0 || off+rows*cols > t.Len() {
		panic(fmt.Sprintf("gpu: slice [%d,+%d×%d) out of %d elements", off, rows, cols, t.Len()))
	}
	return Tensor{Rows: rows, Cols: cols, buf: t.buf, off: t.off + off}
}

// Reshape views the same elements with another shape.
func (t Tensor) Reshape(rows, cols int) Tensor {
	if rows*cols != t.Len() {
		panic(fmt.Sprintf("gpu: cannot reshape %d×%d to %d×%d", t.Rows, t.Cols, rows, cols))
	}
	return Tensor{Rows: rows, Cols: cols, buf: t.buf, off: t.off}
}

// Indices into the statistics tensor that the loss ops accumulate into.
// Each op adds its minibatch mean, so dividing by the minibatch count gives
// the mean over minibatches.
const (
	StatPolicyLoss = iota
	StatValueLoss
	StatEntropy
	StatApproxKL
	StatClipFrac
	StatGradNorm
	NumStats
)

// PPOPolicyArgs are the inputs of a fused clipped-surrogate policy loss over
// one minibatch of B samples. Gradients of (policy loss − EntCoef·entropy),
// averaged over the minibatch, are written to the D* tensors.
type PPOPolicyArgs struct {
	Out     Tensor // B×A categorical logits, or B×A Gaussian means
	LogStd  Tensor // 1×A state-independent log-std (Gaussian only)
	Actions Tensor // B×1 action indices (categorical) or B×A actions (Gaussian)
	OldLogp Tensor // B×1 log-probabilities at rollout time
	Adv     Tensor // B×1 advantages

	DOut    Tensor // B×A gradient with respect to Out (overwritten)
	DLogStd Tensor // 1×A gradient with respect to LogStd (overwritten; Gaussian only)

	ClipCoef float32
	EntCoef  float32
	NormAdv  bool // normalise advantages within the minibatch

	// Mask is B×1: 1 on the rows that are the policy's (a language model's
	// generated tokens), 0 on the others (a prompt's, an environment's),
	// which get no gradient and count in no mean; empty means every row.
	// The token distribution honours it (agents/dist.Tokens); the fused
	// categorical and Gaussian losses take every row.
	Mask Tensor

	Stats Tensor // 1×NumStats accumulator
}

// ValueArgs are the inputs of the (optionally clipped) value loss over one
// minibatch. The gradient of VFCoef·loss is written to DValue.
type ValueArgs struct {
	Value, OldValue, Returns Tensor // B×1 each
	DValue                   Tensor // B×1 (overwritten)
	ClipCoef                 float32
	Clip                     bool
	VFCoef                   float32
	Stats                    Tensor
}

// AdamArgs are Adam's hyperparameters for one step; Step counts from 1.
type AdamArgs struct {
	LR, Beta1, Beta2, Eps float32
	Step                  int
}

// HostMemory is a device whose tensors are host memory (the CPU): a host
// slice can be read on it in place, where another device needs a copy.
type HostMemory interface {
	// Wrap returns a rows×cols tensor over data[:rows·cols], sharing it.
	Wrap(data []float32, rows, cols int) Tensor
}

// PrepareTransformer readies dev's transformer ops (the CUDA device compiles
// their kernels), so that a failure is an error when a model is made
// (agents/lm calls it for every model) rather than a panic in its first
// pass. A device with nothing to prepare returns nil.
func PrepareTransformer(dev Device) error {
	if p, ok := dev.(interface{ PrepareTransformer() error }); ok {
		return p.PrepareTransformer()
	}
	return nil
}

// Device runs the tensor work of the policy forward and backward passes, the
// PPO losses and the optimizer. A Device is used from one goroutine at a time.
type Device interface {
	// Name says what the device is, e.g. "cpu (2 threads)".
	Name() string
	// Alloc returns a zeroed rows×cols tensor.
	Alloc(rows, cols int) Tensor
	// Upload copies len(src) = dst.Len() host values into dst.
	Upload(dst Tensor, src []float32)
	// Download copies src into dst[:src.Len()].
	Download(dst []float32, src Tensor)
	// Fill sets every element of t to v.
	Fill(t Tensor, v float32)
	// Copy copies src into dst (same length).
	Copy(dst, src Tensor)

	// MatMul computes C = op(A)·op(B) + beta·C, where op transposes when asked.
	MatMul(c, a Tensor, transA bool, b Tensor, transB bool, beta float32)
	// BiasAct computes X[i,:] = act(X[i,:] + bias) in place; bias is 1×cols.
	BiasAct(x, bias Tensor, act Activation)
	// ActGrad multiplies dY in place by act'(·), expressed through the
	// activation's output Y.
	ActGrad(dy, y Tensor, act Activation)
	// ColSum computes out[j] = Σ_i X[i,j] + beta·out[j]; out is 1×cols.
	ColSum(out, x Tensor, beta float32)
	// GatherRows copies src rows idx[0], idx[1], … into dst's rows.
	GatherRows(dst, src Tensor, idx []int32)
	// Im2Col writes the patches of the B channel-last images x (B×H·W·C)
	// into cols ((B·OH·OW)×(K·K·C), layout in Conv2D's doc), zeros where a
	// patch covers padding: a convolution is then one MatMul.
	Im2Col(cols, x Tensor, g Conv2D)
	// Col2Im is Im2Col's adjoint (a convolution's input gradient): dx
	// (B×H·W·C) is overwritten with the sum, for every pixel, of the patch
	// elements of cols that Im2Col would have read from it.
	Col2Im(dx, cols Tensor, g Conv2D)

	// CategoricalPPO is the fused clipped-surrogate loss for a categorical policy.
	CategoricalPPO(a PPOPolicyArgs)
	// GaussianPPO is the fused clipped-surrogate loss for a diagonal Gaussian.
	GaussianPPO(a PPOPolicyArgs)
	// ValueLoss is the fused value loss.
	ValueLoss(a ValueArgs)
	// ClipGradNorm scales grads so that their global L2 norm is at most
	// maxNorm (PyTorch's clip_grad_norm_), adding the pre-clip norm to
	// stats[StatGradNorm].
	ClipGradNorm(grads Tensor, maxNorm float32, stats Tensor)
	// Adam applies one Adam step (PyTorch's formulation) to params.
	Adam(params, grads, m, v Tensor, a AdamArgs)

	// Close releases the device's threads and memory. The CPU device keeps
	// working afterwards (on one core); others may not.
	Close()
}

// Concurrent is a Device that can run two independent streams of work at
// once (the CPU device, on two cores). A learner uses it to run its actor and
// critic passes side by side; the arithmetic of each is unchanged.
type Concurrent interface {
	Device
	// Both runs side and main at the same time, each with a handle of its
	// own onto the same memory, and returns when both are done. Without a
	// second core it runs them one after the other on the device itself.
	Both(side, main func(Device))
}

// FusedActGrad is a Device that takes an input gradient through the
// previous layer's activation as it computes it: C = (A·Bᵀ) ⊙ act′(Y), as
// MatMul(C, A, false, B, true, 0) then ActGrad(C, Y, act) would, with the
// same bits. The CPU masks each block of C while it is still in cache,
// instead of reading a MinAtar minibatch's 4 MB of it back.
type FusedActGrad interface {
	MatMulActGrad(c, a, b, y Tensor, act Activation)
}

// MatMulActGrad sets C = (A·Bᵀ) ⊙ act′(Y) on d: in one pass where d is a
// FusedActGrad, else as MatMul then ActGrad.
func MatMulActGrad(d Device, c, a, b, y Tensor, act Activation) {
	if f, ok := d.(FusedActGrad); ok {
		f.MatMulActGrad(c, a, b, y, act)
		return
	}
	d.MatMul(c, a, false, b, true, 0)
	d.ActGrad(c, y, act)
}

// matMulShape returns the m×k · k×n shape of C = op(A)·op(B), panicking when
// the operands do not fit (a programming error, as with slice bounds).
func matMulShape(c, a Tensor, transA bool, b Tensor, transB bool) (m, n, k int) {
	m, k = a.Rows, a.Cols
	if transA {
		m, k = k, m
	}
	kb, n := b.Rows, b.Cols
	if transB {
		kb, n = n, kb
	}
	if k != kb || c.Rows != m || c.Cols != n {
		panic(fmt.Sprintf("gpu: matmul shapes %d×%d (t=%v) · %d×%d (t=%v) → %d×%d",
			a.Rows, a.Cols, transA, b.Rows, b.Cols, transB, c.Rows, c.Cols))
	}
	return m, n, k
}
