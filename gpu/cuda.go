//go:build cuda

package gpu

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gorgonia.org/cu"
	cublas "gorgonia.org/cu/blas"

	"github.com/agenttrainer/agenttrainer/gpu/cudainit"
)

// CUDA is the NVIDIA GPU device: cuBLAS for matrix products, NVRTC-compiled
// kernels (cuda_kernels.go) for everything else, every tensor resident in
// device memory.
//
// A CUDA context belongs to an OS thread, so one goroutine, locked to its
// thread, owns the context and makes every driver and cuBLAS call; the
// methods marshal work to it over a channel. Work that returns nothing to
// the host (kernels, products, device copies, small uploads) is queued
// without waiting: the owner launches it in order on the default stream
// while the caller goes on. Alloc, Download and large Uploads wait for the
// owner. An error in queued work is reported by the next call that waits,
// as a panic, the way the CPU device reports misuse.
//
// Memory lives until Close: the trainer allocates its tensors once per run.
type CUDA struct {
	ordinal          int
	name             string
	totalMem         int64
	ccMajor, ccMinor int
	sms              int
	arch             string // the NVRTC target the kernels were built for
	driver           int

	ops    chan cudaOp
	reply  chan error
	closed bool

	// Caller-side cache of the gather indices last sent to idxBuf.
	lastIdx          []int32
	lastMin, lastMax int32

	// Owner-side state: touched only by the owner goroutine.
	ctx     cu.CUContext
	dev     cu.Device
	blas    *cublas.Standard
	mod     cu.Module
	fn      map[string]cu.Function
	allocs  []cu.DevicePtr
	failure error        // the first error of queued work
	counter cu.DevicePtr // u32 ticket of the last-block reductions
	misc    cu.DevicePtr // doubles: adv mean, adv 1/std, clip coefficient
	partial cu.DevicePtr // doubles: per-block partial sums
	idxBuf  scratch      // int32 gather indices
	colPart scratch      // doubles: colsum chunk sums
}

const (
	miscAdv  = 0 // two doubles
	miscCoef = 2 // one double
	miscLen  = 4
	// Upload copies up to this many values and returns at once; larger
	// uploads wait for the copy instead of duplicating the data.
	asyncUploadMax = 1 << 16
)

type cudaOp struct {
	name string
	fn   func() error
	sync bool
}

// scratch is a device buffer that grows on demand (owner side).
type scratch struct {
	ptr   cu.DevicePtr
	bytes int64
}

// cudaBuf is the storage of a CUDA tensor.
type cudaBuf struct {
	dev *CUDA
	ptr cu.DevicePtr
	n   int
}

// OpenCUDA opens GPU number ordinal: it retains the primary context on a
// dedicated OS thread, creates a cuBLAS handle and loads the kernels
// (compiled by NVRTC on first use in the process).
func OpenCUDA(ordinal int) (*CUDA, error) {
	if err := cudainit.Err(); err != nil {
		return nil, err
	}
	d := &CUDA{ordinal: ordinal, ops: make(chan cudaOp, 4096), reply: make(chan error, 1)}
	ready := make(chan error)
	go d.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return d, nil
}

// loop is the owner goroutine.
func (d *CUDA) loop(ready chan<- error) {
	// Never unlocked: when the goroutine ends (Close), its thread ends too,
	// taking nothing of the context's thread state to other goroutines.
	runtime.LockOSThread()
	if err := d.setup(); err != nil {
		d.teardown()
		ready <- err
		return
	}
	ready <- nil
	for op := range d.ops {
		var err error
		if d.failure != nil && op.name != "close" {
			err = fmt.Errorf("an earlier operation failed: %w", d.failure)
		} else {
			err = runOp(op)
		}
		if op.sync {
			d.reply <- err
			if op.name == "close" {
				return
			}
		} else if err != nil && d.failure == nil {
			d.failure = err
		}
	}
}

func runOp(op cudaOp) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: panic: %v", op.name, r)
		}
	}()
	if err := op.fn(); err != nil {
		return fmt.Errorf("%s: %w", op.name, err)
	}
	return nil
}

