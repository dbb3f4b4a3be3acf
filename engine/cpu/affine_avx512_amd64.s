#include "textflag.h"

// MLX affine kernels, AVX-512 (F, BW). The same chunks as the AVX2 kernels
// (affine_avx2_amd64.s), sixteen lanes at a time: a q4 chunk's 16 bytes
// widen to one vector, whose low nibbles are the even weights and high
// nibbles the odd ones.

// Q4CHUNK widens the q4 chunk at SI into Z5 (weights 0,2,…,30) and Z6
// (1,3,…,31) as floats. Z15 holds 15 in every lane.
#define Q4CHUNK \
	VPMOVZXBD (SI), Z5 \
	VPSRLD    $4, Z5, Z6 \
	VPANDD    Z15, Z5, Z5 \
	VCVTDQ2PS Z5, Z5 \
	VCVTDQ2PS Z6, Z6 \
	ADDQ      $16, SI

// Q8CHUNK widens the q8 chunk at SI into Z5 and Z6 in natural order.
#define Q8CHUNK \
	VPMOVZXBD (SI), Z5 \
	VPMOVZXBD 16(SI), Z6 \
	VCVTDQ2PS Z5, Z5 \
	VCVTDQ2PS Z6, Z6 \
	ADDQ      $32, SI

// The SCALE macros broadcast the scale at DX into Z9 and step DX past it.
#define SCALEF32 \
	VBROADCASTSS (DX), Z9 \
	ADDQ         $4, DX

#define SCALEBF16 \
	VPBROADCASTW (DX), Z9 \
	VPSLLD       $16, Z9, Z9 \
	ADDQ         $2, DX

#define SCALEF16 \
	VPBROADCASTW (DX), Y9 \
	VCVTPH2PS    Y9, Z9 \
	ADDQ         $2, DX

// GEMV is out[r] += Σ_g scale·(codes·x) over rows, as in the AVX2 kernel:
// Z1 and Z2 collect a group's code·x, their sum times the scale goes into
// the row's accumulator Z0.
#define GEMV(CHUNK, SCALE) \
	SHRQ         $5, R10 \
	SHRQ         $5, R11 \
	MOVL         $15, AX \
	VPBROADCASTD AX, Z15 \
row:                                \
	TESTQ  R9, R9 \
	JZ     done \
	MOVQ   R8, BX \
	MOVQ   R10, R12 \
	VPXORD Z0, Z0, Z0 \
group:                              \
	MOVQ   R11, CX \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
chunk:                              \
	CHUNK \
	VFMADD231PS (BX), Z5, Z1 \
	VFMADD231PS 64(BX), Z6, Z2 \
	ADDQ        $128, BX \
	DECQ        CX \
	JNZ         chunk \
	VADDPS      Z2, Z1, Z1 \
	SCALE \
	VFMADD231PS Z9, Z1, Z0 \
	SUBQ        R11, R12 \
	JNZ         group \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDPS       Y1, Y0, Y0 \
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
	SHRQ         $5, R11 \
	MOVL         $15, AX \
	VPBROADCASTD AX, Z15 \
group:                              \
	TESTQ        R9, R9 \
	JZ           done \
	VBROADCASTSS (DX), Z13 \
	VBROADCASTSS (R8), Z14 \
	MOVQ         R11, CX \
chunk:                              \
	CHUNK \
	VFMADD213PS  Z14, Z13, Z5 \
	VFMADD213PS  Z14, Z13, Z6 \
	VMOVUPS      Z5, (DI) \
	VMOVUPS      Z6, 64(DI) \
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

// func gemvQ4SF32AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ4SF32AVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q4CHUNK, SCALEF32)

// func gemvQ4SBF16AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ4SBF16AVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q4CHUNK, SCALEBF16)

// func gemvQ4SF16AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ4SF16AVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q4CHUNK, SCALEF16)

// func gemvQ8SF32AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ8SF32AVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q8CHUNK, SCALEF32)

// func gemvQ8SBF16AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ8SBF16AVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q8CHUNK, SCALEBF16)

// func gemvQ8SF16AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
TEXT ·gemvQ8SF16AVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ cols+40(FP), R10
	MOVQ group+48(FP), R11
	GEMV(Q8CHUNK, SCALEF16)

// func dequantQ4AVX512(dst *float32, w *uint32, scales, biases *float32, n, group int)
TEXT ·dequantQ4AVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R8
	MOVQ n+32(FP), R9
	MOVQ group+40(FP), R11
	DEQUANT(Q4CHUNK)

// func dequantQ8AVX512(dst *float32, w *uint32, scales, biases *float32, n, group int)
TEXT ·dequantQ8AVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R8
	MOVQ n+32(FP), R9
	MOVQ group+40(FP), R11
	DEQUANT(Q8CHUNK)
