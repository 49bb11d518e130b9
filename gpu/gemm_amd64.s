//go:build amd64 && !purego

#include "textflag.h"

// The 4×16 kernels keep a block of C in Y0–Y7 (row i in Y2i, Y2i+1); DI
// points at C and R8 is its row stride in bytes.
#define LOAD_C4x16 \
	MOVQ    DI, AX;    \
	VMOVUPS (AX), Y0;  \
	VMOVUPS 32(AX), Y1; \
	ADDQ    R8, AX;    \
	VMOVUPS (AX), Y2;  \
	VMOVUPS 32(AX), Y3; \
	ADDQ    R8, AX;    \
	VMOVUPS (AX), Y4;  \
	VMOVUPS 32(AX), Y5; \
	ADDQ    R8, AX;    \
	VMOVUPS (AX), Y6;  \
	VMOVUPS 32(AX), Y7

#define ZERO_C4x16 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

#define STORE_C4x16 \
	VMOVUPS Y0, (DI);   \
	VMOVUPS Y1, 32(DI); \
	ADDQ    R8, DI;     \
	VMOVUPS Y2, (DI);   \
	VMOVUPS Y3, 32(DI); \
	ADDQ    R8, DI;     \
	VMOVUPS Y4, (DI);   \
	VMOVUPS Y5, 32(DI); \
	ADDQ    R8, DI;     \
	VMOVUPS Y6, (DI);   \
	VMOVUPS Y7, 32(DI)

// GEMM_ARGS loads the arguments of the 4-row kernels: C in DI with its row
// stride in bytes in R8, A in SI (R9), B in DX (R10), the depth in CX.
#define GEMM_ARGS \
	MOVQ c+0(FP), DI;    \
	MOVQ ldc+8(FP), R8;  \
	MOVQ a+16(FP), SI;   \
	MOVQ lda+24(FP), R9; \
	MOVQ b+32(FP), DX;   \
	MOVQ ldb+40(FP), R10; \
	MOVQ k+48(FP), CX;   \
	SHLQ $2, R8;         \
	SHLQ $2, R9;         \
	SHLQ $2, R10

// CONVT_ARGS loads the weight-gradient kernels' arguments as GEMM_ARGS
// (R9: ldx in bytes; CX: ow), with in R11 the step in bytes from the end of
// a row of positions to the start of the next, and oh in BX.
#define CONVT_ARGS \
	GEMM_ARGS;            \
	MOVQ ldy+64(FP), R11; \
	SHLQ $2, R11;         \
	MOVQ CX, AX;          \
	IMULQ R9, AX;         \
	SUBQ AX, R11;         \
	MOVQ oh+56(FP), BX

// func gemm4x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)
//
// C[0:4, 0:16] += A[0:4, 0:k] · B[0:k, 0:16] for row-major operands with
// leading dimensions ldc, lda, ldb (in elements). The 4×16 block of C lives
// in eight YMM accumulators; each step of k loads one 16-wide row of B and
// broadcasts one element of each A row into it with FMA.
TEXT ·gemm4x16(SB), NOSPLIT, $0-57
	GEMM_ARGS
	MOVQ SI, R11
	LEAQ (SI)(R9*1), R12
	LEAQ (R12)(R9*1), R13
	LEAQ (R13)(R9*1), R14

	// The accumulators start from C: the multiply-add chain continues
	// from what C holds, so a product computed in k panels gives the same
	// bits as one pass. With zero set they start from 0 and C is only
	// written (a fresh product: no need to clear C and read it back).
	MOVBQZX zero+56(FP), AX
	TESTQ   AX, AX
	JNE     zero4
	LOAD_C4x16
	JMP     loop4

zero4:
	ZERO_C4x16

loop4:
	TESTQ CX, CX
	JE    store4
	VMOVUPS      (DX), Y8
	VMOVUPS      32(DX), Y9
	VBROADCASTSS (R11), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (R12), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (R13), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS (R14), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $4, R11
	ADDQ         $4, R12
	ADDQ         $4, R13
	ADDQ         $4, R14
	ADDQ         R10, DX
	DECQ         CX
	JMP          loop4

store4:
	STORE_C4x16
	VZEROUPPER
	RET

