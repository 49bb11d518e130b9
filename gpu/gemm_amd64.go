//go:build amd64 && !purego

package gpu

import (
	"fmt"
	"os"

	"golang.org/x/sys/cpu"
)

// hasFMA says whether the AVX2/FMA kernels in gemm_amd64.s may run, and
// hasAVX512 whether the AVX-512 product kernels may (x/sys/cpu checks that
// the OS saves the ZMM state too).
var hasFMA, hasAVX512 = chooseKernels(os.Getenv("AGENTTRAINER_CPU_KERNELS"), cpu.X86.HasAVX2 && cpu.X86.HasFMA, cpu.X86.HasAVX512F)

// chooseKernels applies AGENTTRAINER_CPU_KERNELS, for comparisons: "avx2"
// keeps to the AVX2 kernels (the same bits as with AVX-512), "portable" to
// plain Go (other bits); "" or "auto" takes what the CPU has. Anything else
// is reported on stderr and taken as "auto".
func chooseKernels(choice string, fma, avx512 bool) (useFMA, useAVX512 bool) {
	switch choice {
	case "", "auto":
	case "avx2":
		avx512 = false
	case "portable":
		fma, avx512 = false, false
	default:
		fmt.Fprintf(os.Stderr, "agenttrainer: AGENTTRAINER_CPU_KERNELS=%q is not auto, avx2 or portable; taking auto\n", choice)
	}
	return fma, fma && avx512
}

// The product kernels' tiles (tileFor chooses).
var (
	tile4x16 = tile{4, 16, gemm4x16, gemmT4x16}
	tile8x16 = tile{8, 16, gemm8x16, gemmT8x16}
	tile8x32 = tile{8, 32, gemm8x32, gemmT8x32}
	tile4x64 = tile{4, 64, gemm4x64, gemmT4x64}
)

//go:noescape
func gemm8x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)

//go:noescape
func gemmT8x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)

//go:noescape
func gemm8x32(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)

//go:noescape
func gemmT8x32(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)

//go:noescape
func gemm4x64(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)

//go:noescape
func gemmT4x64(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)

//go:noescape
func gemm4x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)

// tanhConsts feeds biasTanh8: the clamp bound, then tanh32's numerator
// (a13 … a1) and denominator (b6 … b0) coefficients.
var tanhConsts = [13]float32{
	7.90531110763549805, -7.90531110763549805,
	-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
	1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03,
	1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03,
}

//go:noescape
func biasTanh8(x *float32, bias *float32, n int)

//go:noescape
func gemmT4x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)

//go:noescape
func gemm1x16(c *float32, a *float32, inca int, b *float32, ldb int, k int, zero bool)

//go:noescape
func dot16(a *float32, b *float32, n int) float32

//go:noescape
func adam8(param, grad, mom, vel *float32, n int, k *[8]float32)

var one32, two32 float32 = 1, 2

//go:noescape
func tanhGrad8(dy *float32, y *float32, n int)

//go:noescape
func biasReLU8(x *float32, bias *float32, n int)

//go:noescape
func reluGrad8(dy *float32, y *float32, n int)

//go:noescape
func convT8x16(c *float32, ldc int, a *float32, ldx int, g *float32, ldg int, ow int, oh int, ldy int, zero bool)

//go:noescape
func convT16x16(c *float32, ldc int, a *float32, ldx int, g *float32, ldg int, ow int, oh int, ldy int, zero bool, a2 *float32)

//go:noescape
func convT12x16(c *float32, ldc int, a *float32, ldx int, g *float32, ldg int, ow int, oh int, ldy int, zero bool, a2 *float32, c2 *float32)

//go:noescape
func conv16x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, run int, runs int, skip int, bias *float32, c2 *float32, a2 *float32)

//go:noescape
func transpose8x8(dst *float32, ldd int, src *float32, lds int)

//go:noescape
func prefetchTile(c *float32, ldc int)
