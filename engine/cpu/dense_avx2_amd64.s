#include "textflag.h"

// Dense f32, bf16 and f16 kernels, AVX2 + FMA + F16C. Rows are stored one
// after another, so a matrix-vector product walks the weights once, front
// to back. Each loop takes 32 elements as four 8-float vectors with their
// own accumulators, then single vectors, then single floats.

// HSUM adds the eight floats of Y0 into the low float of X0 (clobbers X1).
#define HSUM \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x0e, X0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x01, X0, X1 \
	VADDSS       X1, X0, X0

// HALFGEMV is the body of the bf16 and f16 matrix-vector products: WIDEN8
// loads eight halves from an address into a register as floats, WIDEN1
// widens the half in AX into X4. The weights are prefetched 8 KB ahead
// into L2: the hardware prefetcher alone left one core at 3.0 tok/s on
// the 1B f16 model, 4.2 with prefetches 2 KB ahead into L1, and 8 KB into
// L2 gained another 12 % (15 % on two threads).
#define HALFGEMV(WIDEN8, WIDEN1) \
row:                             \
	TESTQ  R8, R8 \
	JZ     done \
	MOVQ   DX, BX \
	MOVQ   R9, CX \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
loop32:                          \
	CMPQ        CX, $32 \
	JLT         loop8 \
	PREFETCHT1  8192(SI) \
	WIDEN8((SI), Y4) \
	WIDEN8(16(SI), Y5) \
	WIDEN8(32(SI), Y6) \
	WIDEN8(48(SI), Y7) \
	VFMADD231PS (BX), Y4, Y0 \
	VFMADD231PS 32(BX), Y5, Y1 \
	VFMADD231PS 64(BX), Y6, Y2 \
	VFMADD231PS 96(BX), Y7, Y3 \
	ADDQ        $64, SI \
	ADDQ        $128, BX \
	SUBQ        $32, CX \
	JMP         loop32 \
loop8:                           \
	CMPQ        CX, $8 \
	JLT         reduce \
	WIDEN8((SI), Y4) \
	VFMADD231PS (BX), Y4, Y0 \
	ADDQ        $16, SI \
	ADDQ        $32, BX \
	SUBQ        $8, CX \
	JMP         loop8 \
reduce:                          \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y3, Y2, Y2 \
	VADDPS Y2, Y0, Y0 \
	HSUM \
tail:                            \
	TESTQ       CX, CX \
	JZ          store \
	MOVWLZX     (SI), AX \
	WIDEN1 \
	VFMADD231SS (BX), X4, X0 \
	ADDQ        $2, SI \
	ADDQ        $4, BX \
	DECQ        CX \
	JMP         tail \
store:                           \
	VMOVSS X0, (DI) \
	ADDQ   $4, DI \
	DECQ   R8 \
	JMP    row \
done:                            \
	VZEROUPPER \
	RET

#define BF16X8(src, dst) VPMOVZXWD src, dst; VPSLLD $16, dst, dst
#define BF16X1 SHLL $16, AX; VMOVD AX, X4
#define F16X8(src, dst) VCVTPH2PS src, dst
#define F16X1 VMOVD AX, X4; VCVTPH2PS X4, X4

// WIDEN converts n halves to floats, eight at a time.
#define WIDEN(WIDEN8, WIDEN1) \
loop8:                      \
	CMPQ    CX, $8 \
	JLT     tail \
	WIDEN8((SI), Y4) \
	VMOVUPS Y4, (DI) \
	ADDQ    $16, SI \
	ADDQ    $32, DI \
	SUBQ    $8, CX \
	JMP     loop8 \
tail:                       \
	TESTQ   CX, CX \
	JZ      done \
	MOVWLZX (SI), AX \
	WIDEN1 \
	VMOVSS  X4, (DI) \
	ADDQ    $2, SI \
	ADDQ    $4, DI \
	DECQ    CX \
	JMP     tail \
done:                       \
	VZEROUPPER \
	RET

// func gemvF32AVX2(out, w, x *float32, rows, cols int)
TEXT ·gemvF32AVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ cols+32(FP), R9

f32row:
	TESTQ  R8, R8
	JZ     f32done
	MOVQ   DX, BX
	MOVQ   R9, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f32loop32:
	CMPQ        CX, $32
	JLT         f32loop8
	PREFETCHT1  8192(SI)
	PREFETCHT1  8256(SI)
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (BX), Y4, Y0
	VFMADD231PS 32(BX), Y5, Y1
	VFMADD231PS 64(BX), Y6, Y2
	VFMADD231PS 96(BX), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, BX
	SUBQ        $32, CX
	JMP         f32loop32

