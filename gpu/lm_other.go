//go:build !amd64 || purego

package gpu

func gemv(y *float32, x *float32, b *float32, ldb int, k int, w int) {
	panic("gpu: no SIMD kernel on this platform")
}

func gemm1x32(c *float32, a *float32, inca int, b *float32, ldb int, k int, zero bool) {
	panic("gpu: no SIMD kernel on this platform")
}

func expSum8(dst *float32, src *float32, n int, scale float32, shift float32) float32 {
	panic("gpu: no SIMD kernel on this platform")
}

func max8(x *float32, n int) float32 { panic("gpu: no SIMD kernel on this platform") }

func swiglu8(h *float32, gate *float32, up *float32, n int) {
	panic("gpu: no SIMD kernel on this platform")
}

func swigluGrad8(dg *float32, du *float32, dh *float32, gate *float32, up *float32, n int) {
	panic("gpu: no SIMD kernel on this platform")
}

func gemm1x64(c *float32, a *float32, inca int, b *float32, ldb int, k int, zero bool) {
	panic("gpu: no SIMD kernel on this platform")
}
