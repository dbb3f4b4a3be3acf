#include "textflag.h"

// Attention's value products for four query heads over a 16-bit KV
// cache, AVX-512: out[h·hd + d] += Σ_r a[h·stride + r]·V[r,d] for h < 4,
// 64 columns at a time (hd a multiple of 64), the four heads' sums of them
// in Z0-Z15 while the rows go by: each row's 64 elements are widened once
// (four zmm) and multiplied into the four heads' sums in one pass, where
// the AVX2 kernel (kv_avx2_amd64.s) takes four passes of 16 columns.
// Each row prefetches the two lines of its 64 columns 2 KiB on (one line
// 1 KiB on left the other to the hardware: BenchmarkAttentionDeep f16
// 35 -> 30.5 ms, with the AVX2 scores' same change).
// Registers: DI out, SI v, DX a, R8 rows, R9 hd, R12 stride in bytes.

#define VF16X64 \
	VCVTPH2PS (BX), Z16 \
	VCVTPH2PS 32(BX), Z17 \
	VCVTPH2PS 64(BX), Z18 \
	VCVTPH2PS 96(BX), Z19

#define VBF16X64 \
	VPMOVZXWD (BX), Z16 \
	VPMOVZXWD 32(BX), Z17 \
	VPMOVZXWD 64(BX), Z18 \
	VPMOVZXWD 96(BX), Z19 \
	VPSLLD    $16, Z16, Z16 \
	VPSLLD    $16, Z17, Z17 \
	VPSLLD    $16, Z18, Z18 \
	VPSLLD    $16, Z19, Z19

// HEAD stores, and LOADH loads, a head's 64 columns of sums at BASE.
#define HEAD(OP, BASE, A, B, C, D) \
	OP A, (BASE) \
	OP B, 64(BASE) \
	OP C, 128(BASE) \
	OP D, 192(BASE)

#define LOADH(BASE, A, B, C, D) \
	VMOVUPS (BASE), A \
	VMOVUPS 64(BASE), B \
	VMOVUPS 128(BASE), C \
	VMOVUPS 192(BASE), D

#define FMAH(W, A, B, C, D) \
	VFMADD231PS Z16, W, A \
	VFMADD231PS Z17, W, B \
	VFMADD231PS Z18, W, C \
	VFMADD231PS Z19, W, D

#define VALUES4X(WIDEN64) \
	MOVQ R9, R10 \
	SHLQ $2, R10 \
	LEAQ (R10)(R10*2), R11 \
	LEAQ (R12)(R12*2), R14 \
	XORQ CX, CX \
xcols:                            \
	CMPQ CX, R9 \
	JGE  xdone \
	LOADH(DI, Z0, Z1, Z2, Z3) \
	LEAQ (DI)(R10*1), R13 \
	LOADH(R13, Z4, Z5, Z6, Z7) \
	LEAQ (DI)(R10*2), R13 \
	LOADH(R13, Z8, Z9, Z10, Z11) \
	LEAQ (DI)(R11*1), R13 \
	LOADH(R13, Z12, Z13, Z14, Z15) \
	LEAQ (SI)(CX*2), BX \
	MOVQ DX, AX \
	MOVQ R8, R15 \
xrow:                             \
	TESTQ        R15, R15 \
	JZ           xstore \
	PREFETCHT0   2048(BX) \
	PREFETCHT0   2112(BX) \
	WIDEN64 \
	VBROADCASTSS (AX), Z20 \
	FMAH(Z20, Z0, Z1, Z2, Z3) \
	VBROADCASTSS (AX)(R12*1), Z20 \
	FMAH(Z20, Z4, Z5, Z6, Z7) \
	VBROADCASTSS (AX)(R12*2), Z20 \
	FMAH(Z20, Z8, Z9, Z10, Z11) \
	VBROADCASTSS (AX)(R14*1), Z20 \
	FMAH(Z20, Z12, Z13, Z14, Z15) \
	ADDQ         $4, AX \
	LEAQ         (BX)(R9*2), BX \
	DECQ         R15 \
	JMP          xrow \
xstore:                           \
	HEAD(VMOVUPS, DI, Z0, Z1, Z2, Z3) \
	LEAQ (DI)(R10*1), R13 \
	HEAD(VMOVUPS, R13, Z4, Z5, Z6, Z7) \
	LEAQ (DI)(R10*2), R13 \
	HEAD(VMOVUPS, R13, Z8, Z9, Z10, Z11) \
	LEAQ (DI)(R11*1), R13 \
	HEAD(VMOVUPS, R13, Z12, Z13, Z14, Z15) \
	ADDQ $256, DI \
	ADDQ $64, CX \
	JMP  xcols \
xdone:                            \
	VZEROUPPER \
	RET

// func attnValues4F16AVX512(out *float32, v *uint16, a *float32, stride, rows, hd int)
TEXT ·attnValues4F16AVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ a+16(FP), DX
	MOVQ stride+24(FP), R12
	SHLQ $2, R12
	MOVQ rows+32(FP), R8
	MOVQ hd+40(FP), R9
	VALUES4X(VF16X64)

// func attnValues4BF16AVX512(out *float32, v *uint16, a *float32, stride, rows, hd int)
TEXT ·attnValues4BF16AVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ a+16(FP), DX
	MOVQ stride+24(FP), R12
	SHLQ $2, R12
	MOVQ rows+32(FP), R8
	MOVQ hd+40(FP), R9
	VALUES4X(VBF16X64)
