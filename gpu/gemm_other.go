//go:build !amd64 || purego

package gpu

// hasFMA is false where there is no assembly kernel: the portable Go
// kernel does all the work.
const hasFMA = false

// hasAVX512 is false with hasFMA, and no tile is ever run.
const hasAVX512 = false

var tile4x16, tile8x16, tile8x32, tile4x64 tile

func gemm4x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool) {
	panic("gpu: no SIMD kernel on this platform")
}

func prefetchTile(c *float32, ldc int) {}

func biasTanh8(x *float32, bias *float32, n int) {
	panic("gpu: no SIMD kernel on this platform")
}

func gemmT4x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool) {
	panic("gpu: no SIMD kernel on this platform")
}

func gemm1x16(c *float32, a *float32, inca int, b *float32, ldb int, k int, zero bool) {
	panic("gpu: no SIMD kernel on this platform")
}

func dot16(a *float32, b *float32, n int) float32 { panic("gpu: no SIMD kernel on this platform") }

func adam8(param, grad, mom, vel *float32, n int, k *[8]float32) {
	panic("gpu: no SIMD kernel on this platform")
}

func tanhGrad8(dy *float32, y *float32, n int) { panic("gpu: no SIMD kernel on this platform") }

func biasReLU8(x *float32, bias *float32, n int) { panic("gpu: no SIMD kernel on this platform") }

func reluGrad8(dy *float32, y *float32, n int) { panic("gpu: no SIMD kernel on this platform") }

func convT8x16(c *float32, ldc int, a *float32, ldx int, g *float32, ldg int, ow int, oh int, ldy int, zero bool) {
	panic("gpu: no SIMD kernel on this platform")
}

func convT16x16(c *float32, ldc int, a *float32, ldx int, g *float32, ldg int, ow int, oh int, ldy int, zero bool, a2 *float32) {
	panic("gpu: no SIMD kernel on this platform")
}

func convT12x16(c *float32, ldc int, a *float32, ldx int, g *float32, ldg int, ow int, oh int, ldy int, zero bool, a2 *float32, c2 *float32) {
	panic("gpu: no SIMD kernel on this platform")
}

func conv16x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, run int, runs int, skip int, bias *float32, c2 *float32, a2 *float32) {
	panic("gpu: no SIMD kernel on this platform")
}

func transpose8x8(dst *float32, ldd int, src *float32, lds int) {
	panic("gpu: no SIMD kernel on this platform")
}
