// cublas.c: the stand-in libcublas.so.11 — handles and the product the
// project uses (cublasSgemm), with cuBLAS's argument checks. Every matrix
// must lie inside one live device allocation of the stand-in driver; a real
// GPU would fault on anything else.
#include <cublas_v2.h>
#include <stdint.h>
#include <stdlib.h>

#include "standin.h"

struct cublasContext {
	cudaStream_t stream;
	cublasPointerMode_t pointerMode;
	cublasMath_t math;
};

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
	if (!h) return CUBLAS_STATUS_INVALID_VALUE;
	*h = calloc(1, sizeof **h);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
	if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
	free(h);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t h, int* v) { (void)h; *v = 111103; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) { if (!h) return CUBLAS_STATUS_NOT_INITIALIZED; h->stream = s; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t* s) { if (!h) return CUBLAS_STATUS_NOT_INITIALIZED; *s = h->stream; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) { if (!h) return CUBLAS_STATUS_NOT_INITIALIZED; h->math = m; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t* m) { if (!h) return CUBLAS_STATUS_NOT_INITIALIZED; *m = h->math; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t* m) { if (!h) return CUBLAS_STATUS_NOT_INITIALIZED; *m = h->pointerMode; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t m) {
	if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (m != CUBLAS_POINTER_MODE_HOST) return CUBLAS_STATUS_NOT_SUPPORTED; // device scalars: not in the stand-in
	h->pointerMode = m;
	return CUBLAS_STATUS_SUCCESS;
}

// inside: a column-major rows×cols matrix with leading dimension ld at p.
static int inside(const char* what, const float* p, int rows, int cols, int ld) {
	if (rows == 0 || cols == 0) return 1;
	size_t n = (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
	if (standin_in_alloc((uintptr_t)p, n * sizeof(float))) return 1;
	standin_complain("cublasSgemm: %s (%d×%d, ld %d) is not inside one live device allocation", what, rows, cols, ld);
	return 0;
}

// C = alpha·op(A)·op(B) + beta·C, column-major, op(A) m×k, op(B) k×n. The
// sum of each element runs over k in order in float, like a simple GPU
// kernel; C is not read when beta is 0.
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
	const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta, float* C, int ldc) {
	if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
	if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T && ta != CUBLAS_OP_C) ||
		(tb != CUBLAS_OP_N && tb != CUBLAS_OP_T && tb != CUBLAS_OP_C))
		return CUBLAS_STATUS_INVALID_VALUE;
	int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
	int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
	if (m < 0 || n < 0 || k < 0 || lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1)) {
		standin_complain("cublasSgemm: invalid m=%d n=%d k=%d lda=%d ldb=%d ldc=%d", m, n, k, lda, ldb, ldc);
		return CUBLAS_STATUS_INVALID_VALUE;
	}
	if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
	if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
	if (!inside("C", C, m, n, ldc) || (k > 0 && (!inside("A", A, ar, ac, lda) || !inside("B", B, br, bc, ldb))))
		return CUBLAS_STATUS_EXECUTION_FAILED;
	float al = *alpha, be = *beta;
	// op(A) packed column-major (m×k), so that the inner loop runs over
	// contiguous rows whichever the transpose.
	float* pa = malloc(sizeof(float) * (size_t)m * (size_t)(k > 0 ? k : 1));
	float* acc = malloc(sizeof(float) * (size_t)m);
	if (!pa || !acc) {
		free(pa);
		free(acc);
		return CUBLAS_STATUS_ALLOC_FAILED;
	}
	for (int l = 0; l < k; l++)
		for (int i = 0; i < m; i++) pa[(size_t)l * m + i] = ta == CUBLAS_OP_N ? A[i + (size_t)l * lda] : A[l + (size_t)i * lda];
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) acc[i] = 0.0f;
		for (int l = 0; l < k; l++) {
			float b = tb == CUBLAS_OP_N ? B[l + (size_t)j * ldb] : B[j + (size_t)l * ldb];
			const float* col = pa + (size_t)l * m;
			for (int i = 0; i < m; i++) acc[i] += col[i] * b;
		}
		float* c = C + (size_t)j * ldc;
		for (int i = 0; i < m; i++) c[i] = be == 0.0f ? al * acc[i] : al * acc[i] + be * c[i];
	}
	free(pa);
	free(acc);
	return CUBLAS_STATUS_SUCCESS;
}
