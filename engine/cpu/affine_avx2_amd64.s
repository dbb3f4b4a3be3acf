#include "textflag.h"

// MLX affine kernels, AVX2 + FMA. Codes are read 32 weights (a chunk) at a
// time. A q4 chunk is 16 bytes, byte i holding weight 2i in its low nibble
// and 2i+1 in its high one: the bytes are widened to 32-bit lanes and split
// into nibbles, so the first 16 lanes are the even weights and the next 16
// the odd ones, the order the input was permuted into (permuteQ4). A q8
// chunk is 32 bytes in natural order.

// Q4CHUNK widens the q4 chunk at P into eight floats each in Y5..Y8:
// weights 0,2,…,14, 16,…,30, 1,…,15, 17,…,31, and steps P past it. Y15
// holds 15 in every lane.
#define Q4CHUNK(P) \
	VPMOVZXBD (P), Y5 \
	VPMOVZXBD 8(P), Y6 \
	VPSRLD    $4, Y5, Y7 \
	VPSRLD    $4, Y6, Y8 \
	VPAND     Y15, Y5, Y5 \
	VPAND     Y15, Y6, Y6 \
	VCVTDQ2PS Y5, Y5 \
	VCVTDQ2PS Y6, Y6 \
	VCVTDQ2PS Y7, Y7 \
	VCVTDQ2PS Y8, Y8 \
	ADDQ      $16, P

// Q8CHUNK widens the q8 chunk at P into Y5..Y8 in natural order.
#define Q8CHUNK(P) \
	VPMOVZXBD (P), Y5 \
	VPMOVZXBD 8(P), Y6 \
	VPMOVZXBD 16(P), Y7 \
	VPMOVZXBD 24(P), Y8 \
	VCVTDQ2PS Y5, Y5 \
	VCVTDQ2PS Y6, Y6 \
	VCVTDQ2PS Y7, Y7 \
	VCVTDQ2PS Y8, Y8 \
	ADDQ      $32, P

// FIFTEEN sets every lane of Y15 to 15, the nibble mask.
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

// The BIAS8 macros load 8 biases at R13 into Y as floats; the BIAS1 ones
// load one into X10 (using R12).
#define BIAS8F32(Y) VMOVUPS (R13), Y
#define BIAS8BF16(Y) VPMOVZXWD (R13), Y; VPSLLD $16, Y, Y
#define BIAS8F16(Y) VCVTPH2PS (R13), Y
#define BIAS1F32 VMOVSS (R13), X10
#define BIAS1BF16 MOVWLZX (R13), R12; SHLL $16, R12; VMOVD R12, X10
#define BIAS1F16 MOVWLZX (R13), R12; VMOVD R12, X10; VCVTPH2PS X10, X10

// GEMV sets out[r] = Σ_g scale·(codes·x) + bias·xsum_g over rows: per
// group, four accumulators collect code·x for the group's chunks, and
// their sum times the group's scale goes into the row's accumulator Y0;
// then the row's biases times the group sums, eight at a time, and the
// rest one by one after the horizontal sum. The number of groups in a row
// replaces group in its argument slot.
#define GEMV(CHUNK, SCALE, BIAS8, BIAS1, ESIZE) \
	SHRQ $5, R10 \
	SHRQ $5, R11 \
	MOVQ R10, AX \
	BSFQ R11, CX \
	SHRQ CX, AX \
	MOVQ AX, group+64(FP) \
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
	CHUNK(SI) \
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
	MOVQ         group+64(FP), CX \
	MOVQ         xsum+40(FP), AX \
bias:                               \
	CMPQ         CX, $8 \
	JLT          sum \
	BIAS8(Y10) \
	VFMADD231PS  (AX), Y10, Y0 \
	ADDQ         $32, AX \
	ADDQ         $(8*ESIZE), R13 \
	SUBQ         $8, CX \
	JMP          bias \
sum:                                \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x0e, X0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x01, X0, X1 \
	VADDSS       X1, X0, X0 \
biastail:                           \
	TESTQ        CX, CX \
	JZ           store \
	BIAS1 \
	VFMADD231SS  (AX), X10, X0 \
	ADDQ         $4, AX \
	ADDQ         $ESIZE, R13 \
	DECQ         CX \
	JMP          biastail \
store:                              \
	VMOVSS       X0, (DI) \
	ADDQ         $4, DI \
	DECQ         R9 \
	JMP          row \
done:                               \
	VZEROUPPER \
	RET

// The LOAD macros broadcast the scale or bias at (B)(AX*1) into Y.
#define LOADF32(B, Y, X) \
	VBROADCASTSS (B)(AX*1), Y

#define LOADBF16(B, Y, X) \
	VPBROADCASTW (B)(AX*1), Y \
	VPSLLD       $16, Y, Y

#define LOADF16(B, Y, X) \
	VPBROADCASTW (B)(AX*1), X \
	VCVTPH2PS    X, Y

// DEQUANT writes scale·q + bias for rows of codes, in chunk order (nibble
// order for q4), the rows one after another in dst. At the start of each
// row it prefetches the row four on (the next panel's). Registers: SI, DX,
// R13 the row's codes, scales and biases; R8, R9 their row strides; R10
// rows left; R11 a row's scales in bytes; R12 chunks per group. ESIZE is
// the scales' element size, CSHIFT turns a row's weights into code bytes.
#define DEQUANT(CHUNK, LOAD, ESIZE, CSHIFT) \
	FIFTEEN \
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
	LOAD(DX, Y13, X13) \
	LOAD(R13, Y14, X14) \
	MOVQ         R12, CX \
chunk:                               \
	CHUNK(BX) \
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

// func gemvQ4SF32AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ4SF32AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q4CHUNK, SCALEF32, BIAS8F32, BIAS1F32, 4)

// func gemvQ4SBF16AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ4SBF16AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q4CHUNK, SCALEBF16, BIAS8BF16, BIAS1BF16, 2)

// func gemvQ4SF16AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ4SF16AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q4CHUNK, SCALEF16, BIAS8F16, BIAS1F16, 2)

// func gemvQ8SF32AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ8SF32AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q8CHUNK, SCALEF32, BIAS8F32, BIAS1F32, 4)

// func gemvQ8SBF16AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ8SBF16AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q8CHUNK, SCALEBF16, BIAS8BF16, BIAS1BF16, 2)

// func gemvQ8SF16AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)
TEXT ·gemvQ8SF16AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), R13
	MOVQ x+32(FP), R8
	MOVQ rows+48(FP), R9
	MOVQ cols+56(FP), R10
	MOVQ group+64(FP), R11
	GEMV(Q8CHUNK, SCALEF16, BIAS8F16, BIAS1F16, 2)

// func dequantQ4SF32AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ4SF32AVX2(SB), NOSPLIT, $0-72
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

// func dequantQ4SBF16AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ4SBF16AVX2(SB), NOSPLIT, $0-72
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

// func dequantQ4SF16AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ4SF16AVX2(SB), NOSPLIT, $0-72
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

// func dequantQ8SF32AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ8SF32AVX2(SB), NOSPLIT, $0-72
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

// func dequantQ8SBF16AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ8SBF16AVX2(SB), NOSPLIT, $0-72
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

// func dequantQ8SF16AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)
TEXT ·dequantQ8SF16AVX2(SB), NOSPLIT, $0-72
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
