package gpu

// sgemm computes C (m×n, rows ldc apart) = op(A)·B, or C += op(A)·B when
// add, on the calling goroutine: op(A)[i,p] is a[i·lda+p], or a[p·lda+i]
// when transA; B[p,j] is b[p·ldb+j]. It is gemmRows with every stride
// free, for operands that are blocks of wider rows (a head's columns of a
// fused q/k/v row, a block of attention scores): the same kernels in the
// same panels, so each element of C gets the chain of multiply-adds a
// product by MatMul would give it.
func sgemm(c []float32, ldc int, a []float32, lda int, transA bool, b []float32, ldb int, m, n, k int, add bool) {
	if m <= 0 || n <= 0 {
		return
	}
	// The kernels do not check bounds: the last element each operand
	// reaches must be inside its slice.
	_ = c[(m-1)*ldc+n-1]
	if k > 0 {
		_ = b[(k-1)*ldb+n-1]
		if transA {
			_ = a[(k-1)*lda+m-1]
		} else {
			_ = a[(m-1)*lda+k-1]
		}
	}
	n16 := 0
	if hasFMA && k > 0 {
		n16 = n &^ 15
	}
	if !add && (k == 0 || n16 < n) {
		for i := 0; i < m; i++ {
			clear(c[i*ldc+n16 : i*ldc+n])
		}
	}
	for k0 := 0; k0 < k && n16 > 0; k0 += gemmKC {
		kc := min(gemmKC, k-k0)
		bp := b[k0*ldb:]
		zero := !add && k0 == 0
		m4 := m &^ 3
		for i0 := 0; i0 < m4; i0 += gemmMC {
			i1 := min(i0+gemmMC, m4)
			var at []float32
			if transA {
				at = a[k0*lda+i0:]
			} else {
				at = a[i0*lda+k0:]
			}
			for j := 0; j < n16; {
				t := tileFor(n16, j)
				i := i0
				for ; i+t.rows <= i1; i += t.rows {
					t.run(transA, c[i*ldc+j:], ldc, at, i-i0, lda, bp[j:], ldb, kc, zero)
				}
				for ; i < i1; i += 4 {
					for jj := j; jj < j+t.cols; jj += 16 {
						tile4x16.run(transA, c[i*ldc+jj:], ldc, at, i-i0, lda, bp[jj:], ldb, kc, zero)
					}
				}
				j += t.cols
			}
		}
		for i := m4; i < m; i++ {
			var ai *float32
			inc := 1
			if transA {
				ai, inc = &a[k0*lda+i], lda
			} else {
				ai = &a[i*lda+k0]
			}
			j := 0
			for ; j+64 <= n16; j += 64 { // independent chains: a row's product is latency-bound
				gemm1x64(&c[i*ldc+j], ai, inc, &bp[j], ldb, kc, zero)
			}
			for ; j < n16; j += 16 {
				gemm1x16(&c[i*ldc+j], ai, inc, &bp[j], ldb, kc, zero)
			}
		}
	}
	if n16 < n {
		for i := 0; i < m; i++ {
			ci := c[i*ldc+n16 : i*ldc+n]
			for p := 0; p < k; p++ {
				var av float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				br := b[p*ldb+n16 : p*ldb+n]
				ci := ci[:len(br)]
				for j, bv := range br {
					ci[j] += av * bv
				}
			}
		}
	}
}