func (d *CUDA) setup() error {
	n, err := cu.NumDevices()
	if err != nil {
		return fmt.Errorf("cuDeviceGetCount: %v", err)
	}
	if d.ordinal < 0 || d.ordinal >= n {
		return fmt.Errorf("no GPU number %d: the driver sees %d", d.ordinal, n)
	}
	if d.dev, err = cu.GetDevice(d.ordinal); err != nil {
		return fmt.Errorf("cuDeviceGet(%d): %v", d.ordinal, err)
	}
	if d.name, err = d.dev.Name(); err != nil {
		return err
	}
	if d.totalMem, err = d.dev.TotalMem(); err != nil {
		return err
	}
	if d.ccMajor, d.ccMinor, err = d.dev.ComputeCapability(); err != nil {
		return err
	}
	if d.sms, err = d.dev.Attribute(cu.MultiprocessorCount); err != nil {
		return err
	}
	d.driver = cu.Version()
	if d.ctx, err = d.dev.RetainPrimaryCtx(); err != nil {
		return fmt.Errorf("cuDevicePrimaryCtxRetain: %v", err)
	}
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return fmt.Errorf("cuCtxSetCurrent: %v", err)
	}
	ptx, arch, err := kernelPTX(d.ccMajor, d.ccMinor)
	if err != nil {
		return err
	}
	d.arch = arch
	if d.mod, err = cu.LoadData(ptx); err != nil {
		return fmt.Errorf("cuModuleLoadData (%s PTX on compute capability %d.%d): %v", arch, d.ccMajor, d.ccMinor, err)
	}
	d.fn = map[string]cu.Function{}
	for _, name := range kernelNames {
		f, err := d.mod.Function(name)
		if err != nil {
			return fmt.Errorf("kernel %s: %v", name, err)
		}
		d.fn[name] = f
	}
	h := new(cublas.Standard)
	if err := h.Init(); err != nil {
		return err
	}
	d.blas = h
	if d.counter, err = d.alloc(16); err != nil {
		return err
	}
	if d.misc, err = d.alloc(8 * miscLen); err != nil {
		return err
	}
	if d.partial, err = d.alloc(8 * maxReduceBlocks * (3 + MaxGaussianDims + 1)); err != nil {
		return err
	}
	return nil
}

// teardown releases everything the owner holds.
func (d *CUDA) teardown() error {
	var errs []error
	if d.ctx != (cu.CUContext{}) {
		errs = append(errs, cu.Synchronize())
	}
	for _, p := range d.allocs {
		errs = append(errs, cu.MemFree(p))
	}
	d.allocs = nil
	if d.blas != nil {
		errs = append(errs, d.blas.Close())
		d.blas = nil
	}
	if d.fn != nil {
		errs = append(errs, d.mod.Unload())
		d.fn = nil
	}
	if d.ctx != (cu.CUContext{}) {
		errs = append(errs, d.dev.ReleasePrimaryCtx())
		d.ctx = cu.CUContext{}
	}
	return errors.Join(errs...)
}

// alloc allocates zeroed device memory (owner side).
func (d *CUDA) alloc(bytes int64) (cu.DevicePtr, error) {
	p, err := cu.MemAlloc(bytes)
	if err != nil {
		free, total, _ := cu.MemInfo()
		return 0, fmt.Errorf("cuMemAlloc(%d bytes): %v (%.2f of %.2f GiB free)", bytes, err, gib(free), gib(total))
	}
	if err := cu.MemsetD8(p, 0, bytes); err != nil {
		cu.MemFree(p)
		return 0, err
	}
	d.allocs = append(d.allocs, p)
	return p, nil
}