f32loop8:
	CMPQ        CX, $8
	JLT         f32reduce
	VMOVUPS     (SI), Y4
	VFMADD231PS (BX), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, BX
	SUBQ        $8, CX
	JMP         f32loop8

f32reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM

f32tail:
	TESTQ       CX, CX
	JZ          f32store
	VMOVSS      (SI), X4
	VFMADD231SS (BX), X4, X0
	ADDQ        $4, SI
	ADDQ        $4, BX
	DECQ        CX
	JMP         f32tail

f32store:
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	DECQ   R8
	JMP    f32row

f32done:
	VZEROUPPER
	RET

// func gemvBF16AVX2(out *float32, w *uint16, x *float32, rows, cols int)
TEXT ·gemvBF16AVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ cols+32(FP), R9
	HALFGEMV(BF16X8, BF16X1)

// func gemvF16AVX2(out *float32, w *uint16, x *float32, rows, cols int)
TEXT ·gemvF16AVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ cols+32(FP), R9
	HALFGEMV(F16X8, F16X1)

// func widenBF16AVX2(dst *float32, src *uint16, n int)
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	WIDEN(BF16X8, BF16X1)

// func widenF16AVX2(dst *float32, src *uint16, n int)
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	WIDEN(F16X8, F16X1)

// func narrowF16AVX2(dst *uint16, src *float32, n int)
//
// F16C's VCVTPS2PH with rounding 0 (to nearest, ties to even, whatever
// MXCSR says) rounds as half.F32ToF16 does, subnormal halves and ±Inf
// beyond the largest included; a NaN stays a NaN (with its payload's
// top bits, where half.F32ToF16 gives 0x7e00).
TEXT ·narrowF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
narrow8:
	CMPQ CX, $8
	JLT  narrow1
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VMOVDQU X1, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JMP  narrow8
narrow1:
	TESTQ CX, CX
	JZ   narrowed
	VMOVSS (SI), X0
	VCVTPS2PH $0, X0, X1
	VMOVD X1, AX
	MOVW AX, (DI)
	ADDQ $4, SI
	ADDQ $2, DI
	DECQ CX
	JMP  narrow1
narrowed:
	VZEROUPPER
	RET

// func gemvTAVX2(out, w, a *float32, rows, cols int)
//
// out[d] += Σ_t a[t]·w[t·cols+d]: for each 32 columns (then 8, then 1)
// the rows are walked top to bottom with that block's sums in registers.
TEXT ·gemvTAVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ cols+32(FP), R11
	MOVQ R11, R10
	SHLQ $2, R10          // row stride in bytes

tcols32:
	CMPQ    R11, $32
	JLT     tcols8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ   SI, BX
	MOVQ   DX, AX
	MOVQ   R8, CX

trow32:
	VBROADCASTSS (AX), Y4
	VFMADD231PS  (BX), Y4, Y0
	VFMADD231PS  32(BX), Y4, Y1
	VFMADD231PS  64(BX), Y4, Y2
	VFMADD231PS  96(BX), Y4, Y3
	ADDQ         $4, AX
	ADDQ         R10, BX
	DECQ         CX
	JNZ          trow32
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	ADDQ         $128, DI
	ADDQ         $128, SI
	SUBQ         $32, R11
	JMP          tcols32

tcols8:
	CMPQ    R11, $8
	JLT     tcols1
	VMOVUPS (DI), Y0
	MOVQ   SI, BX
	MOVQ   DX, AX
	MOVQ   R8, CX

trow8:
	VBROADCASTSS (AX), Y4
	VFMADD231PS  (BX), Y4, Y0
	ADDQ         $4, AX
	ADDQ         R10, BX
	DECQ         CX
	JNZ          trow8
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	SUBQ         $8, R11
	JMP          tcols8

tcols1:
	TESTQ  R11, R11
	JZ     tdone
	VMOVSS (DI), X0
	MOVQ   SI, BX
	MOVQ   DX, AX
	MOVQ   R8, CX

trow1:
	VMOVSS      (AX), X4
	VFMADD231SS (BX), X4, X0
	ADDQ        $4, AX
	ADDQ        R10, BX
	DECQ        CX
	JNZ         trow1
	VMOVSS      X0, (DI)
	ADDQ        $4, DI
	ADDQ        $4, SI
	DECQ        R11
	JMP         tcols1

tdone:
	VZEROUPPER
	RET