// func biasTanh8(x *float32, bias *float32, n int)
//
// x[i] = tanh(x[i] + bias[i]) for i < n, n a multiple of 8, with the same
// clamped 13/6 rational approximation as tanh32 (without its small-|x|
// shortcut, which the rational form only needs for relative accuracy far
// below float32's resolution at the sizes we see).
TEXT ·biasTanh8(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ bias+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	VBROADCASTSS ·tanhConsts+0(SB), Y15  // clamp
	VBROADCASTSS ·tanhConsts+4(SB), Y14  // -clamp

loopt:
	TESTQ CX, CX
	JE    donet
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMINPS  Y15, Y0, Y0
	VMAXPS  Y14, Y0, Y0
	VMULPS  Y0, Y0, Y1                   // x²
	VBROADCASTSS ·tanhConsts+8(SB), Y2   // p = a13
	VBROADCASTSS ·tanhConsts+12(SB), Y3
	VFMADD213PS  Y3, Y1, Y2              // p = p·x² + a11
	VBROADCASTSS ·tanhConsts+16(SB), Y3
	VFMADD213PS  Y3, Y1, Y2
	VBROADCASTSS ·tanhConsts+20(SB), Y3
	VFMADD213PS  Y3, Y1, Y2
	VBROADCASTSS ·tanhConsts+24(SB), Y3
	VFMADD213PS  Y3, Y1, Y2
	VBROADCASTSS ·tanhConsts+28(SB), Y3
	VFMADD213PS  Y3, Y1, Y2
	VBROADCASTSS ·tanhConsts+32(SB), Y3
	VFMADD213PS  Y3, Y1, Y2
	VMULPS       Y0, Y2, Y2              // p·x
	VBROADCASTSS ·tanhConsts+36(SB), Y4  // q = b6
	VBROADCASTSS ·tanhConsts+40(SB), Y3
	VFMADD213PS  Y3, Y1, Y4
	VBROADCASTSS ·tanhConsts+44(SB), Y3
	VFMADD213PS  Y3, Y1, Y4
	VBROADCASTSS ·tanhConsts+48(SB), Y3
	VFMADD213PS  Y3, Y1, Y4
	// p/q as p·r with r ≈ 1/q: the 12-bit estimate refined by one Newton
	// step, r·(2 − q·r), is good to about 2⁻²², several times faster than
	// VDIVPS.
	VRCPPS       Y4, Y5
	VMULPS       Y5, Y4, Y6
	VBROADCASTSS ·two32(SB), Y7
	VSUBPS       Y6, Y7, Y6
	VMULPS       Y6, Y5, Y5
	VMULPS       Y5, Y2, Y0
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	DECQ         CX
	JMP          loopt

donet:
	VZEROUPPER
	RET

// func gemmT4x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)
//
// C[0:4, 0:16] += Aᵀ[0:4, 0:k] · B[0:k, 0:16] where A is stored k×lda
// (row-major), so the four broadcasts of step p read A[p, 0:4], which are
// contiguous: weight gradients Xᵀ·dY need no transposed copy of X.
TEXT ·gemmT4x16(SB), NOSPLIT, $0-57
	GEMM_ARGS

	// From C, or from zero, as in gemm4x16.
	MOVBQZX zero+56(FP), AX
	TESTQ   AX, AX
	JNE     zeroT4
	LOAD_C4x16
	JMP     loopT4

zeroT4:
	ZERO_C4x16

loopT4:
	TESTQ CX, CX
	JE    storeT4
	VMOVUPS      (DX), Y8
	VMOVUPS      32(DX), Y9
	VBROADCASTSS (SI), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS 4(SI), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS 8(SI), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS 12(SI), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         R9, SI
	ADDQ         R10, DX
	DECQ         CX
	JMP          loopT4

storeT4:
	STORE_C4x16
	VZEROUPPER
	RET

// func gemm1x16(c *float32, a *float32, inca int, b *float32, ldb int, k int, zero bool)
//
// C[0, 0:16] += Σ_p a[p·inca] · B[p, 0:16]: one row of C, for the rows
// left over by gemm4x16 (A's row: inca 1) and gemmT4x16 (A's column: inca
// its row length).
TEXT ·gemm1x16(SB), NOSPLIT, $0-49
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ inca+16(FP), R9
	MOVQ b+24(FP), DX
	MOVQ ldb+32(FP), R10
	MOVQ k+40(FP), CX
	SHLQ $2, R9
	SHLQ $2, R10
	MOVBQZX zero+48(FP), AX
	TESTQ   AX, AX
	JNE     zeroT1
	VMOVUPS (DI), Y0 // from C, as in gemm4x16
	VMOVUPS 32(DI), Y1
	JMP     loopT1

zeroT1:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

loopT1:
	TESTQ CX, CX
	JE    storeT1
	VBROADCASTSS (SI), Y10
	VFMADD231PS  (DX), Y10, Y0
	VFMADD231PS  32(DX), Y10, Y1
	ADDQ         R9, SI
	ADDQ         R10, DX
	DECQ         CX
	JMP          loopT1

storeT1:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VZEROUPPER
	RET

// func dot16(a *float32, b *float32, n int) float32
//
// Σ a[i]·b[i] over n, a multiple of 16, with two vector accumulators.
TEXT ·dot16(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DX
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

loopd:
	TESTQ CX, CX
	JE    reduced
	VMOVUPS     (SI), Y2
	VMOVUPS     32(SI), Y3
	VFMADD231PS (DX), Y2, Y0
	VFMADD231PS 32(DX), Y3, Y1
	ADDQ        $64, SI
	ADDQ        $64, DX
	DECQ        CX
	JMP         loopd

reduced:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func adam8(param, grad, mom, vel *float32, n int, k *[8]float32)
//
// Adam over n elements (a multiple of 8), with k = [β1, 1−β1, β2, 1−β2,
// step size, 1/√(bias correction 2), ε, 0]:
//   m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;  p −= step·m / (√v·c + ε)
TEXT ·adam8(SB), NOSPLIT, $0-48
	MOVQ param+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ mom+16(FP), R8
	MOVQ vel+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	SHRQ $3, CX
	VBROADCASTSS 0(AX), Y8   // β1
	VBROADCASTSS 4(AX), Y9   // 1−β1
	VBROADCASTSS 8(AX), Y10  // β2
	VBROADCASTSS 12(AX), Y11 // 1−β2
	VBROADCASTSS 16(AX), Y12 // step size
	VBROADCASTSS 20(AX), Y13 // 1/√bc2
	VBROADCASTSS 24(AX), Y14 // ε

loopa:
	TESTQ CX, CX
	JE    donea
	VMOVUPS     (SI), Y0          // g
	VMULPS      (R8), Y8, Y1      // β1·m
	VFMADD231PS Y0, Y9, Y1        // + (1−β1)·g
	VMOVUPS     Y1, (R8)
	VMULPS      Y0, Y0, Y2        // g²
	VMULPS      (R9), Y10, Y3     // β2·v
	VFMADD231PS Y2, Y11, Y3       // + (1−β2)·g²
	VMOVUPS     Y3, (R9)
	VSQRTPS     Y3, Y4
	VMULPS      Y13, Y4, Y4
	VADDPS      Y14, Y4, Y4       // √v·c + ε
	VMULPS      Y12, Y1, Y5       // step·m
	VDIVPS      Y4, Y5, Y5
	VMOVUPS     (DI), Y6
	VSUBPS      Y5, Y6, Y6
	VMOVUPS     Y6, (DI)
	ADDQ        $32, DI
	ADDQ        $32, SI
	ADDQ        $32, R8
	ADDQ        $32, R9
	DECQ        CX
	JMP         loopa

donea:
	VZEROUPPER
	RET

// func tanhGrad8(dy *float32, y *float32, n int)
//
// dy[i] *= 1 − y[i]² for n a multiple of 8: the tanh derivative through
// its output.
TEXT ·tanhGrad8(SB), NOSPLIT, $0-24
	MOVQ dy+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	VBROADCASTSS ·one32(SB), Y15

loopg:
	TESTQ CX, CX
	JE    doneg
	VMOVUPS      (SI), Y0
	VMOVAPS      Y15, Y1
	VFNMADD231PS Y0, Y0, Y1 // 1 − y²
	VMULPS       (DI), Y1, Y1
	VMOVUPS      Y1, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	DECQ         CX
	JMP          loopg

doneg:
	VZEROUPPER
	RET

// The AVX-512 kernels: a 4×64 block of C in Z0–Z15 (row r, columns
// 16q…16q+15 in Z(4r+q)), four 16-wide loads of B's row in Z16–Z19 and A's
// four elements broadcast into Z20–Z23 at each step. Every element of C
// goes through the same chain of multiply-adds, in the same order, as in
// the 4×16 AVX2 kernels, so both kernel sets give the same bits.
// One 64-wide row of C from (AX) into four registers, or back to (DI).
#define LOAD_ROW64(z0, z1, z2, z3) \
	VMOVUPS (AX), z0;    \
	VMOVUPS 64(AX), z1;  \
	VMOVUPS 128(AX), z2; \
	VMOVUPS 192(AX), z3

#define STORE_ROW64(z0, z1, z2, z3) \
	VMOVUPS z0, (DI);    \
	VMOVUPS z1, 64(DI);  \
	VMOVUPS z2, 128(DI); \
	VMOVUPS z3, 192(DI)

#define LOAD_C4x64 \
	MOVQ DI, AX;                   \
	LOAD_ROW64(Z0, Z1, Z2, Z3);    \
	ADDQ R8, AX;                   \
	LOAD_ROW64(Z4, Z5, Z6, Z7);    \
	ADDQ R8, AX;                   \
	LOAD_ROW64(Z8, Z9, Z10, Z11);  \
	ADDQ R8, AX;                   \
	LOAD_ROW64(Z12, Z13, Z14, Z15)

// Clears Z0–Z15 (VPXORD: AVX-512F; VXORPS on ZMM would need DQ).
#define ZERO_Z0_Z15 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15;

#define STORE_C4x64 \
	STORE_ROW64(Z0, Z1, Z2, Z3);    \
	ADDQ R8, DI;                    \
	STORE_ROW64(Z4, Z5, Z6, Z7);    \
	ADDQ R8, DI;                    \
	STORE_ROW64(Z8, Z9, Z10, Z11);  \
	ADDQ R8, DI;                    \
	STORE_ROW64(Z12, Z13, Z14, Z15)

#define LOAD_B64 \
	VMOVUPS (DX), Z16; \
	VMOVUPS 64(DX), Z17; \
	VMOVUPS 128(DX), Z18; \
	VMOVUPS 192(DX), Z19;

// C's block += B's row (Z16–Z19) times A's broadcasts (Z20–Z23).
#define FMA_4x64 \
	VFMADD231PS Z16, Z20, Z0; \
	VFMADD231PS Z17, Z20, Z1; \
	VFMADD231PS Z18, Z20, Z2; \
	VFMADD231PS Z19, Z20, Z3; \
	VFMADD231PS Z16, Z21, Z4; \
	VFMADD231PS Z17, Z21, Z5; \
	VFMADD231PS Z18, Z21, Z6; \
	VFMADD231PS Z19, Z21, Z7; \
	VFMADD231PS Z16, Z22, Z8; \
	VFMADD231PS Z17, Z22, Z9; \
	VFMADD231PS Z18, Z22, Z10; \
	VFMADD231PS Z19, Z22, Z11; \
	VFMADD231PS Z16, Z23, Z12; \
	VFMADD231PS Z17, Z23, Z13; \
	VFMADD231PS Z18, Z23, Z14; \
	VFMADD231PS Z19, Z23, Z15;

// func gemm4x64(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)
//
// gemm4x16 on 64 columns with AVX-512.
TEXT ·gemm4x64(SB), NOSPLIT, $0-57
	GEMM_ARGS
	MOVQ SI, R11
	LEAQ (SI)(R9*1), R12
	LEAQ (R12)(R9*1), R13
	LEAQ (R13)(R9*1), R14
	MOVBQZX zero+56(FP), AX
	TESTQ   AX, AX
	JNE     zero64
	LOAD_C4x64
	JMP     loop64

zero64:
	ZERO_Z0_Z15

loop64:
	TESTQ CX, CX
	JE    store64
	LOAD_B64
	VBROADCASTSS (R11), Z20
	VBROADCASTSS (R12), Z21
	VBROADCASTSS (R13), Z22
	VBROADCASTSS (R14), Z23
	FMA_4x64
	ADDQ         $4, R11
	ADDQ         $4, R12
	ADDQ         $4, R13
	ADDQ         $4, R14
	ADDQ         R10, DX
	DECQ         CX
	JMP          loop64

store64:
	STORE_C4x64
	VZEROUPPER
	RET

// func gemmT4x64(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)
//
// gemmT4x16 on 64 columns with AVX-512.
TEXT ·gemmT4x64(SB), NOSPLIT, $0-57
	GEMM_ARGS
	MOVBQZX zero+56(FP), AX
	TESTQ   AX, AX
	JNE     zeroT64
	LOAD_C4x64
	JMP     loopT64

zeroT64:
	ZERO_Z0_Z15

loopT64:
	TESTQ CX, CX
	JE    storeT64
	LOAD_B64
	VBROADCASTSS (SI), Z20
	VBROADCASTSS 4(SI), Z21
	VBROADCASTSS 8(SI), Z22
	VBROADCASTSS 12(SI), Z23
	FMA_4x64
	ADDQ         R9, SI
	ADDQ         R10, DX
	DECQ         CX
	JMP          loopT64

storeT64:
	STORE_C4x64
	VZEROUPPER
	RET

// The 8-row kernels: A's rows 0–2 at SI + {0,1,2}·R9, row 3 in R12, rows
// 4–6 at R13 + {0,1,2}·R9, row 7 in R14 (ROWS8 sets them up); BCAST8
// broadcasts A's eight elements of the current step into Z18–Z25 and NEXT8
// moves to the next; BCAST8T does the same for a transposed A, whose eight
// elements are contiguous at SI.
#define ROWS8 \
	LEAQ (SI)(R9*2), R12; \
	ADDQ R9, R12;         \
	LEAQ (SI)(R9*4), R13; \
	LEAQ (R13)(R9*2), R14; \
	ADDQ R9, R14

#define BCAST8 \
	VBROADCASTSS (SI), Z18; \
	VBROADCASTSS (SI)(R9*1), Z19; \
	VBROADCASTSS (SI)(R9*2), Z20; \
	VBROADCASTSS (R12), Z21; \
	VBROADCASTSS (R13), Z22; \
	VBROADCASTSS (R13)(R9*1), Z23; \
	VBROADCASTSS (R13)(R9*2), Z24; \
	VBROADCASTSS (R14), Z25;

#define NEXT8 \
	ADDQ $4, SI;  \
	ADDQ $4, R12; \
	ADDQ $4, R13; \
	ADDQ $4, R14

#define BCAST8T \
	VBROADCASTSS (SI), Z18; \
	VBROADCASTSS 4(SI), Z19; \
	VBROADCASTSS 8(SI), Z20; \
	VBROADCASTSS 12(SI), Z21; \
	VBROADCASTSS 16(SI), Z22; \
	VBROADCASTSS 20(SI), Z23; \
	VBROADCASTSS 24(SI), Z24; \
	VBROADCASTSS 28(SI), Z25;

// The 8×32 AVX-512 kernels: an 8×32 block of C in Z0–Z15 (row r in Z2r,
// Z2r+1), B's row in Z16–Z17, A's eight elements broadcast into Z18–Z25.
// Against the 4×64 tile, each 32-column strip of B's panel (32 KB) stays
// in L1 and every B load feeds twice the multiply-adds. The chains of
// multiply-adds per element are the AVX2 kernels', so are the bits.
#define LOAD_C8x32 \
	MOVQ DI, AX; \
	VMOVUPS (AX), Z0; VMOVUPS 64(AX), Z1; \
	ADDQ R8, AX; \
	VMOVUPS (AX), Z2; VMOVUPS 64(AX), Z3; \
	ADDQ R8, AX; \
	VMOVUPS (AX), Z4; VMOVUPS 64(AX), Z5; \
	ADDQ R8, AX; \
	VMOVUPS (AX), Z6; VMOVUPS 64(AX), Z7; \
	ADDQ R8, AX; \
	VMOVUPS (AX), Z8; VMOVUPS 64(AX), Z9; \
	ADDQ R8, AX; \
	VMOVUPS (AX), Z10; VMOVUPS 64(AX), Z11; \
	ADDQ R8, AX; \
	VMOVUPS (AX), Z12; VMOVUPS 64(AX), Z13; \
	ADDQ R8, AX; \
	VMOVUPS (AX), Z14; VMOVUPS 64(AX), Z15;

#define STORE_C8x32 \
	VMOVUPS Z0, (DI); VMOVUPS Z1, 64(DI); \
	ADDQ R8, DI; \
	VMOVUPS Z2, (DI); VMOVUPS Z3, 64(DI); \
	ADDQ R8, DI; \
	VMOVUPS Z4, (DI); VMOVUPS Z5, 64(DI); \
	ADDQ R8, DI; \
	VMOVUPS Z6, (DI); VMOVUPS Z7, 64(DI); \
	ADDQ R8, DI; \
	VMOVUPS Z8, (DI); VMOVUPS Z9, 64(DI); \
	ADDQ R8, DI; \
	VMOVUPS Z10, (DI); VMOVUPS Z11, 64(DI); \
	ADDQ R8, DI; \
	VMOVUPS Z12, (DI); VMOVUPS Z13, 64(DI); \
	ADDQ R8, DI; \
	VMOVUPS Z14, (DI); VMOVUPS Z15, 64(DI);

// C's 8×32 block += B's row (Z16, Z17) times A's broadcasts (Z18–Z25).
#define FMA_8x32 \
	VFMADD231PS Z16, Z18, Z0; \
	VFMADD231PS Z17, Z18, Z1; \
	VFMADD231PS Z16, Z19, Z2; \
	VFMADD231PS Z17, Z19, Z3; \
	VFMADD231PS Z16, Z20, Z4; \
	VFMADD231PS Z17, Z20, Z5; \
	VFMADD231PS Z16, Z21, Z6; \
	VFMADD231PS Z17, Z21, Z7; \
	VFMADD231PS Z16, Z22, Z8; \
	VFMADD231PS Z17, Z22, Z9; \
	VFMADD231PS Z16, Z23, Z10; \
	VFMADD231PS Z17, Z23, Z11; \
	VFMADD231PS Z16, Z24, Z12; \
	VFMADD231PS Z17, Z24, Z13; \
	VFMADD231PS Z16, Z25, Z14; \
	VFMADD231PS Z17, Z25, Z15;

// func gemm8x32(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)
//
// C[0:8, 0:32] += A[0:8, 0:k] · B[0:k, 0:32], as gemm4x16.
TEXT ·gemm8x32(SB), NOSPLIT, $0-57
	GEMM_ARGS
	ROWS8
	MOVBQZX zero+56(FP), AX
	TESTQ   AX, AX
	JNE     zero832
	LOAD_C8x32
	JMP     loop832

zero832:
	ZERO_Z0_Z15

loop832:
	TESTQ CX, CX
	JE    store832
	VMOVUPS      (DX), Z16
	VMOVUPS      64(DX), Z17
	BCAST8
	FMA_8x32
	NEXT8
	ADDQ         R10, DX
	DECQ         CX
	JMP          loop832

store832:
	STORE_C8x32
	VZEROUPPER
	RET

// func gemmT8x32(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)
//
// C[0:8, 0:32] += Aᵀ[0:8, 0:k] · B[0:k, 0:32], A stored k×lda, as gemmT4x16.
TEXT ·gemmT8x32(SB), NOSPLIT, $0-57
	GEMM_ARGS
	MOVBQZX zero+56(FP), AX
	TESTQ   AX, AX
	JNE     zeroT832
	LOAD_C8x32
	JMP     loopT832

zeroT832:
	ZERO_Z0_Z15

loopT832:
	TESTQ CX, CX
	JE    storeT832
	VMOVUPS      (DX), Z16
	VMOVUPS      64(DX), Z17
	BCAST8T
	FMA_8x32
	ADDQ         R9, SI
	ADDQ         R10, DX
	DECQ         CX
	JMP          loopT832

storeT832:
	STORE_C8x32
	VZEROUPPER
	RET

// The 8×16 AVX-512 kernels, for 16-column strips (a convolution of 16
// channels): eight rows of C in Z0–Z7, so that eight independent chains of
// multiply-adds hide their latency, where a 4×16 tile in ZMM registers
// would have four. The AVX2 kernels' chains again: the same bits.
// BIAS_RELU8 sets eight registers of C's rows to max(row + bias, 0), the
// bias in Z16 and zeros in Z17 (VMAXPS returns its second source, the sum,
// when that is NaN or both are zeros, as BiasAct's loop keeps them).
#define BIAS_RELU8(z0, z1, z2, z3, z4, z5, z6, z7) \
	VADDPS Z16, z0, z0; VADDPS Z16, z1, z1; VADDPS Z16, z2, z2; VADDPS Z16, z3, z3; \
	VADDPS Z16, z4, z4; VADDPS Z16, z5, z5; VADDPS Z16, z6, z6; VADDPS Z16, z7, z7; \
	VMAXPS z0, Z17, z0; VMAXPS z1, Z17, z1; VMAXPS z2, Z17, z2; VMAXPS z3, Z17, z3; \
	VMAXPS z4, Z17, z4; VMAXPS z5, Z17, z5; VMAXPS z6, Z17, z6; VMAXPS z7, Z17, z7

// STORE8 stores eight registers into eight rows of C from DI, R8 apart
// (DI ends at the last row); LOAD8 loads them from AX's rows.
#define STORE8(z0, z1, z2, z3, z4, z5, z6, z7) \
	VMOVUPS z0, (DI); ADDQ R8, DI; VMOVUPS z1, (DI); ADDQ R8, DI; \
	VMOVUPS z2, (DI); ADDQ R8, DI; VMOVUPS z3, (DI); ADDQ R8, DI; \
	VMOVUPS z4, (DI); ADDQ R8, DI; VMOVUPS z5, (DI); ADDQ R8, DI; \
	VMOVUPS z6, (DI); ADDQ R8, DI; VMOVUPS z7, (DI)

#define LOAD8(z0, z1, z2, z3, z4, z5, z6, z7) \
	VMOVUPS (AX), z0; ADDQ R8, AX; VMOVUPS (AX), z1; ADDQ R8, AX; \
	VMOVUPS (AX), z2; ADDQ R8, AX; VMOVUPS (AX), z3; ADDQ R8, AX; \
	VMOVUPS (AX), z4; ADDQ R8, AX; VMOVUPS (AX), z5; ADDQ R8, AX; \
	VMOVUPS (AX), z6; ADDQ R8, AX; VMOVUPS (AX), z7

// C's 8×16 block in Z0–Z7, from (DI) or back to it.
#define LOAD_C8x16 \
	MOVQ DI, AX; \
	LOAD8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)

#define STORE_C8x16 STORE8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)

#define ZERO_Z0_Z7 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7;

// C's 8×16 block += B's row (Z16) times A's eight elements of the step,
// each broadcast from memory inside its multiply-add (AVX-512's embedded
// broadcast): one instruction instead of a broadcast and a multiply-add,
// the same arithmetic. FMA_8x16_ROWS reads A's rows as BCAST8 does,
// FMA_8x16_COLS eight contiguous elements as BCAST8T.
#define FMA_8x16_ROWS \
	VFMADD231PS.BCST (SI), Z16, Z0; \
	VFMADD231PS.BCST (SI)(R9*1), Z16, Z1; \
	VFMADD231PS.BCST (SI)(R9*2), Z16, Z2; \
	VFMADD231PS.BCST (R12), Z16, Z3; \
	VFMADD231PS.BCST (R13), Z16, Z4; \
	VFMADD231PS.BCST (R13)(R9*1), Z16, Z5; \
	VFMADD231PS.BCST (R13)(R9*2), Z16, Z6; \
	VFMADD231PS.BCST (R14), Z16, Z7;

#define FMA_8x16_COLS \
	VFMADD231PS.BCST (SI), Z16, Z0; \
	VFMADD231PS.BCST 4(SI), Z16, Z1; \
	VFMADD231PS.BCST 8(SI), Z16, Z2; \
	VFMADD231PS.BCST 12(SI), Z16, Z3; \
	VFMADD231PS.BCST 16(SI), Z16, Z4; \
	VFMADD231PS.BCST 20(SI), Z16, Z5; \
	VFMADD231PS.BCST 24(SI), Z16, Z6; \
	VFMADD231PS.BCST 28(SI), Z16, Z7;

// The convT kernels' second tile: its rows 0–3 (Z8–Z11) and 4–7
// (Z12–Z15) += G's row (Z16) times the elements at R12, as FMA_8x16_COLS.
#define FMA_4x16_A2_LO \
	VFMADD231PS.BCST (R12), Z16, Z8; \
	VFMADD231PS.BCST 4(R12), Z16, Z9; \
	VFMADD231PS.BCST 8(R12), Z16, Z10; \
	VFMADD231PS.BCST 12(R12), Z16, Z11

#define FMA_4x16_A2_HI \
	VFMADD231PS.BCST 16(R12), Z16, Z12; \
	VFMADD231PS.BCST 20(R12), Z16, Z13; \
	VFMADD231PS.BCST 24(R12), Z16, Z14; \
	VFMADD231PS.BCST 28(R12), Z16, Z15

// CONVT_NEXT steps the two-tile convT kernels to the next position (jumping
// to loop while the row has more) and, at a row's end, to the next row
// (jumping to row while there are more).
#define CONVT_NEXT(loop, row) \
	ADDQ R9, SI;   \
	ADDQ R9, R12;  \
	ADDQ R10, DX;  \
	DECQ CX;       \
	JNE  loop;     \
	ADDQ R11, SI;  \
	ADDQ R11, R12; \
	DECQ BX;       \
	JNE  row

// func gemm8x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)
//
// C[0:8, 0:16] += A[0:8, 0:k] · B[0:k, 0:16], as gemm4x16.
TEXT ·gemm8x16(SB), NOSPLIT, $0-57
	GEMM_ARGS
	ROWS8
	MOVBQZX zero+56(FP), AX
	TESTQ   AX, AX
	JNE     zero816
	LOAD_C8x16
	JMP     loop816

zero816:
	ZERO_Z0_Z7

loop816:
	TESTQ CX, CX
	JE    store816
	VMOVUPS      (DX), Z16
	FMA_8x16_ROWS
	NEXT8
	ADDQ         R10, DX
	DECQ         CX
	JMP          loop816

store816:
	STORE_C8x16
	VZEROUPPER
	RET

// func gemmT8x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int, zero bool)
//
// C[0:8, 0:16] += Aᵀ[0:8, 0:k] · B[0:k, 0:16], A stored k×lda, as gemmT4x16.
TEXT ·gemmT8x16(SB), NOSPLIT, $0-57
	GEMM_ARGS
	MOVBQZX zero+56(FP), AX
	TESTQ   AX, AX
	JNE     zeroT816
	LOAD_C8x16
	JMP     loopT816

zeroT816:
	ZERO_Z0_Z7

loopT816:
	TESTQ CX, CX
	JE    storeT816
	VMOVUPS      (DX), Z16
	FMA_8x16_COLS
	ADDQ         R9, SI
	ADDQ         R10, DX
	DECQ         CX
	JMP          loopT816

storeT816:
	STORE_C8x16
	VZEROUPPER
	RET

// func biasReLU8(x *float32, bias *float32, n int)
//
// x[i] = max(x[i] + bias[i], 0) for n a multiple of 8, as BiasAct's loop:
// VMAXPS returns its second source (the sum) when that is NaN or when both
// are zeros, so NaN and −0 pass as they do there.
TEXT ·biasReLU8(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), DI
	MOVQ   bias+8(FP), SI
	MOVQ   n+16(FP), CX
	SHRQ   $3, CX
	VXORPS Y15, Y15, Y15

loopr:
	TESTQ   CX, CX
	JE      doner
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMAXPS  Y0, Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JMP     loopr

doner:
	VZEROUPPER
	RET

// func reluGrad8(dy *float32, y *float32, n int)
//
// dy[i] = 0 where y[i] ≤ 0, for n a multiple of 8: the ReLU derivative
// through its output (a NaN output keeps its gradient, as ActGrad's loop).
TEXT ·reluGrad8(SB), NOSPLIT, $0-24
	MOVQ   dy+0(FP), DI
	MOVQ   y+8(FP), SI
	MOVQ   n+16(FP), CX
	SHRQ   $3, CX
	VXORPS Y15, Y15, Y15

loopq:
	TESTQ   CX, CX
	JE      doneq
	VMOVUPS (SI), Y0
	VCMPPS  $6, Y15, Y0, Y1 // y > 0 or unordered (NLE_UQ)
	VANDPS  (DI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JMP     loopq

doneq:
	VZEROUPPER
	RET

// func convT8x16(c *float32, ldc int, a *float32, ldx int, g *float32, ldg int, ow int, oh int, ldy int, zero bool)
//
// A convolution's weight gradient for eight patch elements and sixteen
// channels over one image: C[0:8, 0:16] += Σ_{oy<oh} Σ_{ox<ow}
// A(oy, ox)[0:8]ᵀ · G[oy·ow + ox, 0:16], A(oy, ox) = a + oy·ldy + ox·ldx (the
// eight elements sit side by side in a kernel row's run of pixels) and G the
// output gradient, ldg apart. Positions in order, so each element's chain
// is im2col's product's (gemmT8x16 over the patches): the same bits.
TEXT ·convT8x16(SB), NOSPLIT, $0-73
	CONVT_ARGS
	MOVBQZX zero+72(FP), AX
	TESTQ   AX, AX
	JNE     zeroct
	LOAD_C8x16
	JMP     rowct

zeroct:
	ZERO_Z0_Z7

rowct:
	MOVQ ow+48(FP), CX

loopct:
	VMOVUPS (DX), Z16
	FMA_8x16_COLS
	ADDQ    R9, SI
	ADDQ    R10, DX
	DECQ    CX
	JNE     loopct
	ADDQ    R11, SI
	DECQ    BX
	JNE     rowct

	STORE_C8x16
	VZEROUPPER
	RET

// func convT16x16(c *float32, ldc int, a *float32, ldx int, g *float32, ldg int, ow int, oh int, ldy int, zero bool, a2 *float32)
//
// convT8x16 for two tiles of the weight gradient at once, rows 0–7 of C
// from the eight elements at a and rows 8–15 from those at a2 (the same
// positions, another run of the patch): sixteen chains of multiply-adds
// share each load of G. Each element's chain is convT8x16's: the same bits.
TEXT ·convT16x16(SB), NOSPLIT, $0-88
	CONVT_ARGS
	MOVQ a2+80(FP), R12
	MOVBQZX zero+72(FP), AX
	TESTQ   AX, AX
	JNE     zeroct16
	MOVQ    DI, AX
	LOAD8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ    R8, AX
	LOAD8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	JMP     rowct16

zeroct16:
	ZERO_Z0_Z15

rowct16:
	MOVQ ow+48(FP), CX

loopct16:
	VMOVUPS (DX), Z16
	FMA_8x16_COLS
	FMA_4x16_A2_LO
	FMA_4x16_A2_HI
	CONVT_NEXT(loopct16, rowct16)

	STORE8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ    R8, DI
	STORE8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VZEROUPPER
	RET

// func convT12x16(c *float32, ldc int, a *float32, ldx int, g *float32, ldg int, ow int, oh int, ldy int, zero bool, a2 *float32, c2 *float32)
//
// convT16x16 for a tile and the lower half of another, whose first four
// rows belong to the tile before it (a run's last tile, stepped back by
// four or more): rows 0–7 of C at c from the eight elements at a, four
// rows at c2 from the four at a2. A third fewer multiply-adds than both
// tiles whole (MinAtar Breakout's kernel rows of 12 values). Each element's
// chain is convT8x16's: the same bits.
TEXT ·convT12x16(SB), NOSPLIT, $0-96
	CONVT_ARGS
	MOVQ a2+80(FP), R12
	MOVQ c2+88(FP), R13
	MOVBQZX zero+72(FP), AX
	TESTQ   AX, AX
	JNE     zeroct12
	LOAD_C8x16
	MOVQ    R13, AX
	VMOVUPS (AX), Z8; ADDQ R8, AX; VMOVUPS (AX), Z9; ADDQ R8, AX
	VMOVUPS (AX), Z10; ADDQ R8, AX; VMOVUPS (AX), Z11
	JMP     rowct12

zeroct12:
	ZERO_Z0_Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11

rowct12:
	MOVQ ow+48(FP), CX

loopct12:
	VMOVUPS (DX), Z16
	FMA_8x16_COLS
	FMA_4x16_A2_LO
	CONVT_NEXT(loopct12, rowct12)

	STORE_C8x16
	MOVQ    R13, DI
	VMOVUPS Z8, (DI); ADDQ R8, DI; VMOVUPS Z9, (DI); ADDQ R8, DI
	VMOVUPS Z10, (DI); ADDQ R8, DI; VMOVUPS Z11, (DI)
	VZEROUPPER
	RET

// func conv16x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, run int, runs int, skip int, bias *float32, c2 *float32, a2 *float32)
//
// A direct convolution for sixteen output positions and sixteen channels,
// with the bias and ReLU: eight rows of C at c from the patches of the
// positions at a, eight at c2 from those at a2 (another row of
// positions), C[r, 0:16] = max(bias + Σ_q Σ_j A_r[q·skip + j] ·
// B[q·run + j, 0:16], 0), A_r = a + r·lda. A patch is runs runs of run
// values (a kernel row's K·C pixels) skip apart in the image: the pixels
// are read where they lie instead of copied into patches, and sixteen
// chains of multiply-adds share each load of B. Each element's chain runs
// over the patch in im2col's column order from zero, then BiasAct's add
// and max: the bits of Im2Col, MatMul and BiasAct. With a2 = a and c2 = c
// it computes eight positions (twice over, the same values). The run
// counter and the step between runs live on the stack, their registers
// holding the second set of rows.
TEXT ·conv16x16(SB), NOSPLIT, $16-96
	GEMM_ARGS
	ROWS8
	MOVQ skip+64(FP), AX
	SUBQ CX, AX
	SHLQ $2, AX
	MOVQ AX, step-16(SP)  // from a run's end to the next run's start, bytes
	MOVQ runs+56(FP), AX
	MOVQ AX, left-8(SP)
	MOVQ a2+88(FP), AX    // the second rows: AX + {0,1,2}·R9, R15, BX + {0,1,2}·R9, R11
	LEAQ (AX)(R9*2), R15
	ADDQ R9, R15
	LEAQ (AX)(R9*4), BX
	LEAQ (BX)(R9*2), R11
	ADDQ R9, R11
	ZERO_Z0_Z15

run16:
	MOVQ run+48(FP), CX

loop16:
	VMOVUPS (DX), Z16
	FMA_8x16_ROWS
	VFMADD231PS.BCST (AX), Z16, Z8
	VFMADD231PS.BCST (AX)(R9*1), Z16, Z9
	VFMADD231PS.BCST (AX)(R9*2), Z16, Z10
	VFMADD231PS.BCST (R15), Z16, Z11
	VFMADD231PS.BCST (BX), Z16, Z12
	VFMADD231PS.BCST (BX)(R9*1), Z16, Z13
	VFMADD231PS.BCST (BX)(R9*2), Z16, Z14
	VFMADD231PS.BCST (R11), Z16, Z15
	NEXT8
	ADDQ    $4, AX
	ADDQ    $4, R15
	ADDQ    $4, BX
	ADDQ    $4, R11
	ADDQ    R10, DX
	DECQ    CX
	JNE     loop16
	MOVQ    step-16(SP), CX
	ADDQ    CX, SI
	ADDQ    CX, R12
	ADDQ    CX, R13
	ADDQ    CX, R14
	ADDQ    CX, AX
	ADDQ    CX, R15
	ADDQ    CX, BX
	ADDQ    CX, R11
	DECQ    left-8(SP)
	JNE     run16

	MOVQ    bias+72(FP), AX
	VMOVUPS (AX), Z16
	VPXORD  Z17, Z17, Z17
	BIAS_RELU8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	BIAS_RELU8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	STORE8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	MOVQ    c2+80(FP), DI
	STORE8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	VZEROUPPER
	RET

// func transpose8x8(dst *float32, ldd int, src *float32, lds int)
//
// dst[j·ldd + i] = src[i·lds + j] for i, j < 8: eight rows loaded, unpacked
// in pairs, shuffled in fours and their halves swapped, eight columns
// stored. A copy: no arithmetic, the same bits.
TEXT ·transpose8x8(SB), NOSPLIT, $0-32
	MOVQ src+16(FP), AX
	MOVQ lds+24(FP), R8
	SHLQ $2, R8
	LOAD8(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)

	// Rows a…h: pairs interleaved (a0 b0 a1 b1 | a4 b4 a5 b5, …).
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	// Fours: a0 b0 c0 d0 | a4 b4 c4 d4, a1 b1 c1 d1 | a5 …, and e… h.
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	// Columns: the low halves give columns 0–3, the high ones 4–7.
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15

	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	STORE8(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	VZEROUPPER
	RET

// func prefetchTile(c *float32, ldc int)
//
// Asks for an 8×32 block of C at c (rows ldc floats apart: eight rows of
// 128 bytes) to be brought into L1, with the intent to write (PREFETCHW,
// encoded by hand: Go's assembler lacks it). Prefetches never fault.
// PREFETCHW_ROW is PREFETCHW (DI) then PREFETCHW 64(DI).
#define PREFETCHW_ROW \
	BYTE $0x0F; BYTE $0x0D; BYTE $0x0F; \
	BYTE $0x0F; BYTE $0x0D; BYTE $0x4F; BYTE $0x40

TEXT ·prefetchTile(SB), NOSPLIT, $0-16
	MOVQ c+0(FP), DI
	MOVQ ldc+8(FP), R8
	SHLQ $2, R8
	PREFETCHW_ROW; ADDQ R8, DI
	PREFETCHW_ROW; ADDQ R8, DI
	PREFETCHW_ROW; ADDQ R8, DI
	PREFETCHW_ROW; ADDQ R8, DI
	PREFETCHW_ROW; ADDQ R8, DI
	PREFETCHW_ROW; ADDQ R8, DI
	PREFETCHW_ROW; ADDQ R8, DI
	PREFETCHW_ROW
	RET