// grow makes s hold at least bytes (owner side). The old buffer may still
// be read by queued kernels, so the device is synchronised before it goes.
func (d *CUDA) grow(s *scratch, bytes int64) error {
	if s.bytes >= bytes {
		return nil
	}
	if s.ptr != 0 {
		if err := cu.Synchronize(); err != nil {
			return err
		}
		if err := cu.MemFree(s.ptr); err != nil {
			return err
		}
		d.allocs = slices.DeleteFunc(d.allocs, func(p cu.DevicePtr) bool { return p == s.ptr })
		s.ptr, s.bytes = 0, 0
	}
	bytes = max(bytes, 2*s.bytes)
	p, err := d.alloc(bytes)
	if err != nil {
		return err
	}
	s.ptr, s.bytes = p, bytes
	return nil
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }

// do runs fn on the owner and waits for it; errors panic.
func (d *CUDA) do(name string, fn func() error) {
	if d.closed {
		panic("gpu: use of a closed CUDA device")
	}
	d.ops <- cudaOp{name: name, fn: fn, sync: true}
	if err := <-d.reply; err != nil {
		panic(fmt.Sprintf("gpu: cuda:%d: %v", d.ordinal, err))
	}
}

// queue hands fn to the owner without waiting.
func (d *CUDA) queue(name string, fn func() error) {
	if d.closed {
		panic("gpu: use of a closed CUDA device")
	}
	d.ops <- cudaOp{name: name, fn: fn}
}

// Sync waits until all queued work has run, and panics if any of it failed.
func (d *CUDA) Sync() { d.do("sync", func() error { return cu.Synchronize() }) }

// Close waits for queued work, frees every allocation, releases the context
// and ends the owner goroutine. The device cannot be used afterwards.
func (d *CUDA) Close() {
	if d.closed {
		return
	}
	d.ops <- cudaOp{name: "close", fn: d.teardown, sync: true}
	err := <-d.reply
	d.closed = true
	close(d.ops)
	if err != nil {
		panic(fmt.Sprintf("gpu: cuda:%d: close: %v", d.ordinal, err))
	}
}

// Name implements Device.
func (d *CUDA) Name() string {
	return fmt.Sprintf("cuda:%d %s (%.1f GiB, compute %d.%d)", d.ordinal, d.name, gib(d.totalMem), d.ccMajor, d.ccMinor)
}

// Info describes the device in more detail than Name: driver version,
// multiprocessors and the kernels' NVRTC target.
func (d *CUDA) Info() string {
	return fmt.Sprintf("%s, %d SMs, driver API %d.%d, kernels built for %s", d.Name(), d.sms,
		d.driver/1000, d.driver%1000/10, d.arch)
}

// ptr is the device address of t's first element.
func (d *CUDA) ptr(t Tensor) cu.DevicePtr {
	b, ok := t.Storage().(*cudaBuf)
	if !ok || b.dev != d {
		panic("gpu: tensor does not belong to this CUDA device")
	}
	if t.Offset()+t.Len() > b.n {
		panic("gpu: tensor view out of its storage")
	}
	return b.ptr + cu.DevicePtr(4*t.Offset())
}

// devSlice is the []float32 cuBLAS takes: its first element's address is
// the device pointer p. Never read it from Go.
func devSlice(p cu.DevicePtr, n int) []float32 {
	return unsafe.Slice((*float32)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}

// Alloc implements Device.
func (d *CUDA) Alloc(rows, cols int) Tensor {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("gpu: alloc of %d×%d", rows, cols))
	}
	b := &cudaBuf{dev: d, n: rows * cols}
	if b.n > 0 {
		d.do("alloc", func() (err error) {
			b.ptr, err = d.alloc(4 * int64(b.n))
			return err
		})
	}
	return NewTensor(b, 0, rows, cols)
}

// Upload implements Device.
func (d *CUDA) Upload(dst Tensor, src []float32) {
	if len(src) != dst.Len() {
		panic(fmt.Sprintf("gpu: upload of %d values into %d×%d tensor", len(src), dst.Rows, dst.Cols))
	}
	if len(src) == 0 {
		return
	}
	p, bytes := d.ptr(dst), 4*int64(len(src))
	if len(src) <= asyncUploadMax {
		host := slices.Clone(src) // the caller may reuse src at once
		d.queue("upload", func() error { return cu.MemcpyHtoD(p, unsafe.Pointer(&host[0]), bytes) })
		return
	}
	d.do("upload", func() error { return cu.MemcpyHtoD(p, unsafe.Pointer(&src[0]), bytes) })
}

