#include "textflag.h"

// TRANSPOSE turns the accumulators of four rows × 16 inputs (r0..r3) into
// Z20..Z23, whose 128-bit lane L holds the four rows' results for inputs
// 4L, 4L+1, 4L+2, 4L+3 respectively.
#define TRANSPOSE(r0, r1, r2, r3) \
	VUNPCKLPS r1, r0, Z16 \
	VUNPCKHPS r1, r0, Z17 \
	VUNPCKLPS r3, r2, Z18 \
	VUNPCKHPS r3, r2, Z19 \
	VUNPCKLPD Z18, Z16, Z20 \
	VUNPCKHPD Z18, Z16, Z21 \
	VUNPCKLPD Z19, Z17, Z22 \
	VUNPCKHPD Z19, Z17, Z23

// PUT writes lane L of reg (four rows of one input) to the input's output
// row at DI, then steps DI to the next input (AX bytes on); after the last
// input (CX counts them down) it returns.
#define PUT(reg, L) \
	DECQ          CX \
	JLT           done \
	VEXTRACTF32X4 $L, reg, X16 \
	VMOVUPS       X16, (DI) \
	ADDQ          AX, DI

#define PUT16 \
	PUT(Z20, 0) \
	PUT(Z21, 0) \
	PUT(Z22, 0) \
	PUT(Z23, 0) \
	PUT(Z20, 1) \
	PUT(Z21, 1) \
	PUT(Z22, 1) \
	PUT(Z23, 1) \
	PUT(Z20, 2) \
	PUT(Z21, 2) \
	PUT(Z22, 2) \
	PUT(Z23, 2) \
	PUT(Z20, 3) \
	PUT(Z21, 3) \
	PUT(Z22, 3) \
	PUT(Z23, 3)

// func gemm4AVX512(out *float32, ldo, n int, w *float32, stride int, xT *float32, np, k int)
//
// The AVX-512 form of gemm4AVX2: one step of i loads 64 inputs as four
// vectors, broadcasts one weight per row and does sixteen FMAs into
// sixteen accumulators (4 rows × 64 inputs). A batch that is not a
// multiple of 64 finishes 16 inputs at a time.
TEXT ·gemm4AVX512(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ w+24(FP), SI
	MOVQ stride+32(FP), R8
	MOVQ xT+40(FP), DX
	MOVQ np+48(FP), R10
	MOVQ k+56(FP), R11
	SHLQ $2, R8
	LEAQ (SI)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	LEAQ (R13)(R8*1), BX
	MOVQ R10, R8         // inputs left
	SHLQ $2, R10         // np in bytes

tile64:
	CMPQ   R8, $64
	JLT    tile16
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ   DX, R9
	XORQ   AX, AX
	MOVQ   R11, CX

step64:
	VMOVUPS      (R9), Z16
	VMOVUPS      64(R9), Z17
	VMOVUPS      128(R9), Z18
	VMOVUPS      192(R9), Z19
	VBROADCASTSS (SI)(AX*1), Z20
	VBROADCASTSS (R12)(AX*1), Z21
	VBROADCASTSS (R13)(AX*1), Z22
	VBROADCASTSS (BX)(AX*1), Z23
	VFMADD231PS  Z20, Z16, Z0
	VFMADD231PS  Z20, Z17, Z1
	VFMADD231PS  Z20, Z18, Z2
	VFMADD231PS  Z20, Z19, Z3
	VFMADD231PS  Z21, Z16, Z4
	VFMADD231PS  Z21, Z17, Z5
	VFMADD231PS  Z21, Z18, Z6
	VFMADD231PS  Z21, Z19, Z7
	VFMADD231PS  Z22, Z16, Z8
	VFMADD231PS  Z22, Z17, Z9
	VFMADD231PS  Z22, Z18, Z10
	VFMADD231PS  Z22, Z19, Z11
	VFMADD231PS  Z23, Z16, Z12
	VFMADD231PS  Z23, Z17, Z13
	VFMADD231PS  Z23, Z18, Z14
	VFMADD231PS  Z23, Z19, Z15
	ADDQ         $4, AX
	ADDQ         R10, R9
	DECQ         CX
	JNZ          step64

	MOVQ ldo+8(FP), AX
	SHLQ $2, AX
	MOVQ n+16(FP), CX
	TRANSPOSE(Z0, Z4, Z8, Z12)
	PUT16
	TRANSPOSE(Z1, Z5, Z9, Z13)
	PUT16
	TRANSPOSE(Z2, Z6, Z10, Z14)
	PUT16
	TRANSPOSE(Z3, Z7, Z11, Z15)
	PUT16
	MOVQ CX, n+16(FP)
	ADDQ $256, DX
	SUBQ $64, R8
	JMP  tile64

tile16:
	CMPQ   R8, $16
	JLT    done
	VPXORD Z0, Z0, Z0
	VPXORD Z4, Z4, Z4
	VPXORD Z8, Z8, Z8
	VPXORD Z12, Z12, Z12
	MOVQ   DX, R9
	XORQ   AX, AX
	MOVQ   R11, CX

step16:
	VMOVUPS      (R9), Z16
	VBROADCASTSS (SI)(AX*1), Z20
	VBROADCASTSS (R12)(AX*1), Z21
	VBROADCASTSS (R13)(AX*1), Z22
	VBROADCASTSS (BX)(AX*1), Z23
	VFMADD231PS  Z20, Z16, Z0
	VFMADD231PS  Z21, Z16, Z4
	VFMADD231PS  Z22, Z16, Z8
	VFMADD231PS  Z23, Z16, Z12
	ADDQ         $4, AX
	ADDQ         R10, R9
	DECQ         CX
	JNZ          step16

	MOVQ ldo+8(FP), AX
	SHLQ $2, AX
	MOVQ n+16(FP), CX
	TRANSPOSE(Z0, Z4, Z8, Z12)
	PUT16
	MOVQ CX, n+16(FP)
	ADDQ $64, DX
	SUBQ $16, R8
	JMP  tile16

done:
	VZEROUPPER
	RET
