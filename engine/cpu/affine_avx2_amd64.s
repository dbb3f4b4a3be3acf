#include "textflag.h"

// MLX affine kernels, AVX2 + FMA. Codes are read 32 weights (a chunk) at a
// time. A q4 chunk is 16 bytes, byte i holding weight 2i in its low nibble
// and 2i+1 in its high one: the bytes are widened to 32-bit lanes and split
// into nibbles, so the first 16 lanes are the even weights and the next 16
// the odd ones, the order the input was permuted into (permuteQ4). A q8
// chunk is 32 bytes in natural order.

// Q4CHUNK widens the q4 chunk at SI into eight floats each in Y5..Y8:
// weights 0,2,…,14, 16,…,30, 1,…,15, 17,…,31. Y15 holds 15 in every lane.
#define Q4CHUNK \
	VPMOVZXBD (SI), Y5 \
	VPMOVZXBD 8(SI), Y6 \
	VPSRLD    $4, Y5, Y7 \
	VPSRLD    $4, Y6, Y8 \
	VPAND     Y15, Y5, Y5 \
	VPAND     Y15, Y6, Y6 \
	VCVTDQ2PS Y5, Y5 \
	VCVTDQ2PS Y6, Y6 \
	VCVTDQ2PS Y7, Y7 \
	VCVTDQ2PS Y8, Y8 \
	ADDQ      $16, SI

// Q8CHUNK widens the q8 chunk at SI into Y5..Y8 in natural order.
#define Q8CHUNK \
	VPMOVZXBD (SI), Y5 \
	VPMOVZXBD 8(SI), Y6 \
	VPMOVZXBD 16(SI), Y7 \
	VPMOVZXBD 24(SI), Y8 \
	VCVTDQ2PS Y5, Y5 \
	VCVTDQ2PS Y6, Y6 \
	VCVTDQ2PS Y7, Y7 \
	VCVTDQ2PS Y8, Y8 \
	ADDQ      $32, SI

#define FIFTEEN \
	MOVL         $15, AX \
	VMOVD        AX, X15 \
	VPBROADCASTD X15, Y15

// The SCALE macros broadcast the scale at DX into Y9 and step DX past it.
#define SCALEF32 \
	VBROADCASTSS (DX), Y9 \
	ADDQ         $4, DX

#define SCALEBF16 \
	VPBROADCASTW (DX), Y9 \
	VPSLLD       $16, Y9, Y9 \
	ADDQ         $2, DX

#define SCALEF16 \
	VPBROADCASTW (DX), X9 \
	VCVTPH2PS    X9, Y9 \
	ADDQ         $2, DX

// GEMV is out[r] += Σ_g scale·(codes·x) over rows: per group, four
// accumulators collect code·x for the group's chunks, and their sum times
// the group's scale goes into the row's accumulator Y0.
#define GEMV(CHUNK, SCALE) \
	SHRQ $5, R10 \
	SHRQ $5, R11 \
	FIFTEEN \
row:                                \
	TESTQ  R9, R9 \
	JZ     done \
	MOVQ   R8, BX \
	MOVQ   R10, R12 \
	VXORPS Y0, Y0, Y0 \
group:                              \
	MOVQ   R11, CX \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
chunk:                              \
	CHUNK \
	VFMADD231PS  (BX), Y5, Y1 \
	VFMADD231PS  32(BX), Y6, Y2 \
	VFMADD231PS  64(BX), Y7, Y3 \
	VFMADD231PS  96(BX), Y8, Y4 \
	ADDQ         $128, BX \
	DECQ         CX \
	JNZ          chunk \
	VADDPS       Y2, Y1, Y1 \
	VADDPS       Y4, Y3, Y3 \
	VADDPS       Y3, Y1, Y1 \
	SCALE \
	VFMADD231PS  Y9, Y1, Y0 \
	SUBQ         R11, R12 \
	JNZ          group \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x0e, X0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x01, X0, X1 \
	VADDSS       X1, X0, X0 \
	VADDSS       (DI), X0, X0 \
	VMOVSS       X0, (DI) \
	ADDQ         $4, DI \
	DECQ         R9 \
	JMP          row \
done:                               \
	VZEROUPPER \
	RET

// DEQUANT writes scale·q + bias for every weight of n groups, in chunk
// order (nibble order for q4).
#define DEQUANT(CHUNK) \
	SHRQ $5, R11 \
	FIFTEEN \
group:                              \
	TESTQ        R9, R9 \
	JZ           done \
	VBROADCASTSS (DX), Y13 \
	VBROADCASTSS (R8), Y14 \
	MOVQ         R11, CX \
chunk:                              \
	CHUNK \
	VFMADD213PS  Y14, Y13, Y5 \
	VFMADD213PS  Y14, Y13, Y6 \
	VFMADD213PS  Y14, Y13, Y7 \
	VFMADD213PS  Y14, Y13, Y8 \
	VMOVUPS      Y5, (DI) \
	VMOVUPS      Y6, 32(DI) \
	VMOVUPS      Y7, 64(DI) \
	VMOVUPS      Y8, 96(DI) \
	ADDQ         $128, DI \
	DECQ         CX \
	JNZ          chunk \
	ADDQ         $4, DX \
	ADDQ         $4, R8 \
	DECQ         R9 \
	JMP          group \
done:                               \
	VZEROUPPER \
	RET

// func gemvQ4SF32AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ4SF32AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q4CHUNK, SCALEF32)

// func gemvQ4SBF16AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ4SBF16AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q4CHUNK, SCALEBF16)

// func gemvQ4SF16AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ4SF16AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q4CHUNK, SCALEF16)

// func gemvQ8SF32AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ8SF32AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q8CHUNK, SCALEF32)

// func gemvQ8SBF16AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ8SBF16AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q8CHUNK, SCALEBF16)

// func gemvQ8SF16AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ8SF16AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q8CHUNK, SCALEF16)

// func dequantQ4AVX2(dst *float32, w *uint32, scales, biases *float32, n, group int)
TEXT ·dequantQ4AVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R8
	MOVQ n+32(FP), R9
	MOVQ group+40(FP), R11
	DEQUANT(Q4CHUNK)

// func dequantQ8AVX2(dst *float32, w *uint32, scales, biases *float32, n, group int)
TEXT ·dequantQ8AVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R8
	MOVQ n+32(FP), R9
	MOVQ group+40(FP), R11
	DEQUANT(Q8CHUNK)
