//go:build amd64 && !purego

#include "textflag.h"

// GEMM1_ARGS loads a one-row kernel's arguments (C's row in DI, A's at SI
// inca·4 bytes apart in R9, B's rows at DX ldb·4 apart in R10, k in CX)
// and tests zero (AX ≠ 0: start from zeros).
#define GEMM1_ARGS \
	MOVQ c+0(FP), DI;      \
	MOVQ a+8(FP), SI;      \
	MOVQ inca+16(FP), R9;  \
	MOVQ b+24(FP), DX;     \
	MOVQ ldb+32(FP), R10;  \
	MOVQ k+40(FP), CX;     \
	SHLQ $2, R9;           \
	SHLQ $2, R10;          \
	MOVBQZX zero+48(FP), AX; \
	TESTQ AX, AX

// func gemv(y *float32, x *float32, b *float32, ldb int, k int, w int)
//
// y[0:w] += Σ_{p<k} x[p]·B[p, 0:w] for B's rows ldb apart, w a multiple of
// 16: eight rows of B a pass, then the last k mod 8 one at a time, each
// element of y taking its multiply-adds in order of p (one fused
// multiply-add each, as the product kernels do), so a row of a product
// computed here has the bits the tiles give it. B's rows stream in order,
// the weights of a decoding step read once. Each row's part is a short run
// (a column band of a layer's weight, split between the cores), so the
// more runs read at once, the more of the memory's rate a core draws:
// eight rows a pass rather than four read 20.2 → 24.2 GB/s in SmolLM-135M's
// batch-1 decoding and 24.0 → 26.8 in the 20M model's (medians of five
// alternated runs of BenchmarkGenerate/…/batch=1, two-core Zen 4).
TEXT ·gemv(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ ldb+24(FP), R8
	SHLQ $2, R8
	MOVQ k+32(FP), CX
	MOVQ w+40(FP), AX
	SHLQ $2, AX
	MOVQ AX, w+40(FP) // the width in bytes, which the loops compare with

// GEMV_ROW adds row's 16 values at AX times the broadcast x to y's (Y0, Y1).
#define GEMV_ROW(row, x) \
	VFMADD231PS (row)(AX*1), x, Y0; \
	VFMADD231PS 32(row)(AX*1), x, Y1

gemv8rows:
	CMPQ CX, $8
	JLT  gemv1rows
	VBROADCASTSS 0(SI), Y8
	VBROADCASTSS 4(SI), Y9
	VBROADCASTSS 8(SI), Y10
	VBROADCASTSS 12(SI), Y11
	VBROADCASTSS 16(SI), Y12
	VBROADCASTSS 20(SI), Y13
	VBROADCASTSS 24(SI), Y14
	VBROADCASTSS 28(SI), Y15
	LEAQ (DX)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R9
	LEAQ (R9)(R8*1), R13
	LEAQ (R13)(R8*1), R14
	LEAQ (R14)(R8*1), BX
	XORQ AX, AX

gemv8cols:
	VMOVUPS (DI)(AX*1), Y0
	VMOVUPS 32(DI)(AX*1), Y1
	GEMV_ROW(DX, Y8)
	GEMV_ROW(R10, Y9)
	GEMV_ROW(R11, Y10)
	GEMV_ROW(R12, Y11)
	GEMV_ROW(R9, Y12)
	GEMV_ROW(R13, Y13)
	GEMV_ROW(R14, Y14)
	GEMV_ROW(BX, Y15)
	VMOVUPS Y0, (DI)(AX*1)
	VMOVUPS Y1, 32(DI)(AX*1)
	ADDQ    $64, AX
	CMPQ    AX, w+40(FP)
	JLT     gemv8cols
	ADDQ    $32, SI
	LEAQ    (BX)(R8*1), DX
	SUBQ    $8, CX
	JMP     gemv8rows

gemv1rows:
	TESTQ CX, CX
	JZ    gemvdone
	VBROADCASTSS (SI), Y8
	XORQ AX, AX

gemv1cols:
	VMOVUPS (DI)(AX*1), Y0
	VMOVUPS 32(DI)(AX*1), Y1
	GEMV_ROW(DX, Y8)
	VMOVUPS Y0, (DI)(AX*1)
	VMOVUPS Y1, 32(DI)(AX*1)
	ADDQ    $64, AX
	CMPQ    AX, w+40(FP)
	JLT     gemv1cols
	ADDQ    $4, SI
	ADDQ    R8, DX
	DECQ    CX
	JMP     gemv1rows

gemvdone:
	VZEROUPPER
	RET

// EXP8 sets Y3 to e^Y0 in eight lanes (Y0 is clobbered), as exp32 computes
// it: e^x = 2ⁿ·e^r, n = ⌊x·log₂e + ½⌋, r = x − n·ln2 in two parts, e^r by
// Cephes' polynomial; 0 below −87 (Y5 ← x ≥ −87) and +Inf above 88 (Y6 ←
// x > 88). It needs Y10–Y15 loaded with 88, −87, ln2lo, ln2hi, ½, log₂e
// and uses Y1, Y2, Y4.
#define EXP8 \
	VCMPPS       $13, Y11, Y0, Y5;            \
	VCMPPS       $14, Y10, Y0, Y6;            \
	VMAXPS       Y11, Y0, Y0;                 \
	VMINPS       Y10, Y0, Y0;                 \
	VMOVAPS      Y14, Y1;                     \
	VFMADD231PS  Y15, Y0, Y1;                 \
	VROUNDPS     $1, Y1, Y1;                  \
	VMOVAPS      Y0, Y2;                      \
	VFNMADD231PS Y13, Y1, Y2;                 \
	VFNMADD231PS Y12, Y1, Y2;                 \
	VBROADCASTSS ·expConsts+24(SB), Y3;       \
	VBROADCASTSS ·expConsts+28(SB), Y4;       \
	VFMADD213PS  Y4, Y2, Y3;                  \
	VBROADCASTSS ·expConsts+32(SB), Y4;       \
	VFMADD213PS  Y4, Y2, Y3;                  \
	VBROADCASTSS ·expConsts+36(SB), Y4;       \
	VFMADD213PS  Y4, Y2, Y3;                  \
	VBROADCASTSS ·expConsts+40(SB), Y4;       \
	VFMADD213PS  Y4, Y2, Y3;                  \
	VBROADCASTSS ·expConsts+44(SB), Y4;       \
	VFMADD213PS  Y4, Y2, Y3;                  \
	VMULPS       Y2, Y2, Y4;                  \
	VFMADD213PS  Y2, Y4, Y3;                  \
	VBROADCASTSS ·expConsts+48(SB), Y4;       \
	VADDPS       Y4, Y3, Y3;                  \
	VCVTTPS2DQ   Y1, Y1;                      \
	VPSLLD       $23, Y1, Y1;                 \
	VPADDD       Y1, Y3, Y3;                  \
	VANDPS       Y5, Y3, Y3;                  \
	VBROADCASTSS ·expConsts+52(SB), Y4;       \
	VBLENDVPS    Y6, Y4, Y3, Y3

#define EXP_CONSTS \
	VBROADCASTSS ·expConsts+0(SB), Y15;  \
	VBROADCASTSS ·expConsts+4(SB), Y14;  \
	VBROADCASTSS ·expConsts+8(SB), Y13;  \
	VBROADCASTSS ·expConsts+12(SB), Y12; \
	VBROADCASTSS ·expConsts+16(SB), Y11; \
	VBROADCASTSS ·expConsts+20(SB), Y10

// func expSum8(dst *float32, src *float32, n int, scale float32, shift float32) float32
//
// dst[i] = e^(src[i]·scale − shift) for i < n (a multiple of 8; dst may be
// src), returning their sum (eight running sums, added at the end).
TEXT ·expSum8(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	SHRQ         $3, CX
	VBROADCASTSS scale+24(FP), Y9
	VBROADCASTSS shift+28(FP), Y8
	EXP_CONSTS
	VXORPS       Y7, Y7, Y7

expsumloop:
	TESTQ       CX, CX
	JE          expsumdone
	VMOVUPS     (SI), Y0
	VFMSUB213PS Y8, Y9, Y0 // x·scale − shift
	EXP8
	VMOVUPS     Y3, (DI)
	VADDPS      Y3, Y7, Y7
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JMP         expsumloop

expsumdone:
	VEXTRACTF128 $1, Y7, X1
	VADDPS       X1, X7, X7
	VHADDPS      X7, X7, X7
	VHADDPS      X7, X7, X7
	MOVSS        X7, ret+32(FP)
	VZEROUPPER
	RET

// func swiglu8(h *float32, gate *float32, up *float32, n int)
//
// h[i] = g[i] / (1 + e^(−g[i])) · u[i] for i < n (a multiple of 8).
TEXT ·swiglu8(SB), NOSPLIT, $0-32
	MOVQ         h+0(FP), DI
	MOVQ         gate+8(FP), SI
	MOVQ         up+16(FP), DX
	MOVQ         n+24(FP), CX
	SHRQ         $3, CX
	EXP_CONSTS
	VBROADCASTSS ·expConsts+48(SB), Y9 // 1
	VXORPS       Y8, Y8, Y8

swigluloop:
	TESTQ   CX, CX
	JE      swiglulast
	VMOVUPS (SI), Y7
	VSUBPS  Y7, Y8, Y0 // −g
	EXP8
	VADDPS  Y9, Y3, Y3 // 1 + e^(−g)
	VDIVPS  Y3, Y7, Y7 // g / (1 + e^(−g))
	VMULPS  (DX), Y7, Y7
	VMOVUPS Y7, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JMP     swigluloop

swiglulast:
	VZEROUPPER
	RET

// func swigluGrad8(dg *float32, du *float32, dh *float32, gate *float32, up *float32, n int)
//
// With s = 1/(1 + e^(−g)): dg = dh·u·s·(1 + g·(1 − s)), du = dh·g·s, for
// i < n (a multiple of 8).
TEXT ·swigluGrad8(SB), NOSPLIT, $0-48
	MOVQ         dg+0(FP), DI
	MOVQ         du+8(FP), R8
	MOVQ         dh+16(FP), R9
	MOVQ         gate+24(FP), SI
	MOVQ         up+32(FP), DX
	MOVQ         n+40(FP), CX
	SHRQ         $3, CX
	EXP_CONSTS
	VBROADCASTSS ·expConsts+48(SB), Y9 // 1
	VXORPS       Y8, Y8, Y8

swiglugradloop:
	TESTQ   CX, CX
	JE      swiglugraddone
	VMOVUPS (SI), Y7   // g
	VSUBPS  Y7, Y8, Y0 // −g
	EXP8
	VADDPS  Y9, Y3, Y3 // 1 + e^(−g)
	VDIVPS  Y3, Y9, Y3 // s
	VMOVUPS (R9), Y4   // dh
	VMULPS  Y3, Y4, Y4 // dh·s
	VMULPS  Y7, Y4, Y5 // dh·g·s
	VMOVUPS Y5, (R8)
	VSUBPS  Y3, Y9, Y6 // 1 − s
	VMULPS  Y7, Y6, Y6 // g·(1 − s)
	VADDPS  Y9, Y6, Y6 // 1 + g·(1 − s)
	VMULPS  (DX), Y4, Y4
	VMULPS  Y6, Y4, Y4 // dh·s·u·(1 + g·(1 − s))
	VMOVUPS Y4, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	ADDQ    $32, R8
	ADDQ    $32, R9
	DECQ    CX
	JMP     swiglugradloop

swiglugraddone:
	VZEROUPPER
	RET

// func gemm1x64(c *float32, a *float32, inca int, b *float32, ldb int, k int, zero bool)
//
// gemm1x16 over 64 columns: eight independent chains of multiply-adds
// where gemm1x16's two wait on each other's latency (the one-row products
// of attention over a KV cache). Each element's chain is gemm1x16's.
TEXT ·gemm1x64(SB), NOSPLIT, $0-49
	GEMM1_ARGS
	JNE     zeroT164
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	JMP     loopT164

zeroT164:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

loopT164:
	TESTQ CX, CX
	JE    storeT164
	VBROADCASTSS (SI), Y10
	VFMADD231PS  (DX), Y10, Y0
	VFMADD231PS  32(DX), Y10, Y1
	VFMADD231PS  64(DX), Y10, Y2
	VFMADD231PS  96(DX), Y10, Y3
	VFMADD231PS  128(DX), Y10, Y4
	VFMADD231PS  160(DX), Y10, Y5
	VFMADD231PS  192(DX), Y10, Y6
	VFMADD231PS  224(DX), Y10, Y7
	ADDQ         R9, SI
	ADDQ         R10, DX
	DECQ         CX
	JMP          loopT164

storeT164:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET

// func max8(x *float32, n int) float32
//
// The largest of x[i] for i < n (a positive multiple of 8): four running
// maxima, combined at the end. A NaN may be skipped; the callers' sums of
// exponentials carry it instead.
TEXT ·max8(SB), NOSPLIT, $0-20
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	VMOVUPS (SI), Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	ADDQ    $32, SI
	SUBQ    $8, CX

max32loop:
	CMPQ   CX, $32
	JLT    max8loop
	VMAXPS (SI), Y0, Y0
	VMAXPS 32(SI), Y1, Y1
	VMAXPS 64(SI), Y2, Y2
	VMAXPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	SUBQ   $32, CX
	JMP    max32loop

max8loop:
	TESTQ  CX, CX
	JE     maxdone
	VMAXPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX
	JMP    max8loop

maxdone:
	VMAXPS       Y1, Y0, Y0
	VMAXPS       Y3, Y2, Y2
	VMAXPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4E, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xB1, X0, X1
	VMAXPS       X1, X0, X0
	MOVSS        X0, ret+16(FP)
	VZEROUPPER
	RET

// func gemm1x32(c *float32, a *float32, inca int, b *float32, ldb int, k int, zero bool)
//
// gemm1x64 over 32 columns: a row of a packed group (PackWeight's layout,
// ldb 32) is one contiguous run, read in the order it lies with C's row in
// registers (batch-1 decoding; two passes of gemm1x16 over alternate
// halves of each row drew about half the memory's rate). The same chains.
TEXT ·gemm1x32(SB), NOSPLIT, $0-49
	GEMM1_ARGS
	JNE     zeroT132
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	JMP     loopT132

zeroT132:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

loopT132:
	TESTQ CX, CX
	JE    storeT132
	VBROADCASTSS (SI), Y10
	VFMADD231PS  (DX), Y10, Y0
	VFMADD231PS  32(DX), Y10, Y1
	VFMADD231PS  64(DX), Y10, Y2
	VFMADD231PS  96(DX), Y10, Y3
	ADDQ         R9, SI
	ADDQ         R10, DX
	DECQ         CX
	JMP          loopT132

storeT132:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VZEROUPPER
	RET
