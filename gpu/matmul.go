package gpu

import "sync"

// minParallelWork is the multiply-add count above which a product is split
// across cores; below it the hand-off costs more than it saves.
const minParallelWork = 1 << 16

// gemmTask is one horizontal band of C += A·B.
type gemmTask struct {
	c, a, b      []float32
	lo, hi, n, k int
}

// workerPool keeps goroutines parked so that splitting a product costs two
// channel operations and no allocation.
type workerPool struct {
	tasks []chan gemmTask
	done  chan struct{}
	once  sync.Once
}

func newWorkerPool(workers int) *workerPool {
	p := &workerPool{done: make(chan struct{}, workers)}
	for i := 0; i < workers; i++ {
		ch := make(chan gemmTask)
		p.tasks = append(p.tasks, ch)
		go func() {
			for t := range ch {
				gemmRows(t.c, t.a, t.b, t.lo, t.hi, t.n, t.k)
				p.done <- struct{}{}
			}
		}()
	}
	return p
}

func (p *workerPool) close() {
	p.once.Do(func() {
		for _, ch := range p.tasks {
			close(ch)
		}
	})
}

// gemm computes C += A·B for row-major A (m×k), B (k×n), C (m×n), splitting
// the rows of C across the pool when the product is large enough.
func (p *workerPool) gemm(c, a, b []float32, m, n, k int) {
	parts := len(p.tasks) + 1
	if m*n*k < minParallelWork || m < 2*parts {
		gemmRows(c, a, b, 0, m, n, k)
		return
	}
	band := (m + parts - 1) / parts
	band = (band + 3) &^ 3 // keep bands aligned to the kernel's 4-row blocks
	used := 0
	for i, ch := range p.tasks {
		lo := (i + 1) * band
		if lo >= m {
			break
		}
		ch <- gemmTask{c: c, a: a, b: b, lo: lo, hi: min(lo+band, m), n: n, k: k}
		used++
	}
	gemmRows(c, a, b, 0, min(band, m), n, k)
	for ; used > 0; used-- {
		<-p.done
	}
}

// gemmRows computes rows [lo, hi) of C += A·B: the SIMD kernels take the
// columns in blocks of 16 where the CPU has them, the portable kernel the
// rest.
func gemmRows(c, a, b []float32, lo, hi, n, k int) {
	n16 := 0
	if hasFMA && k > 0 {
		n16 = n &^ 15
	}
	if n16 > 0 {
		i := lo
		for ; i+4 <= hi; i += 4 {
			for j := 0; j < n16; j += 16 {
				gemm4x16(&c[i*n+j], n, &a[i*k], k, &b[j], n, k)
			}
		}
		for ; i < hi; i++ {
			for j := 0; j < n16; j += 16 {
				gemm1x16(&c[i*n+j], &a[i*k], &b[j], n, k)
			}
		}
	}
	if n16 < n {
		gemmGo(c, a, b, lo, hi, n16, n, k)
	}
}

// gemmGo computes rows [lo, hi), columns [j0, n) of C += A·B in plain Go.
// Four rows of C are updated per pass over a row of B, so each loaded B
// element feeds four multiply-adds.
func gemmGo(c, a, b []float32, lo, hi, j0, n, k int) {
	i := lo
	for ; i+4 <= hi; i += 4 {
		c0 := c[i*n+j0 : i*n+n]
		c1 := c[(i+1)*n+j0 : (i+1)*n+n]
		c2 := c[(i+2)*n+j0 : (i+2)*n+n]
		c3 := c[(i+3)*n+j0 : (i+3)*n+n]
		for p := 0; p < k; p++ {
			a0, a1, a2, a3 := a[i*k+p], a[(i+1)*k+p], a[(i+2)*k+p], a[(i+3)*k+p]
			br := b[p*n+j0 : p*n+n]
			c0, c1, c2, c3 := c0[:len(br)], c1[:len(br)], c2[:len(br)], c3[:len(br)]
			for j, bv := range br {
				c0[j] += a0 * bv
				c1[j] += a1 * bv
				c2[j] += a2 * bv
				c3[j] += a3 * bv
			}
		}
	}
	for ; i < hi; i++ {
		ci := c[i*n+j0 : i*n+n]
		for p := 0; p < k; p++ {
			av := a[i*k+p]
			br := b[p*n+j0 : p*n+n]
			ci := ci[:len(br)]
			for j, bv := range br {
				ci[j] += av * bv
			}
		}
	}
}