// Download implements Device.
func (d *CUDA) Download(dst []float32, src Tensor) {
	n := src.Len()
	dst = dst[:n]
	if n == 0 {
		return
	}
	p := d.ptr(src)
	d.do("download", func() error { return cu.MemcpyDtoH(unsafe.Pointer(&dst[0]), p, 4*int64(n)) })
}

// Fill implements Device.
func (d *CUDA) Fill(t Tensor, v float32) {
	n := t.Len()
	if n == 0 {
		return
	}
	p := d.ptr(t)
	d.queue("fill", func() error { return d.launch("fill_f32", gridFor(n), p, u(n), f(v)) })
}

// Copy implements Device.
func (d *CUDA) Copy(dst, src Tensor) {
	if dst.Len() != src.Len() {
		panic("gpu: copy between tensors of different length")
	}
	if dst.Len() == 0 {
		return
	}
	pd, ps, bytes := d.ptr(dst), d.ptr(src), 4*int64(dst.Len())
	d.queue("copy", func() error { return cu.MemcpyDtoD(pd, ps, bytes) })
}

// MatMul implements Device. cuBLAS is column-major and a row-major matrix
// read column-major is its transpose, so the row-major C = op(A)·op(B) is
// computed as the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ.
func (d *CUDA) MatMul(c, a Tensor, transA bool, b Tensor, transB bool, beta float32) {
	m, n, k := matMulShape(c, a, transA, b, transB)
	if m == 0 || n == 0 {
		return
	}
	pc := d.ptr(c)
	if k == 0 { // C = beta·C
		switch beta {
		case 1:
		case 0:
			d.Fill(c, 0)
		default:
			d.queue("matmul", func() error { return d.launch("scale_f32", gridFor(m*n), pc, u(m*n), f(beta)) })
		}
		return
	}
	pa, pb := d.ptr(a), d.ptr(b)
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	lenA, lenB, lenC := a.Len(), b.Len(), c.Len()
	lda, ldb := a.Cols, b.Cols
	d.queue("matmul", func() error {
		d.blas.Sgemm(tb, ta, n, m, k, 1, devSlice(pb, lenB), ldb, devSlice(pa, lenA), lda, beta, devSlice(pc, lenC), n)
		return d.blas.Err()
	})
}

// BiasAct implements Device.
func (d *CUDA) BiasAct(x, bias Tensor, act Activation) {
	if bias.Len() != x.Cols {
		panic("gpu: bias length differs from column count")
	}
	if x.Len() == 0 {
		return
	}
	px, pb, rows, cols := d.ptr(x), d.ptr(bias), x.Rows, x.Cols
	d.queue("bias_act", func() error {
		return d.launch("bias_act", gridFor(rows*cols), px, pb, u(rows), u(cols), u(int(act)))
	})
}

// ActGrad implements Device.
func (d *CUDA) ActGrad(dy, y Tensor, act Activation) {
	n := y.Len()
	if dy.Len() < n {
		panic("gpu: activation gradient shorter than the activations")
	}
	if act == Identity || n == 0 {
		return
	}
	pg, py := d.ptr(dy), d.ptr(y)
	d.queue("act_grad", func() error { return d.launch("act_grad", gridFor(n), pg, py, u(n), u(int(act))) })
}

