// Package layers builds networks on a gpu.Device out of layers: each has a
// forward pass, a backward pass and parameters it registers with the
// network's Params. Dense and convolutional layers are here; the Layer
// interface is the shape embedding, normalisation and attention layers take
// too. Kernels stay in gpu; a layer only calls them.
package layers

import (
	"math"
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/gpu"
)

// Params collects a network's parameters: layers register their tensors in
// order (Add), each initialised on the host as it is added; Build then makes
// one flat parameter tensor and one flat gradient tensor on the device (so
// that clipping and Adam are one call each) and turns every registered
// tensor into a view of them. The order of registration is the order of
// the flat tensors, of random draws at initialisation and of Named.
type Params struct {
	list        []*Param
	host        []float32
	flat, grads gpu.Tensor
}

// Param is one registered tensor: its value (NamedTensor.T) and gradient
// (G), views into the flat tensors once built, and how it is exported.
type Param struct {
	NamedTensor
	G gpu.Tensor
	// Init holds the initial values in the stored layout until Build
	// uploads them; zero unless an initialiser set them.
	Init []float32
	off  int
}

// NamedTensor is one parameter tensor for export. Weights are stored
// in×out on the device; Transposed says the exported (PyTorch) layout is
// out×in. Shape and Index, when set, give any other exported layout (a
// convolution's out×in×kh×kw): the exported tensor has shape Shape and its
// element e is element Index[e] of T.
type NamedTensor struct {
	Name       string
	T          gpu.Tensor
	Transposed bool
	Shape      []int
	Index      []int
}

// Add registers a rows×cols tensor named name, exported as layout says
// (layout's T is ignored), with zero initial values.
func (p *Params) Add(name string, rows, cols int, layout NamedTensor) *Param {
	if p.flat.Rows != 0 {
		panic("layers: Params.Add after Build")
	}
	layout.Name, layout.T = name, gpu.Tensor{Rows: rows, Cols: cols}
	off := len(p.host)
	p.host = append(p.host, make([]float32, rows*cols)...)
	prm := &Param{NamedTensor: layout, off: off}
	p.list = append(p.list, prm)
	for _, q := range p.list { // the host slice may have moved
		q.Init = p.host[q.off : q.off+q.T.Len()]
	}
	return prm
}

// Len is the number of parameters registered.
func (p *Params) Len() int { return len(p.host) }

// Build allocates the flat tensors on dev, points every parameter at its
// part of them and uploads the initial values.
func (p *Params) Build(dev gpu.Device) {
	n := len(p.host)
	p.flat, p.grads = dev.Alloc(1, n), dev.Alloc(1, n)
	for _, q := range p.list {
		q.T = p.flat.Slice(q.off, q.T.Rows, q.T.Cols)
		q.G = p.grads.Slice(q.off, q.T.Rows, q.T.Cols)
	}
	dev.Upload(p.flat, p.host)
	for _, q := range p.list {
		q.Init = nil
	}
	p.host = nil
}

// Flat and Grads are the flat parameter and gradient tensors, after Build.
func (p *Params) Flat() gpu.Tensor  { return p.flat }
func (p *Params) Grads() gpu.Tensor { return p.grads }

// Named lists the registered tensors in order, for checkpoints.
func (p *Params) Named() []NamedTensor {
	out := make([]NamedTensor, len(p.list))
	for i, q := range p.list {
		out[i] = q.NamedTensor
	}
	return out
}

// ExportShape is the shape of the exported tensor: Shape when set, out×in
// for a transposed weight, a vector for a single row (biases, log-stds),
// else rows×cols.
func (nt NamedTensor) ExportShape() []int {
	switch {
	case nt.Shape != nil:
		return nt.Shape
	case nt.Transposed:
		return []int{nt.T.Cols, nt.T.Rows}
	case nt.T.Rows == 1:
		return []int{nt.T.Cols}
	}
	return []int{nt.T.Rows, nt.T.Cols}
}

