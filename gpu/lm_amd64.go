//go:build amd64 && !purego

package gpu

// gemv4 is the decoding product's kernel (lm_amd64.s).
//
//go:noescape
func gemv4(y *float32, x *float32, b *float32, ldb int, k int, w int)
