#include "textflag.h"

// TRANSPOSE turns the accumulators of four rows × 8 inputs (r0..r3) into
// Y8..Y11, whose 128-bit lane L holds the four rows' results for inputs
// 4L, 4L+1, 4L+2, 4L+3 respectively.
#define TRANSPOSE(r0, r1, r2, r3) \
	VUNPCKLPS r1, r0, Y12 \
	VUNPCKHPS r1, r0, Y13 \
	VUNPCKLPS r3, r2, Y14 \
	VUNPCKHPS r3, r2, Y15 \
	VUNPCKLPD Y14, Y12, Y8 \
	VUNPCKHPD Y14, Y12, Y9 \
	VUNPCKLPD Y15, Y13, Y10 \
	VUNPCKHPD Y15, Y13, Y11

// PUT writes lane L of reg (four rows of one input) to the input's output
// row at DI, then steps DI to the next input (AX bytes on); after the last
// input (CX counts them down) it returns.
#define PUT(reg, L) \
	DECQ         CX \
	JLT          done \
	VEXTRACTF128 $L, reg, X12 \
	VMOVUPS      X12, (DI) \
	ADDQ         AX, DI

#define PUT8 \
	PUT(Y8, 0) \
	PUT(Y9, 0) \
	PUT(Y10, 0) \
	PUT(Y11, 0) \
	PUT(Y8, 1) \
	PUT(Y9, 1) \
	PUT(Y10, 1) \
	PUT(Y11, 1)

// func gemm4AVX2(out *float32, ldo, n int, w *float32, stride int, xT *float32, np, k int)
//
// out[t·ldo+r] = Σ_i w[r·stride+i]·xT[i·np+t] for rows r < 4 and inputs
// t < n. The batch is stored input-minor (xT), so one step of i loads 16
// inputs as two vectors, broadcasts one weight per row, and does eight
// FMAs into eight accumulators (4 rows × 16 inputs); the loop repeats for
// each 16 inputs. The accumulators are transposed so that each input's
// four results go out as one 16-byte store.
TEXT ·gemm4AVX2(SB), NOSPLIT, $0-64
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
	MOVQ R10, R8
	SHRQ $4, R8          // 16-input tiles left
	SHLQ $2, R10         // np in bytes

tile:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DX, R9
	XORQ   AX, AX
	MOVQ   R11, CX

step:
	VMOVUPS      (R9), Y8
	VMOVUPS      32(R9), Y9
	VBROADCASTSS (SI)(AX*1), Y10
	VBROADCASTSS (R12)(AX*1), Y11
	VFMADD231PS  Y10, Y8, Y0
	VFMADD231PS  Y10, Y9, Y1
	VFMADD231PS  Y11, Y8, Y2
	VFMADD231PS  Y11, Y9, Y3
	VBROADCASTSS (R13)(AX*1), Y10
	VBROADCASTSS (BX)(AX*1), Y11
	VFMADD231PS  Y10, Y8, Y4
	VFMADD231PS  Y10, Y9, Y5
	VFMADD231PS  Y11, Y8, Y6
	VFMADD231PS  Y11, Y9, Y7
	ADDQ         $4, AX
	ADDQ         R10, R9
	DECQ         CX
	JNZ          step

	MOVQ ldo+8(FP), AX
	SHLQ $2, AX
	MOVQ n+16(FP), CX
	TRANSPOSE(Y0, Y2, Y4, Y6)
	PUT8
	TRANSPOSE(Y1, Y3, Y5, Y7)
	PUT8
	MOVQ CX, n+16(FP)
	ADDQ $64, DX
	DECQ R8
	JNZ  tile

done:
	VZEROUPPER
	RET
