#include "textflag.h"

// MLX affine kernels, AVX-512 (F, BW). The same chunks as the AVX2 kernels
// (affine_avx2_amd64.s), sixteen lanes at a time: a q4 chunk's 16 bytes
// widen to one vector, whose low nibbles are the even weights and high
// nibbles the odd ones.

// Q4CHUNK widens the q4 chunk at P into Z5 (weights 0,2,…,30) and Z6
// (1,3,…,31) as floats and steps P past it. Z15 holds 15 in every lane.
#define Q4CHUNK(P) \
	VPMOVZXBD (P), Z5 \
	VPSRLD    $4, Z5, Z6 \
	VPANDD    Z15, Z5, Z5 \
	VCVTDQ2PS Z5, Z5 \
	VCVTDQ2PS Z6, Z6 \
	ADDQ      $16, P

// Q8CHUNK widens the q8 chunk at P into Z5 and Z6 in natural order.
#define Q8CHUNK(P) \
	VPMOVZXBD (P), Z5 \
	VPMOVZXBD 16(P), Z6 \
	VCVTDQ2PS Z5, Z5 \
	VCVTDQ2PS Z6, Z6 \
	ADDQ      $32, P

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

// The BIAS macros load 16 biases at R13 into D as floats; the BIASM ones
// load those of the K1 lanes and zero the rest.
#define BIASF32(D) VMOVUPS (R13), D
#define BIASF32M(D) VMOVUPS.Z (R13), K1, D
#define BIASBF16(D) VPMOVZXWD (R13), D; VPSLLD $16, D, D
#define BIASBF16M(D) VPMOVZXWD.Z (R13), K1, D; VPSLLD $16, D, D
#define BIASF16(D) VCVTPH2PS (R13), D
#define BIASF16M(D) VCVTPH2PS.Z (R13), K1, D

// GEMV sets out[r] = Σ_g scale·(codes·x) + bias·xsum_g over rows, as in
// the AVX2 kernel: Z1 and Z2 collect a group's code·x, their sum times
// the scale goes into the row's accumulator Z0, and then the row's biases
// times the group sums, 16 at a time and the rest under a mask. The
// number of groups in a row replaces group in its argument slot.
#define GEMV(CHUNK, SCALE, BIAS, BIASM, ESIZE) \
	SHRQ         $5, R10 \
	SHRQ         $5, R11 \
	MOVQ         R10, AX \
	BSFQ         R11, CX \
	SHRQ         CX, AX \
	MOVQ         AX, group+64(FP) \
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
	CHUNK(SI) \
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
	MOVQ        group+64(FP), CX \
	MOVQ        xsum+40(FP), AX \
bias:                               \
	CMPQ        CX, $16 \
	JLT         biastail \
	BIAS(Z10) \
	VFMADD231PS (AX), Z10, Z0 \
	ADDQ        $64, AX \
	ADDQ        $(16*ESIZE), R13 \
	SUBQ        $16, CX \
	JMP         bias \
biastail:                           \
	TESTQ       CX, CX \
	JZ          sum \
	MOVL        $1, R12 \
	SHLL        CX, R12 \
	DECL        R12 \
	KMOVW       R12, K1 \
	BIASM(Z10) \
	VMOVUPS.Z   (AX), K1, Z11 \
	VFMADD231PS Z11, Z10, Z0 \
	LEAQ        (R13)(CX*ESIZE), R13 \
sum:                                \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDPS       Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x0e, X0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x01, X0, X1 \
	VADDSS       X1, X0, X0 \
	VMOVSS       X0, (DI) \
	ADDQ         $4, DI \
	DECQ         R9 \
	JMP          row \
done:                               \
	VZEROUPPER \
	RET

// The LOAD macros broadcast the scale or bias at (B)(AX*1) into Z.
#define LOADF32(B, Z, Y) \
	VBROADCASTSS (B)(AX*1), Z

#define LOADBF16(B, Z, Y) \
	VPBROADCASTW (B)(AX*1), Z \
	VPSLLD       $16, Z, Z

#define LOADF16(B, Z, Y) \
	VPBROADCASTW (B)(AX*1), Y \
	VCVTPH2PS    Y, Z

// DEQUANT writes scale·q + bias for rows of codes, in chunk order (nibble
// order for q4), the rows one after another in dst. At the start of each
// row it prefetches the row four on (the next panel's). Registers: SI, DX,
// R13 the row's codes, scales and biases; R8, R9 their row strides; R10
// rows left; R11 a row's scales in bytes; R12 chunks per group. ESIZE is
// the scales' element size, CSHIFT turns a row's weights into code bytes.
#define DEQUANT(CHUNK, LOAD, ESIZE, CSHIFT) \
	MOVL         $15, AX \
	VPBROADCASTD AX, Z15 \
row:                                 \
	TESTQ        R10, R10 \
	JZ           done \
	LEAQ         (SI)(R8*4), BX \
	MOVQ         kw+8(FP), CX \
	SHRQ         $CSHIFT, CX \
prefetch:                            \
	PREFETCHT0   (BX) \
	ADDQ         $64, BX \
	SUBQ         $64, CX \
	JGT          prefetch \
	PREFETCHT0   (DX)(R9*4) \
	PREFETCHT0   (R13)(R9*4) \
	MOVQ         SI, BX \
	XORQ         AX, AX \
group:                               \
	LOAD(DX, Z13, Y13) \
	LOAD(R13, Z14, Y14) \
	MOVQ         R12, CX \
