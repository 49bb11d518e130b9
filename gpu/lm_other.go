//go:build !amd64 || purego

package gpu

func gemv4(y *float32, x *float32, b *float32, ldb int, k int, w int) {
	panic("gpu: no SIMD kernel on this platform")
}