// ColSum implements Device.
func (d *CUDA) ColSum(out, x Tensor, beta float32) {
	cols, rows := x.Cols, x.Rows
	if out.Len() != cols {
		panic("gpu: colsum output length differs from column count")
	}
	if cols == 0 {
		return
	}
	po, px := d.ptr(out), cu.DevicePtr(0)
	if x.Len() > 0 {
		px = d.ptr(x)
	}
	chunkRows := max(colsumChunkRows, (rows+maxColsumChunks-1)/maxColsumChunks)
	chunks := max(1, (rows+chunkRows-1)/chunkRows)
	colBlocks := (cols + 31) / 32
	d.queue("colsum", func() error {
		var part cu.DevicePtr
		if chunks > 1 {
			if err := d.grow(&d.colPart, 8*int64(chunks*cols)); err != nil {
				return err
			}
			part = d.colPart.ptr
		}
		if err := d.launch2D("colsum_partial", colBlocks, chunks, 32, 8,
			px, po, part, u(rows), u(cols), u(chunkRows), f(beta)); err != nil {
			return err
		}
		if chunks == 1 {
			return nil
		}
		return d.launch("colsum_final", gridFor(cols), po, part, u(chunks), u(cols), f(beta))
	})
}

// GatherRows implements Device. The indices go to a device buffer; the
// PPO loop gathers several tensors with the same indices in a row, so an
// upload is skipped when they equal the last ones sent.
func (d *CUDA) GatherRows(dst, src Tensor, idx []int32) {
	cols := src.Cols
	if dst.Cols != cols || dst.Rows != len(idx) {
		panic("gpu: gather shape mismatch")
	}
	if len(idx) == 0 || cols == 0 {
		return
	}
	if !slices.Equal(idx, d.lastIdx) {
		host := slices.Clone(idx)
		d.lastIdx, d.lastMin, d.lastMax = host, slices.Min(host), slices.Max(host)
		bytes := 4 * int64(len(host))
		d.queue("gather indices", func() error {
			if err := d.grow(&d.idxBuf, bytes); err != nil {
				return err
			}
			return cu.MemcpyHtoD(d.idxBuf.ptr, unsafe.Pointer(&host[0]), bytes)
		})
	}
	if d.lastMin < 0 || int(d.lastMax) >= src.Rows {
		panic(fmt.Sprintf("gpu: gather index out of range [%d,%d] for %d rows", d.lastMin, d.lastMax, src.Rows))
	}
	pd, ps, rows := d.ptr(dst), d.ptr(src), len(idx)
	d.queue("gather", func() error {
		return d.launch("gather_rows", gridFor(rows*cols), pd, ps, d.idxBuf.ptr, u(rows), u(cols))
	})
}

// Im2Col implements Device.
func (d *CUDA) Im2Col(cols, x Tensor, g Conv2D) {
	d.conv("im2col", cols, x, g)
}

// Col2Im implements Device.
func (d *CUDA) Col2Im(dx, cols Tensor, g Conv2D) {
	d.conv("col2im", dx, cols, g)
}

// conv launches im2col (out: patches, in: images) or col2im (out: images,
// in: patches), one thread per element of out.
func (d *CUDA) conv(kernel string, out, in Tensor, g Conv2D) {
	B := 0
	if kernel == "im2col" {
		B = checkIm2Col(out, in, g)
	} else {
		B = checkIm2Col(in, out, g)
	}
	n := out.Len()
	if n == 0 {
		return
	}
	po, pi := d.ptr(out), d.ptr(in)
	oh, ow := g.Out()
	d.queue(kernel, func() error {
		return d.launch(kernel, gridFor(n), po, pi, u(B), u(g.H), u(g.W), u(g.C), u(g.K), u(g.Stride), u(g.Pad), u(oh), u(ow))
	})
}

// lossLaunch chooses how a loss over B samples runs: small minibatches run
// as one block that also normalises the advantages itself (one launch);
// larger ones get a grid, after an adv_stats launch when normalising.
func lossLaunch(B int, norm bool) (grid int, mode uint64) {
	grid = min(maxReduceBlocks, (B+blockThreads-1)/blockThreads)
	switch {
	case !norm:
		return grid, advRaw
	case B <= singleBlockMax:
		return 1, advBlock
	}
	return grid, advPrecomputed
}

