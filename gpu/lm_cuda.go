//go:build cuda

package gpu

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
	"gorgonia.org/cu/nvrtc"
)

// The CUDA device's TransformerOps: cuBLAS for the products (Linear is
// MatMul), the kernels of lm_cuda_kernels.go for the rest. The kernels are
// a module of their own, compiled by NVRTC for the architecture the
// device's main kernels were built for and loaded the first time a
// transformer op runs, so a PPO training never compiles them.

var _ TransformerOps = (*CUDA)(nil)

// lmBlock is the kernels' block size (LM_BLOCK) and lmMaxHeadDim the
// widest head they take (LM_MAX_HD).
const lmBlock, lmMaxHeadDim = 128, 512

// lmCUDA is a device's scratch for the transformer ops (owner side).
type lmCUDA struct {
	ints, delta, partial scratch
}

// lmStates holds each CUDA device's lmCUDA; its device memory is the
// device's and goes when the device closes.
var lmStates sync.Map

func (d *CUDA) lmState() *lmCUDA {
	s, _ := lmStates.LoadOrStore(d, new(lmCUDA))
	return s.(*lmCUDA)
}

var lmPTX struct {
	sync.Mutex
	byArch map[string]string
}

// PrepareTransformer compiles and loads the transformer kernels now
// (PrepareTransformer in gpu.go). A failed sync op does not poison the
// device, so the caller can report the error and close it.
func (d *CUDA) PrepareTransformer() error {
	if d.closed {
		return fmt.Errorf("gpu: use of a closed CUDA device")
	}
	d.ops <- cudaOp{name: "lm_prepare", fn: d.lmLoad, sync: true}
	if err := <-d.reply; err != nil {
		return fmt.Errorf("cuda:%d: %v", d.ordinal, err)
	}
	return nil
}

// lmLoad compiles and loads the transformer kernels if this device has not
// yet (owner side).
func (d *CUDA) lmLoad() error {
	if _, ok := d.fn[lmKernelNames[0]]; ok {
		return nil
	}
	lmPTX.Lock()
	ptx, ok := lmPTX.byArch[d.arch]
	if !ok {
		var err error
		if ptx, err = compileLMKernels(d.arch); err != nil {
			lmPTX.Unlock()
			return err
		}
		if lmPTX.byArch == nil {
			lmPTX.byArch = map[string]string{}
		}
		lmPTX.byArch[d.arch] = ptx
	}
	lmPTX.Unlock()
	mod, err := cu.LoadData(ptx)
	if err != nil {
		return fmt.Errorf("cuModuleLoadData (transformer kernels, %s): %v", d.arch, err)
	}
	for _, name := range lmKernelNames {
		fn, err := mod.Function(name)
		if err != nil {
			return fmt.Errorf("kernel %s: %v", name, err)
		}
		d.fn[name] = fn
	}
	return nil
}

func compileLMKernels(arch string) (string, error) {
	prog, err := nvrtc.CreateProgram(lmKernelSource, "agenttrainer_lm_kernels.cu")
	if err != nil {
		return "", fmt.Errorf("nvrtcCreateProgram: %v", err)
	}
	defer prog.Destroy()
	if err := prog.Compile("--gpu-architecture=" + arch); err != nil {
		log, _ := prog.GetLog()
		return "", fmt.Errorf("NVRTC could not compile the transformer kernels: %v: %s", err, strings.TrimSpace(log))
	}
	return prog.GetPTX()
}

// lmRun queues fn on the owner after loading the kernels and uploading
// ints (when any) to the device's index scratch, whose address fn gets.
func (d *CUDA) lmRun(name string, ints []int32, fn func(idx cu.DevicePtr) error) {
	host := append([]int32(nil), ints...) // the caller may reuse ints at once
	d.queue(name, func() error {
		if err := d.lmLoad(); err != nil {
			return err
		}
		s := d.lmState()
		if len(host) > 0 {
			bytes := 4 * int64(len(host))
			if err := d.grow(&s.ints, bytes); err != nil {
				return err
			}
			if err := cu.MemcpyHtoD(s.ints.ptr, unsafe.Pointer(&host[0]), bytes); err != nil {
				return err
			}
		}
		return fn(s.ints.ptr)
	})
}

