//go:build amd64 && !purego

package gpu

import "golang.org/x/sys/cpu"

// hasFMA says whether the AVX2/FMA kernels in gemm_amd64.s may run.
var hasFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func gemm4x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)

//go:noescape
func gemm1x16(c *float32, a *float32, b *float32, ldb int, k int)