// Export writes the stored values src (T.Len() of them, in T's layout) into
// dst in the exported layout.
func (nt NamedTensor) Export(dst, src []float32) {
	switch {
	case nt.Index != nil:
		for e, i := range nt.Index {
			dst[e] = src[i]
		}
	case nt.Transposed:
		for r := 0; r < nt.T.Rows; r++ {
			for c := 0; c < nt.T.Cols; c++ {
				dst[c*nt.T.Rows+r] = src[r*nt.T.Cols+c]
			}
		}
	default:
		copy(dst, src)
	}
}

// Import is Export's inverse: exported values src into dst in T's layout.
func (nt NamedTensor) Import(dst, src []float32) {
	switch {
	case nt.Index != nil:
		for e, i := range nt.Index {
			dst[i] = src[e]
		}
	case nt.Transposed:
		for r := 0; r < nt.T.Rows; r++ {
			for c := 0; c < nt.T.Cols; c++ {
				dst[r*nt.T.Cols+c] = src[c*nt.T.Rows+r]
			}
		}
	default:
		copy(dst, src)
	}
}

// Init initialises a registered weight; nil leaves it zero.
type Init func(w *Param)

// Orthogonal initialises a weight as torch.nn.init.orthogonal_ does its
// exported (PyTorch) tensor, flattened to out × the rest, scaled by gain:
// CleanRL's layer_init. The draws come from rng in registration order.
func Orthogonal(gain float64, rng *rand.Rand) Init {
	return func(w *Param) {
		shape := w.ExportShape()
		out := shape[0]
		torch := make([]float32, w.T.Len())
		orthogonal(torch, out, len(torch)/out, gain, rng)
		w.Import(w.Init, torch)
	}
}

// Fill initialises a tensor to one value (a Gaussian policy's log-stds).
func Fill(v float64) Init {
	return func(w *Param) {
		for i := range w.Init {
			w.Init[i] = float32(v)
		}
	}
}

// orthogonal fills w (rows×cols, row-major) with a random orthogonal matrix
// scaled by gain, as torch.nn.init.orthogonal_: the Q of a Gaussian
// matrix's QR decomposition with R's diagonal made positive.
func orthogonal(w []float32, rows, cols int, gain float64, rng *rand.Rand) {
	// Orthonormalise the vectors along the longer side's complement: with
	// rows ≥ cols the columns are orthonormal, otherwise the rows.
	long, short := rows, cols
	if rows < cols {
		long, short = cols, rows
	}
	q := make([][]float64, short) // short vectors of length long
	for i := range q {
		q[i] = make([]float64, long)
		for j := range q[i] {
			q[i][j] = rng.NormFloat64()
		}
	}
	// Modified Gram-Schmidt: each vector loses its projections on the
	// earlier ones, then is normalised (R's diagonal comes out positive).
	for i := range q {
		for k := 0; k < i; k++ {
			var dot float64
			for j := range q[i] {
				dot += q[i][j] * q[k][j]
			}
			for j := range q[i] {
				q[i][j] -= dot * q[k][j]
			}
		}
		var norm float64
		for _, v := range q[i] {
			norm += v * v
		}
		norm = math.Sqrt(norm)
		for j := range q[i] {
			q[i][j] /= norm
		}
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if rows >= cols {
				w[r*cols+c] = float32(gain * q[c][r]) // columns orthonormal
			} else {
				w[r*cols+c] = float32(gain * q[r][c]) // rows orthonormal
			}
		}
	}
}

// grow returns t when it holds at least rows rows of cols, else a new
// rows×cols tensor: buffers are made for the largest batch asked for and
// then reused.
func grow(dev gpu.Device, t gpu.Tensor, rows, cols int) gpu.Tensor {
	if t.Rows >= rows && t.Cols == cols {
		return t
	}
	return dev.Alloc(rows, cols)
}
