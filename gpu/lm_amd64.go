//go:build amd64 && !purego

package gpu

import "math"

// gemv is the decoding product's kernel (lm_amd64.s).
//
//go:noescape
func gemv(y *float32, x *float32, b *float32, ldb int, k int, w int)

// expConsts feeds the exponential kernels (EXP8 in lm_amd64.s): log₂e, ½,
// ln2 in two parts, the bounds, Cephes' polynomial, 1 and +Inf.
var expConsts = [14]float32{
	1.44269504088896341, 0.5, 0.693359375, -2.12194440e-4, -87, 88,
	1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1,
	1, float32(math.Inf(1)),
}

//go:noescape
func expSum8(dst *float32, src *float32, n int, scale float32, shift float32) float32

//go:noescape
func max8(x *float32, n int) float32

//go:noescape
func swiglu8(h *float32, gate *float32, up *float32, n int)

//go:noescape
func swigluGrad8(dg *float32, du *float32, dh *float32, gate *float32, up *float32, n int)

// gemm1x64 is gemm1x16 over 64 columns (lm_amd64.s).
//
//go:noescape
func gemm1x64(c *float32, a *float32, inca int, b *float32, ldb int, k int, zero bool)

// gemm1x32 is gemm1x16 over 32 columns (lm_amd64.s).
//
//go:noescape
func gemm1x32(c *float32, a *float32, inca int, b *float32, ldb int, k int, zero bool)