// optPtr is t's address, or 0 (a null pointer the kernels skip) when t is empty.
func (d *CUDA) optPtr(t Tensor) cu.DevicePtr {
	if t.Len() == 0 {
		return 0
	}
	return d.ptr(t)
}

// lmBlocks is the grid of a kernel with one block per item.
func lmBlocks(items int) int { return max(1, min(maxGrid, items)) }

// lmGrid is the grid of a grid-stride kernel over n elements.
func lmGrid(n int) int { return max(1, min(maxGrid, (n+lmBlock-1)/lmBlock)) }

// Linear implements TransformerOps: cuBLAS takes every shape well.
func (d *CUDA) Linear(c, a, b Tensor, beta float32) { d.MatMul(c, a, false, b, false, beta) }

// Add implements TransformerOps.
func (d *CUDA) Add(dst, src Tensor) {
	if dst.Len() != src.Len() {
		panic("gpu: add of tensors of different length")
	}
	n := dst.Len()
	if n == 0 {
		return
	}
	pd, ps := d.ptr(dst), d.ptr(src)
	d.lmRun("lm_add", nil, func(cu.DevicePtr) error { return d.launchN("lm_add", lmGrid(n), lmBlock, pd, ps, u(n)) })
}

// embedShape checks an embedding's operands and returns its width and
// vocabulary.
func embedShape(rows, cols int, table Tensor, ids []int32, transposed bool) (h, v int) {
	h, v = table.Cols, table.Rows
	if transposed {
		h, v = v, h
	}
	if rows != len(ids) || cols != h {
		panic(fmt.Sprintf("gpu: embedding of %d ids into %d×%d from a table of %d×%d", len(ids), rows, cols, table.Rows, table.Cols))
	}
	checkIDs(ids, v)
	return h, v
}

// Embed implements TransformerOps.
func (d *CUDA) Embed(out, table Tensor, ids []int32, transposed bool) {
	h, v := embedShape(out.Rows, out.Cols, table, ids, transposed)
	if len(ids) == 0 || h == 0 {
		return
	}
	po, pt, n := d.ptr(out), d.ptr(table), len(ids)
	d.lmRun("lm_embed", ids, func(idx cu.DevicePtr) error {
		return d.launchN("lm_embed", lmGrid(n*h), lmBlock, po, pt, idx, u(n), u(h), u(v), u(boolU(transposed)))
	})
}

// EmbedGrad implements TransformerOps.
func (d *CUDA) EmbedGrad(dtable, dout Tensor, ids []int32, transposed bool) {
	h, v := embedShape(dout.Rows, dout.Cols, dtable, ids, transposed)
	if len(ids) == 0 || h == 0 {
		return
	}
	pt, po, n := d.ptr(dtable), d.ptr(dout), len(ids)
	d.lmRun("lm_embed_grad", ids, func(idx cu.DevicePtr) error {
		return d.launchN("lm_embed_grad", lmGrid(h), lmBlock, pt, po, idx, u(n), u(h), u(v), u(boolU(transposed)))
	})
}

func boolU(b bool) int {
	if b {
		return 1
	}
	return 0
}

// RMSNorm implements TransformerOps.
func (d *CUDA) RMSNorm(a NormArgs) {
	a.check(false)
	n := a.X.Rows
	if n == 0 {
		return
	}
	px, py, pw, pr := d.ptr(a.X), d.ptr(a.Y), d.ptr(a.W), d.ptr(a.RStd)
	d.lmRun("lm_rmsnorm", nil, func(cu.DevicePtr) error {
		return d.launchN("lm_rmsnorm", lmBlocks(n*a.Groups), lmBlock, px, py, pw, pr,
			u(n), u(a.X.Cols), u(a.Col), u(a.Groups), u(a.Width), f(a.Eps))
	})
}

// rmsChunk is the number of (row, group) items whose weight-gradient terms
// one partial sum takes.
const rmsChunk = 256

