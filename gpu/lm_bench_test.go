package gpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// threadCPU is the calling thread's CPU time in seconds: on a machine
// other work loads, a single-threaded kernel's rate per CPU second says
// how fast it is where the wall clock cannot.
func threadCPU() float64 {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}

// BenchmarkLinear times the projections of decoding (1 row) and batched
// sampling (64 rows) on a 20M model's and SmolLM-135M's widest weights,
// through Linear, LinearPacked (weights packed once, as a generator does)
// and, for comparison, MatMul: GFLOP/s, and the weights' bytes read per
// second.
func BenchmarkLinear(b *testing.B) {
	for _, s := range []struct{ m, n, k int }{
		{1, 2816, 512}, {1, 4096, 512}, {1, 3072, 576}, {1, 49152, 576}, {1, 576, 1536}, {1, 960, 576},
		{64, 2816, 512}, {64, 4096, 512}, {64, 3072, 576}, {64, 49152, 576},
		{320, 2816, 512}, {320, 1024, 512},
	} {
		for _, route := range []string{"Linear", "Packed", "MatMul"} {
			b.Run(fmt.Sprintf("%dx%dx%d/%s", s.m, s.n, s.k, route), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				d := NewCPU(benchThreads)
				defer d.Close()
				r := rand.New(rand.NewPCG(1, 2))
				a, w, c := tensorFrom(d, s.m, s.k, randSlice(r, s.m*s.k, 1)), tensorFrom(d, s.k, s.n, randSlice(r, s.k*s.n, 1)), d.Alloc(s.m, s.n)
				var p PackedWeight
				d.PackWeight(&p, w)
				b.ResetTimer()
				cpu := threadCPU()
				for i := 0; i < b.N; i++ {
					switch route {
					case "Linear":
						d.Linear(c, a, w, 0)
					case "Packed":
						d.LinearPacked(c, a, &p, 0)
					default:
						d.MatMul(c, a, false, w, false, 0)
					}
				}
				sec := b.Elapsed().Seconds()
				if benchThreads == 1 {
					b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/(threadCPU()-cpu)/1e9, "GFLOP/cpu-s")
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/sec/1e9, "GFLOP/s")
				b.ReportMetric(4*float64(s.n*s.k)*float64(b.N)/sec/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkMemoryBandwidth reports MeasureBandwidth on one core and on
// all: the yardstick of batch-1 decoding (agents/lm's BenchmarkGenerate).
func BenchmarkMemoryBandwidth(b *testing.B) {
	for _, cores := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("cores=%d", cores), func(b *testing.B) {
			var bw Bandwidth
			for i := 0; i < b.N; i++ {
				bw = MeasureBandwidth(cores, 300*time.Millisecond)
			}
			b.ReportMetric(bw.GBps, "GB/s")
		})
	}
}

// BenchmarkCacheAttention is one decoding step's attention of batched
// sampling on the 20M model: 64 sequences at position 47 of 80, 8 query
// and 4 key/value heads of 64, over six layers' caches (63 MB, more than
// the last-level cache, as in generation). It reports the keys and values
// read per second, the work's yardstick.
func BenchmarkCacheAttention(b *testing.B) {
	const slots, maxLen, layers, heads, kvHeads, hd, pos = 64, 80, 6, 8, 4, 64, 47
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := NewCPU(benchThreads)
	defer d.Close()
	r := rand.New(rand.NewPCG(3, 4))
	w := (heads + 2*kvHeads) * hd
	qkv := tensorFrom(d, slots, w, randSlice(r, slots*w, 1))
	out := d.Alloc(slots, heads*hd)
	var kc, vc []Tensor
	for l := 0; l < layers; l++ {
		kc = append(kc, tensorFrom(d, slots*kvHeads*hd, maxLen, randSlice(r, slots*kvHeads*hd*maxLen, 1)))
		vc = append(vc, tensorFrom(d, slots*maxLen, kvHeads*hd, randSlice(r, slots*kvHeads*hd*maxLen, 1)))
	}
	slot, posv := make([]int32, slots), make([]int32, slots)
	for i := range slot {
		slot[i], posv[i] = int32(i), pos
	}
	b.ResetTimer()
	cpu := threadCPU()
	for i := 0; i < b.N; i++ {
		for l := 0; l < layers; l++ {
			d.CacheAttention(CacheArgs{QKV: qkv, Out: out, KCache: kc[l], VCache: vc[l], Slot: slot, Pos: posv, MaxLen: maxLen,
				Heads: heads, KVHeads: kvHeads, HeadDim: hd, Scale: 0.125})
		}
	}
	bytes := float64(b.N) * layers * slots * 2 * kvHeads * hd * (pos + 1) * 4
	if benchThreads == 1 {
		b.ReportMetric(bytes/(threadCPU()-cpu)/1e9, "GB/cpu-s")
	}
	b.ReportMetric(bytes/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkAttention times causal attention and its gradient over one
// layer of the 20M model's training batch (8 sequences of 256 tokens, 8
// query and 4 key/value heads of 64) on every core, reporting the useful
// rate: the products of the scores below the diagonal (the forward's two,
// the backward's five, its scores computed again).
func BenchmarkAttention(b *testing.B) {
	d := NewCPU(0)
	defer d.Close()
	const batch, seq, heads, kvHeads, hd = 8, 256, 8, 4, 64
	n, w := batch*seq, (heads+2*kvHeads)*hd
	r := rand.New(rand.NewPCG(5, 6))
	a := AttentionArgs{QKV: tensorFrom(d, n, w, randSlice(r, n*w, 1)), Out: d.Alloc(n, heads*hd), LSE: d.Alloc(n, heads),
		Batch: batch, Seq: seq, Heads: heads, KVHeads: kvHeads, HeadDim: hd, Scale: 0.125,
		DOut: tensorFrom(d, n, heads*hd, randSlice(r, n*heads*hd, 1)), DQKV: d.Alloc(n, w)}
	product := 2 * float64(batch*heads) * float64(seq*(seq+1)/2) * hd // one product's multiply-adds, ×2
	for _, c := range []struct {
		name     string
		products float64
		run      func(AttentionArgs)
	}{{"forward", 2, d.Attention}, {"backward", 5, d.AttentionGrad}} {
		b.Run(c.name, func(b *testing.B) {
			d.Attention(a)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.run(a)
			}
			b.ReportMetric(c.products*product*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
