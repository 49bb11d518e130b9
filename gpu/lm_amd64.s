//go:build amd64 && !purego

#include "textflag.h"

// func gemv4(y *float32, x *float32, b *float32, ldb int, k int, w int)
//
// y[0:w] += Σ_{p<k} x[p]·B[p, 0:w] for B's rows ldb apart, w a multiple of
// 16: four rows of B a pass, each element of y taking its multiply-adds in
// order of p (one fused multiply-add each, as the product kernels do), so
// a row of a product computed here has the bits the tiles give it. B's
// rows stream in order, the weights of a decoding step read once.
TEXT ·gemv4(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ ldb+24(FP), R8
	SHLQ $2, R8
	MOVQ k+32(FP), CX
	MOVQ w+40(FP), BX
	SHLQ $2, BX

gemv4rows:
	CMPQ CX, $4
	JL   gemv4one
	VBROADCASTSS 0(SI), Y8
	VBROADCASTSS 4(SI), Y9
	VBROADCASTSS 8(SI), Y10
	VBROADCASTSS 12(SI), Y11
	LEAQ (DX)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	XORQ AX, AX

gemv4cols:
	VMOVUPS     (DI)(AX*1), Y0
	VMOVUPS     32(DI)(AX*1), Y1
	VFMADD231PS (DX)(AX*1), Y8, Y0
	VFMADD231PS 32(DX)(AX*1), Y8, Y1
	VFMADD231PS (R10)(AX*1), Y9, Y0
	VFMADD231PS 32(R10)(AX*1), Y9, Y1
	VFMADD231PS (R11)(AX*1), Y10, Y0
	VFMADD231PS 32(R11)(AX*1), Y10, Y1
	VFMADD231PS (R12)(AX*1), Y11, Y0
	VFMADD231PS 32(R12)(AX*1), Y11, Y1
	VMOVUPS     Y0, (DI)(AX*1)
	VMOVUPS     Y1, 32(DI)(AX*1)
	ADDQ        $64, AX
	CMPQ        AX, BX
	JL          gemv4cols
	ADDQ        $16, SI
	LEAQ        (R12)(R8*1), DX
	SUBQ        $4, CX
	JMP         gemv4rows

gemv4one:
	TESTQ CX, CX
	JZ    gemv4done
	VBROADCASTSS (SI), Y8
	XORQ AX, AX

gemv4onecols:
	VMOVUPS     (DI)(AX*1), Y0
	VMOVUPS     32(DI)(AX*1), Y1
	VFMADD231PS (DX)(AX*1), Y8, Y0
	VFMADD231PS 32(DX)(AX*1), Y8, Y1
	VMOVUPS     Y0, (DI)(AX*1)
	VMOVUPS     Y1, 32(DI)(AX*1)
	ADDQ        $64, AX
	CMPQ        AX, BX
	JL          gemv4onecols
	ADDQ        $4, SI
	ADDQ        R8, DX
	DECQ        CX
	JMP         gemv4one

gemv4done:
	VZEROUPPER
	RET