// RMSNormGrad implements TransformerOps.
func (d *CUDA) RMSNormGrad(a NormArgs) {
	a.check(true)
	n := a.X.Rows
	if n == 0 {
		return
	}
	px, pw, pr, pdy, pdx, pdw := d.ptr(a.X), d.ptr(a.W), d.ptr(a.RStd), d.ptr(a.DY), d.ptr(a.DX), d.ptr(a.DW)
	items := n * a.Groups
	chunks := (items + rmsChunk - 1) / rmsChunk
	c := a.X.Cols
	d.lmRun("lm_rmsnorm_grad", nil, func(cu.DevicePtr) error {
		// The weight gradient first: dx may overwrite dy.
		s := d.lmState()
		if err := d.grow(&s.partial, 8*int64(chunks*a.Width)); err != nil {
			return err
		}
		if err := d.launch2D("lm_rmsnorm_dw_partial", (a.Width+31)/32, chunks, 32, 8, px, pdy, pr, s.partial.ptr,
			u(n), u(c), u(a.Col), u(a.Groups), u(a.Width), u(rmsChunk)); err != nil {
			return err
		}
		if err := d.launchN("lm_rmsnorm_dw_final", lmGrid(a.Width), lmBlock, pdw, s.partial.ptr, u(chunks), u(a.Width)); err != nil {
			return err
		}
		return d.launchN("lm_rmsnorm_dx", lmBlocks(items), lmBlock, px, pw, pr, pdy, pdx,
			u(n), u(c), u(a.Col), u(a.Groups), u(a.Width), u(boolU(a.AddDX)))
	})
}

// Rope implements TransformerOps.
func (d *CUDA) Rope(a RopeArgs) {
	a.check()
	n := a.X.Rows
	if n == 0 || a.Heads == 0 {
		return
	}
	px, pc, ps := d.ptr(a.X), d.ptr(a.Cos), d.ptr(a.Sin)
	d.lmRun("lm_rope", a.Pos, func(pos cu.DevicePtr) error {
		return d.launchN("lm_rope", lmGrid(n*a.Heads*a.HeadDim/2), lmBlock, px, pc, ps, pos,
			u(n), u(a.X.Cols), u(a.Col), u(a.Heads), u(a.HeadDim), u(boolU(a.Inverse)))
	})
}

// SwiGLU implements TransformerOps.
func (d *CUDA) SwiGLU(h, gu Tensor) {
	if gu.Rows != h.Rows || gu.Cols != 2*h.Cols {
		panic("gpu: swiglu shapes differ")
	}
	if h.Len() == 0 {
		return
	}
	ph, pg, n, w := d.ptr(h), d.ptr(gu), h.Rows, h.Cols
	d.lmRun("lm_swiglu", nil, func(cu.DevicePtr) error {
		return d.launchN("lm_swiglu", lmGrid(n*w), lmBlock, ph, pg, u(n), u(w))
	})
}

// SwiGLUGrad implements TransformerOps.
func (d *CUDA) SwiGLUGrad(dgu, dh, gu Tensor) {
	if gu.Rows != dh.Rows || gu.Cols != 2*dh.Cols || dgu.Rows != dh.Rows || dgu.Cols != 2*dh.Cols {
		panic("gpu: swiglu gradient shapes differ")
	}
	if dh.Len() == 0 {
		return
	}
	pd, ph, pg, n, w := d.ptr(dgu), d.ptr(dh), d.ptr(gu), dh.Rows, dh.Cols
	d.lmRun("lm_swiglu_grad", nil, func(cu.DevicePtr) error {
		return d.launchN("lm_swiglu_grad", lmGrid(n*w), lmBlock, pd, ph, pg, u(n), u(w))
	})
}

func checkHeadDim(hd int) {
	if hd > lmMaxHeadDim {
		panic(fmt.Sprintf("gpu: head_dim %d is wider than the %d the CUDA attention kernels take", hd, lmMaxHeadDim))
	}
}

// Attention implements TransformerOps.
func (d *CUDA) Attention(a AttentionArgs) {
	a.check(false)
	checkHeadDim(a.HeadDim)
	n := a.Batch * a.Seq
	if n == 0 {
		return
	}
	pq, po, pl := d.ptr(a.QKV), d.ptr(a.Out), d.ptr(a.LSE)
	hasMask := a.Mask != nil
	d.lmRun("lm_attn_fwd", a.Mask, func(mask cu.DevicePtr) error {
		if !hasMask {
			mask = 0
		}
		return d.launchN("lm_attn_fwd", lmBlocks(n*a.Heads), lmBlock, pq, po, pl, mask,
			u(a.Batch), u(a.Seq), u(a.Heads), u(a.KVHeads), u(a.HeadDim), f(a.Scale))
	})
}