func checkPolicyArgs(p PPOPolicyArgs, actCols int) (B, A int) {
	B, A = p.Out.Rows, p.Out.Cols
	if p.DOut.Rows != B || p.DOut.Cols != A || p.Actions.Rows != B || p.Actions.Cols != actCols ||
		p.OldLogp.Len() != B || p.Adv.Len() != B || p.Stats.Len() < NumStats || A == 0 {
		panic(fmt.Sprintf("gpu: PPO loss shapes: out %d×%d, dOut %d×%d, actions %d×%d, old logp %d, adv %d, stats %d",
			B, A, p.DOut.Rows, p.DOut.Cols, p.Actions.Rows, p.Actions.Cols, p.OldLogp.Len(), p.Adv.Len(), p.Stats.Len()))
	}
	return B, A
}

// CategoricalPPO implements Device.
func (d *CUDA) CategoricalPPO(p PPOPolicyArgs) {
	B, A := checkPolicyArgs(p, 1)
	if B == 0 {
		return
	}
	out, acts, old, adv, dout, stats := d.ptr(p.Out), d.ptr(p.Actions), d.ptr(p.OldLogp), d.ptr(p.Adv), d.ptr(p.DOut), d.ptr(p.Stats)
	grid, mode := lossLaunch(B, p.NormAdv)
	clip, ent := float64(p.ClipCoef), float64(p.EntCoef)
	d.queue("categorical PPO loss", func() error {
		advStats := d.misc + 8*miscAdv
		if mode == advPrecomputed {
			if err := d.launch("adv_stats", 1, adv, u(B), advStats); err != nil {
				return err
			}
		}
		return d.launchN("categorical_ppo", grid, blockThreads, out, acts, old, adv, dout, stats, d.partial, d.counter,
			advStats, u(B), u(A), math.Float64bits(clip), math.Float64bits(ent), mode)
	})
}

// GaussianPPO implements Device.
func (d *CUDA) GaussianPPO(p PPOPolicyArgs) {
	B, A := checkPolicyArgs(p, p.Out.Cols)
	if p.LogStd.Len() != A || p.DLogStd.Len() != A {
		panic(fmt.Sprintf("gpu: Gaussian PPO: log-std %d and its gradient %d for %d action dimensions", p.LogStd.Len(), p.DLogStd.Len(), A))
	}
	if A > MaxGaussianDims {
		panic(fmt.Sprintf("gpu: the CUDA device's Gaussian PPO loss supports at most %d action dimensions, got %d", MaxGaussianDims, A))
	}
	if B == 0 {
		return
	}
	mu, logStd, acts, old, adv := d.ptr(p.Out), d.ptr(p.LogStd), d.ptr(p.Actions), d.ptr(p.OldLogp), d.ptr(p.Adv)
	dmu, dlogstd, stats := d.ptr(p.DOut), d.ptr(p.DLogStd), d.ptr(p.Stats)
	grid, mode := lossLaunch(B, p.NormAdv)
	clip, ent := float64(p.ClipCoef), float64(p.EntCoef)
	d.queue("Gaussian PPO loss", func() error {
		advStats := d.misc + 8*miscAdv
		if mode == advPrecomputed {
			if err := d.launch("adv_stats", 1, adv, u(B), advStats); err != nil {
				return err
			}
		}
		return d.launchN("gaussian_ppo", grid, blockThreads, mu, logStd, acts, old, adv, dmu, dlogstd, stats,
			d.partial, d.counter, advStats, u(B), u(A), math.Float64bits(clip), math.Float64bits(ent), mode)
	})
}