chunk:                               \
	CHUNK(BX) \
	VFMADD213PS  Z14, Z13, Z5 \
	VFMADD213PS  Z14, Z13, Z6 \
	VMOVUPS      Z5, (DI) \
	VMOVUPS      Z6, 64(DI) \
	ADDQ         $128, DI \
	DECQ         CX \
	JNZ          chunk \
	ADDQ         $ESIZE, AX \
	CMPQ         AX, R11 \
	JLT          group \
	ADDQ         R8, SI \
	ADDQ         R9, DX \
	ADDQ         R9, R13 \
	DECQ         R10 \
	JMP          row \
done:                                \
	VZEROUPPER \
	RET

// func gemvQ4SF32AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ4SF32AVX512(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q4CHUNK, SCALEF32, BIASF32, BIASF32M, 4)

// func gemvQ4SBF16AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ4SBF16AVX512(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q4CHUNK, SCALEBF16, BIASBF16, BIASBF16M, 2)

// func gemvQ4SF16AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ4SF16AVX512(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q4CHUNK, SCALEF16, BIASF16, BIASF16M, 2)

// func gemvQ8SF32AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ8SF32AVX512(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q8CHUNK, SCALEF32, BIASF32, BIASF32M, 4)

// func gemvQ8SBF16AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ8SBF16AVX512(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q8CHUNK, SCALEBF16, BIASBF16, BIASBF16M, 2)

// func gemvQ8SF16AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ8SF16AVX512(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q8CHUNK, SCALEF16, BIASF16, BIASF16M, 2)

// func dequantQ4SF32AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ4SF32AVX512(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), DI
	MOVQ w+16(FP), SI
	MOVQ wstride+24(FP), R8
	MOVQ biases+40(FP), R13
	MOVQ sstride+48(FP), R9
	MOVQ rows+56(FP), R10
	MOVQ kw+8(FP), AX
	MOVQ group+64(FP), R12
	SHLQ $2, R8
	SHLQ $2, R9
	XORQ DX, DX
	DIVQ R12
	MOVQ AX, R11
	SHLQ $2, R11
	MOVQ scales+32(FP), DX
	SHRQ $5, R12
	DEQUANT(Q4CHUNK, LOADF32, 4, 1)

// func dequantQ4SBF16AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ4SBF16AVX512(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), DI
	MOVQ w+16(FP), SI
	MOVQ wstride+24(FP), R8
	MOVQ biases+40(FP), R13
	MOVQ sstride+48(FP), R9
	MOVQ rows+56(FP), R10
	MOVQ kw+8(FP), AX
	MOVQ group+64(FP), R12
	SHLQ $2, R8
	SHLQ $1, R9
	XORQ DX, DX
	DIVQ R12
	MOVQ AX, R11
	SHLQ $1, R11
	MOVQ scales+32(FP), DX
	SHRQ $5, R12
	DEQUANT(Q4CHUNK, LOADBF16, 2, 1)

// func dequantQ4SF16AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ4SF16AVX512(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), DI
	MOVQ w+16(FP), SI
	MOVQ wstride+24(FP), R8
	MOVQ biases+40(FP), R13
	MOVQ sstride+48(FP), R9
	MOVQ rows+56(FP), R10
	MOVQ kw+8(FP), AX
	MOVQ group+64(FP), R12
	SHLQ $2, R8
	SHLQ $1, R9
	XORQ DX, DX
	DIVQ R12
	MOVQ AX, R11
	SHLQ $1, R11
	MOVQ scales+32(FP), DX
	SHRQ $5, R12
	DEQUANT(Q4CHUNK, LOADF16, 2, 1)

// func dequantQ8SF32AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ8SF32AVX512(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), DI
	MOVQ w+16(FP), SI
	MOVQ wstride+24(FP), R8
	MOVQ biases+40(FP), R13
	MOVQ sstride+48(FP), R9
	MOVQ rows+56(FP), R10
	MOVQ kw+8(FP), AX
	MOVQ group+64(FP), R12
	SHLQ $2, R8
	SHLQ $2, R9
	XORQ DX, DX
	DIVQ R12
	MOVQ AX, R11
	SHLQ $2, R11
	MOVQ scales+32(FP), DX
	SHRQ $5, R12
	DEQUANT(Q8CHUNK, LOADF32, 4, 0)

// func dequantQ8SBF16AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ8SBF16AVX512(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), DI
	MOVQ w+16(FP), SI
	MOVQ wstride+24(FP), R8
	MOVQ biases+40(FP), R13
	MOVQ sstride+48(FP), R9
	MOVQ rows+56(FP), R10
	MOVQ kw+8(FP), AX
	MOVQ group+64(FP), R12
	SHLQ $2, R8
	SHLQ $1, R9
	XORQ DX, DX
	DIVQ R12
	MOVQ AX, R11
	SHLQ $1, R11
	MOVQ scales+32(FP), DX
	SHRQ $5, R12
	DEQUANT(Q8CHUNK, LOADBF16, 2, 0)

// func dequantQ8SF16AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ8SF16AVX512(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), DI
	MOVQ w+16(FP), SI
	MOVQ wstride+24(FP), R8
	MOVQ biases+40(FP), R13
	MOVQ sstride+48(FP), R9
	MOVQ rows+56(FP), R10
	MOVQ kw+8(FP), AX
	MOVQ group+64(FP), R12
	SHLQ $2, R8
	SHLQ $1, R9
	XORQ DX, DX
	DIVQ R12
	MOVQ AX, R11
	SHLQ $1, R11
	MOVQ scales+32(FP), DX
	SHRQ $5, R12
	DEQUANT(Q8CHUNK, LOADF16, 2, 0)