// AttentionGrad implements TransformerOps: the queries' gradients by one
// kernel (a block per query row and head), the keys' and values' by
// another (a block per key row and key head), each computing the
// probabilities again, so that no two blocks add into one value.
func (d *CUDA) AttentionGrad(a AttentionArgs) {
	a.check(true)
	checkHeadDim(a.HeadDim)
	n := a.Batch * a.Seq
	if n == 0 {
		return
	}
	pq, po, pl, pdo, pdq := d.ptr(a.QKV), d.ptr(a.Out), d.ptr(a.LSE), d.ptr(a.DOut), d.ptr(a.DQKV)
	hasMask := a.Mask != nil
	d.lmRun("lm_attn_bwd", a.Mask, func(mask cu.DevicePtr) error {
		if !hasMask {
			mask = 0
		}
		s := d.lmState()
		if err := d.grow(&s.delta, 4*int64(n*a.Heads)); err != nil {
			return err
		}
		if err := d.launchN("lm_attn_delta", lmGrid(n*a.Heads), lmBlock, po, pdo, s.delta.ptr, u(n), u(a.Heads), u(a.HeadDim)); err != nil {
			return err
		}
		args := []any{pq, pl, s.delta.ptr, pdo, pdq, mask, u(a.Batch), u(a.Seq), u(a.Heads), u(a.KVHeads), u(a.HeadDim), f(a.Scale)}
		if err := d.launchN("lm_attn_bwd_q", lmBlocks(n*a.Heads), lmBlock, args...); err != nil {
			return err
		}
		return d.launchN("lm_attn_bwd_kv", lmBlocks(n*a.KVHeads), lmBlock, args...)
	})
}

// CacheAttention implements TransformerOps.
func (d *CUDA) CacheAttention(a CacheArgs) {
	a.check()
	checkHeadDim(a.HeadDim)
	n := a.QKV.Rows
	if n == 0 {
		return
	}
	pq, po, pk, pv := d.ptr(a.QKV), d.ptr(a.Out), d.ptr(a.KCache), d.ptr(a.VCache)
	ints := append(append(make([]int32, 0, 2*n), a.Slot...), a.Pos...)
	d.lmRun("lm_cache_attn", ints, func(idx cu.DevicePtr) error {
		slot, pos := idx, idx+cu.DevicePtr(4*n)
		if err := d.launchN("lm_cache_store", lmGrid(n*a.KVHeads*a.HeadDim), lmBlock, pq, pk, pv, slot, pos,
			u(n), u(a.Heads), u(a.KVHeads), u(a.HeadDim), u(a.MaxLen)); err != nil {
			return err
		}
		return d.launchN("lm_cache_attn", lmBlocks(n*a.Heads), lmBlock, pq, po, pk, pv, slot, pos,
			u(n), u(a.Heads), u(a.KVHeads), u(a.HeadDim), u(a.MaxLen), f(a.Scale))
	})
}

// LogProbs implements TransformerOps.
func (d *CUDA) LogProbs(a LogProbArgs) {
	a.check(false)
	m, v := a.Logits.Rows, a.Logits.Cols
	if m == 0 {
		return
	}
	pz, pl, pe := d.ptr(a.Logits), d.ptr(a.LogP), d.optPtr(a.Entropy)
	d.lmRun("lm_logprobs", a.Targets, func(tgt cu.DevicePtr) error {
		return d.launchN("lm_logprobs", lmBlocks(m), lmBlock, pz, tgt, pl, pe, u(m), u(v), f(a.InvTemp))
	})
}

// LogProbsGrad implements TransformerOps.
func (d *CUDA) LogProbsGrad(a LogProbArgs) {
	a.check(true)
	m, v := a.Logits.Rows, a.Logits.Cols
	if m == 0 {
		return
	}
	pz, pdl, pde := d.ptr(a.Logits), d.ptr(a.DLogP), d.optPtr(a.DEntropy)
	d.lmRun("lm_logprobs_grad", a.Targets, func(tgt cu.DevicePtr) error {
		return d.launchN("lm_logprobs_grad", lmBlocks(m), lmBlock, pz, tgt, pdl, pde, u(m), u(v), f(a.InvTemp))
	})
}