// ValueLoss implements Device.
func (d *CUDA) ValueLoss(p ValueArgs) {
	B := p.Value.Len()
	if p.OldValue.Len() != B || p.Returns.Len() != B || p.DValue.Len() != B || p.Stats.Len() < NumStats {
		panic("gpu: value loss shapes differ")
	}
	if B == 0 {
		return
	}
	v, old, ret, dv, stats := d.ptr(p.Value), d.ptr(p.OldValue), d.ptr(p.Returns), d.ptr(p.DValue), d.ptr(p.Stats)
	grid := min(maxReduceBlocks, (B+blockThreads-1)/blockThreads)
	clip := uint64(0)
	if p.Clip {
		clip = 1
	}
	c, scale := float64(p.ClipCoef), float64(p.VFCoef)/float64(B)
	d.queue("value loss", func() error {
		return d.launchN("value_loss", grid, blockThreads, v, old, ret, dv, stats, d.partial, d.counter,
			u(B), math.Float64bits(c), clip, math.Float64bits(scale))
	})
}

// ClipGradNorm implements Device: one reduction kernel computes the norm,
// adds it to the statistics and leaves the scale on the device; a second
// applies it. Nothing comes back to the host.
func (d *CUDA) ClipGradNorm(grads Tensor, maxNorm float32, stats Tensor) {
	if stats.Len() < NumStats {
		panic("gpu: statistics tensor too short")
	}
	n := grads.Len()
	if n == 0 {
		return
	}
	g, s := d.ptr(grads), d.ptr(stats)
	grid := min(maxReduceBlocks, (n+blockThreads-1)/blockThreads)
	d.queue("clip grad norm", func() error {
		coef := d.misc + 8*miscCoef
		if err := d.launchN("grad_norm", grid, blockThreads, g, u(n), s, d.partial, d.counter,
			math.Float64bits(float64(maxNorm)), coef); err != nil {
			return err
		}
		return d.launch("scale_grads", gridFor(n), g, u(n), coef)
	})
}

// Adam implements Device.
func (d *CUDA) Adam(params, grads, m, v Tensor, a AdamArgs) {
	n := params.Len()
	if grads.Len() < n || m.Len() < n || v.Len() < n {
		panic("gpu: Adam state shorter than the parameters")
	}
	if n == 0 {
		return
	}
	// Host-side scalars exactly as cpu.go computes them.
	bc1 := 1 - math.Pow(float64(a.Beta1), float64(a.Step))
	bc2 := 1 - math.Pow(float64(a.Beta2), float64(a.Step))
	stepSize := float32(float64(a.LR) / bc1)
	invSqrtBC2 := float32(1 / math.Sqrt(bc2))
	pp, pg, pm, pv := d.ptr(params), d.ptr(grads), d.ptr(m), d.ptr(v)
	d.queue("adam", func() error {
		return d.launch("adam", gridFor(n), pp, pg, pm, pv, u(n), f(stepSize), f(invSqrtBC2), f(a.Beta1), f(a.Beta2), f(a.Eps))
	})
}

// Kernel arguments: every one is 8 bytes (see cuda_kernels.go).
func u(n int) uint64     { return uint64(n) }
func f(x float32) uint64 { return math.Float64bits(float64(x)) }
func gridFor(n int) int  { return max(1, min(maxGrid, (n+blockThreads-1)/blockThreads)) }
func argOf(a any) uint64 {
	switch v := a.(type) {
	case cu.DevicePtr:
		return uint64(v)
	case uint64:
		return v
	}
	panic(fmt.Sprintf("gpu: kernel argument of type %T", a))
}

// launch runs a 1-D kernel with blockThreads threads per block (owner side).
func (d *CUDA) launch(name string, grid int, args ...any) error {
	return d.launchN(name, grid, blockThreads, args...)
}

func (d *CUDA) launchN(name string, grid, block int, args ...any) error {
	return d.launch2D(name, grid, 1, block, 1, args...)
}

func (d *CUDA) launch2D(name string, gx, gy, bx, by int, args ...any) error {
	fn, ok := d.fn[name]
	if !ok {
		return fmt.Errorf("no kernel %s", name)
	}
	vals := make([]uint64, len(args))
	ptrs := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		vals[i] = argOf(a)
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	if err := fn.Launch(gx, gy, 1, bx, by, 1, 0, cu.NoStream, ptrs); err != nil {
		return fmt.Errorf("launching %s: %v", name, err)
	}
	return nil
}
