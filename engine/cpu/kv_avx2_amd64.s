#include "textflag.h"

// The weights a, for VALUES4: the 16-bit kernels keep them in DX, the q8_0
// one, which needs DX, reads them from its argument again.
#define ADX MOVQ DX, AX
#define AFP MOVQ a+24(FP), AX


// Attention's value products over a 16-bit KV cache, AVX2 + FMA + F16C:
// out[d] += Σ_t a[t]·w[t·cols+d] with w's halves widened in registers,
// as gemvTAVX2 does for f32 rows (dense_avx2_amd64.s): for each 32
// columns (then 8, then 1) the rows are walked top to bottom with that
// block's sums in registers.

#define BF16X8(src, dst) VPMOVZXWD src, dst; VPSLLD $16, dst, dst
#define BF16X1 SHLL $16, AX; VMOVD AX, X5
#define F16X8(src, dst) VCVTPH2PS src, dst
#define F16X1 VMOVD AX, X5; VCVTPH2PS X5, X5

#define HALFGEMVT(WIDEN8, WIDEN1) \
	MOVQ R11, R10 \
	SHLQ $1, R10 \
cols32:                          \
	CMPQ    R11, $32 \
	JLT     cols8 \
	VMOVUPS (DI), Y0 \
	VMOVUPS 32(DI), Y1 \
	VMOVUPS 64(DI), Y2 \
	VMOVUPS 96(DI), Y3 \
	MOVQ    SI, BX \
	MOVQ    DX, R9 \
	MOVQ    R8, CX \
row32:                           \
	VBROADCASTSS (R9), Y4 \
	WIDEN8((BX), Y5) \
	WIDEN8(16(BX), Y6) \
	WIDEN8(32(BX), Y7) \
	WIDEN8(48(BX), Y8) \
	VFMADD231PS  Y5, Y4, Y0 \
	VFMADD231PS  Y6, Y4, Y1 \
	VFMADD231PS  Y7, Y4, Y2 \
	VFMADD231PS  Y8, Y4, Y3 \
	ADDQ         $4, R9 \
	ADDQ         R10, BX \
	DECQ         CX \
	JNZ          row32 \
	VMOVUPS      Y0, (DI) \
	VMOVUPS      Y1, 32(DI) \
	VMOVUPS      Y2, 64(DI) \
	VMOVUPS      Y3, 96(DI) \
	ADDQ         $128, DI \
	ADDQ         $64, SI \
	SUBQ         $32, R11 \
	JMP          cols32 \
cols8:                           \
	CMPQ    R11, $8 \
	JLT     cols1 \
	VMOVUPS (DI), Y0 \
	MOVQ    SI, BX \
	MOVQ    DX, R9 \
	MOVQ    R8, CX \
row8:                            \
	VBROADCASTSS (R9), Y4 \
	WIDEN8((BX), Y5) \
	VFMADD231PS  Y5, Y4, Y0 \
	ADDQ         $4, R9 \
	ADDQ         R10, BX \
	DECQ         CX \
	JNZ          row8 \
	VMOVUPS      Y0, (DI) \
	ADDQ         $32, DI \
	ADDQ         $16, SI \
	SUBQ         $8, R11 \
	JMP          cols8 \
cols1:                           \
	TESTQ  R11, R11 \
	JZ     done \
	VMOVSS (DI), X0 \
	MOVQ   SI, BX \
	MOVQ   DX, R9 \
	MOVQ   R8, CX \
row1:                            \
	MOVWLZX     (BX), AX \
	WIDEN1 \
	VFMADD231SS (R9), X5, X0 \
	ADDQ        $4, R9 \
	ADDQ        R10, BX \
	DECQ        CX \
	JNZ         row1 \
	VMOVSS      X0, (DI) \
	ADDQ        $4, DI \
	ADDQ        $2, SI \
	DECQ        R11 \
	JMP         cols1 \
done:                            \
	VZEROUPPER \
	RET

// func gemvTF16AVX2(out *float32, w *uint16, a *float32, rows, cols int)
TEXT ·gemvTF16AVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ cols+32(FP), R11
	HALFGEMVT(F16X8, F16X1)

// func gemvTBF16AVX2(out *float32, w *uint16, a *float32, rows, cols int)
TEXT ·gemvTBF16AVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ cols+32(FP), R11
	HALFGEMVT(BF16X8, BF16X1)

// Four query heads at once: the heads of a kv group read each row of the
// cache once, widened once, into four sets of sums (a one-head kernel
// widens each row once per head).
//
// SCORES4 sets out[h·stride + r] = Σ_d K[r,d]·q[h·hd + d] for h < 4 and
// r < rows: per row, a chunk of eight elements is widened once (WIDEN8
// from (SI) into Y4, stepping SI by STEP bytes) and multiplied into each
// head's sums; the four sums are reduced together (three hadds). hd is a
// multiple of 8. Each row prefetches both lines of the row 2 KiB on: a
// row of 64 f16 is two lines, and a prefetch of its first alone (1 KiB
// on) left the second to the hardware (BenchmarkAttentionDeep f16 on
// this set, 44 -> 40.5 ms). Registers: DI out, SI k, DX q, R8 rows, R9 hd, R12
// stride in bytes, R13 q8 scales, AX the chunks done (over all rows: a
// q8_0 row is whole blocks of four chunks).
#define SCORES4(WIDEN8, STEP) \
	MOVQ R9, R10 \
	SHLQ $2, R10 \
	LEAQ (R10)(R10*2), R11 \
	LEAQ (R12)(R12*2), R14 \
	XORQ AX, AX \
srow:                             \
	TESTQ R8, R8 \
	JZ    sdone \
	PREFETCHT0 2048(SI) \
	PREFETCHT0 2112(SI) \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	MOVQ  DX, BX \
	MOVQ  R9, CX \
schunk:                           \
	WIDEN8 \
	VFMADD231PS (BX), Y4, Y0 \
	VFMADD231PS (BX)(R10*1), Y4, Y1 \
	VFMADD231PS (BX)(R10*2), Y4, Y2 \
	VFMADD231PS (BX)(R11*1), Y4, Y3 \
	ADDQ $STEP, SI \
	ADDQ $32, BX \
	INCQ AX \
	SUBQ $8, CX \
	JNZ  schunk \
	VHADDPS      Y1, Y0, Y0 \
	VHADDPS      Y3, Y2, Y2 \
	VHADDPS      Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSS       X0, (DI) \
	VEXTRACTPS   $1, X0, (DI)(R12*1) \
	VEXTRACTPS   $2, X0, (DI)(R12*2) \
	VEXTRACTPS   $3, X0, (DI)(R14*1) \
	ADDQ $4, DI \
	DECQ R8 \
	JMP  srow \
sdone:                            \
	VZEROUPPER \
	RET

#define SF16 VCVTPH2PS (SI), Y4
#define SBF16 VPMOVZXWD (SI), Y4; VPSLLD $16, Y4, Y4
// A q8_0 chunk: eight codes times their block's scale (a block is four
// chunks).
#define SQ8 \
	VPMOVSXBD    (SI), Y4 \
	VCVTDQ2PS    Y4, Y4 \
	MOVQ         AX, R15 \
	SHRQ         $2, R15 \
	VBROADCASTSS (R13)(R15*4), Y5 \
	VMULPS       Y5, Y4, Y4

// func attnScores4F16AVX2(out *float32, stride int, k *uint16, q *float32, rows, hd int)
TEXT ·attnScores4F16AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ stride+8(FP), R12
	SHLQ $2, R12
	MOVQ k+16(FP), SI
	MOVQ q+24(FP), DX
	MOVQ rows+32(FP), R8
	MOVQ hd+40(FP), R9
	SCORES4(SF16, 16)

// func attnScores4BF16AVX2(out *float32, stride int, k *uint16, q *float32, rows, hd int)
TEXT ·attnScores4BF16AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ stride+8(FP), R12
	SHLQ $2, R12
	MOVQ k+16(FP), SI
	MOVQ q+24(FP), DX
	MOVQ rows+32(FP), R8
	MOVQ hd+40(FP), R9
	SCORES4(SBF16, 16)

// func attnScores4Q8AVX2(out *float32, stride int, k *int8, scales, q *float32, rows, hd int)
TEXT ·attnScores4Q8AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ stride+8(FP), R12
	SHLQ $2, R12
	MOVQ k+16(FP), SI
	MOVQ scales+24(FP), R13
	MOVQ q+32(FP), DX
	MOVQ rows+40(FP), R8
	MOVQ hd+48(FP), R9
	SCORES4(SQ8, 8)

// VALUES4 adds to out[h·hd + d] Σ_r a[h·stride + r]·V[r,d] for h < 4:
// sixteen columns at a time (hd a multiple of 16), the four heads' sums
// of them in Y0-Y7 while the rows go by, each row's sixteen elements
// widened once (WIDEN16 from (BX) into Y8 and Y9). Registers: DI out, SI
// v, AX a (LOADA sets it at each sixteen columns), R8 rows, R9 hd, R12
// stride in bytes, R13 q8 scales.
#define VALUES4(WIDEN16, ESIZE, LOADA) \
	MOVQ R9, R10 \
	SHLQ $2, R10 \
	LEAQ (R10)(R10*2), R11 \
	LEAQ (R12)(R12*2), R14 \
	XORQ CX, CX \
vcols:                            \
	CMPQ    CX, R9 \
	JGE     vdone \
	VMOVUPS (DI), Y0 \
	VMOVUPS 32(DI), Y1 \
	VMOVUPS (DI)(R10*1), Y2 \
	VMOVUPS 32(DI)(R10*1), Y3 \
	VMOVUPS (DI)(R10*2), Y4 \
	VMOVUPS 32(DI)(R10*2), Y5 \
	VMOVUPS (DI)(R11*1), Y6 \
	VMOVUPS 32(DI)(R11*1), Y7 \
	MOVQ    CX, BX \
	IMULQ   $ESIZE, BX \
	ADDQ    SI, BX \
	LOADA \
	XORQ    R15, R15 \
vrow:                             \
	CMPQ         R15, R8 \
	JGE          vstore \
	PREFETCHT0   1024(BX) \
	WIDEN16 \
	VBROADCASTSS (AX), Y10 \
	VFMADD231PS  Y8, Y10, Y0 \
	VFMADD231PS  Y9, Y10, Y1 \
	VBROADCASTSS (AX)(R12*1), Y10 \
	VFMADD231PS  Y8, Y10, Y2 \
	VFMADD231PS  Y9, Y10, Y3 \
	VBROADCASTSS (AX)(R12*2), Y10 \
	VFMADD231PS  Y8, Y10, Y4 \
	VFMADD231PS  Y9, Y10, Y5 \
	VBROADCASTSS (AX)(R14*1), Y10 \
	VFMADD231PS  Y8, Y10, Y6 \
	VFMADD231PS  Y9, Y10, Y7 \
	ADDQ         $4, AX \
	INCQ         R15 \
	JMP          vrow \
vstore:                           \
	VMOVUPS Y0, (DI) \
	VMOVUPS Y1, 32(DI) \
	VMOVUPS Y2, (DI)(R10*1) \
	VMOVUPS Y3, 32(DI)(R10*1) \
	VMOVUPS Y4, (DI)(R10*2) \
	VMOVUPS Y5, 32(DI)(R10*2) \
	VMOVUPS Y6, (DI)(R11*1) \
	VMOVUPS Y7, 32(DI)(R11*1) \
	ADDQ    $64, DI \
	ADDQ    $16, CX \
	JMP     vcols \
vdone:                            \
	VZEROUPPER \
	RET

// Row R15's sixteen halves from BX, which then steps to the next row
// (hd halves on).
#define VF16 VCVTPH2PS (BX), Y8; VCVTPH2PS 16(BX), Y9; LEAQ (BX)(R9*2), BX
#define VBF16 VPMOVZXWD (BX), Y8; VPMOVZXWD 16(BX), Y9; VPSLLD $16, Y8, Y8; VPSLLD $16, Y9, Y9; LEAQ (BX)(R9*2), BX

// A q8_0 row's sixteen codes times their block's scale: the block of
// column CX in row R15 is scales[(R15·hd + CX)/32].
#define VQ8 \
	VPMOVSXBD    (BX), Y8 \
	VPMOVSXBD    8(BX), Y9 \
	VCVTDQ2PS    Y8, Y8 \
	VCVTDQ2PS    Y9, Y9 \
	MOVQ         R15, DX \
	IMULQ        R9, DX \
	ADDQ         CX, DX \
	SHRQ         $5, DX \
	VBROADCASTSS (R13)(DX*4), Y11 \
	VMULPS       Y11, Y8, Y8 \
	VMULPS       Y11, Y9, Y9 \
	ADDQ         R9, BX

// func attnValues4F16AVX2(out *float32, v *uint16, a *float32, stride, rows, hd int)
TEXT ·attnValues4F16AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ a+16(FP), DX
	MOVQ stride+24(FP), R12
	SHLQ $2, R12
	MOVQ rows+32(FP), R8
	MOVQ hd+40(FP), R9
	VALUES4(VF16, 2, ADX)

// func attnValues4BF16AVX2(out *float32, v *uint16, a *float32, stride, rows, hd int)
TEXT ·attnValues4BF16AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ a+16(FP), DX
	MOVQ stride+24(FP), R12
	SHLQ $2, R12
	MOVQ rows+32(FP), R8
	MOVQ hd+40(FP), R9
	VALUES4(VBF16, 2, ADX)

// func attnValues4Q8AVX2(out *float32, v *int8, scales, a *float32, stride, rows, hd int)
TEXT ·attnValues4Q8AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ scales+16(FP), R13
	MOVQ stride+32(FP), R12
	SHLQ $2, R12
	MOVQ rows+40(FP), R8
	MOVQ hd+48(FP), R9
	VALUES4(VQ8, 1, AFP)

// func maxAVX2(x *float32, n int) float32
//
// The largest of x[0:n], n a positive multiple of 8 (four running maxima
// of 8 while 32 remain).
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ    x+0(FP), DI
	MOVQ    n+8(FP), CX
	VMOVUPS (DI), Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3

max32:
	CMPQ   CX, $32
	JLT    max8
	VMAXPS (DI), Y0, Y0
	VMAXPS 32(DI), Y1, Y1
	VMAXPS 64(DI), Y2, Y2
	VMAXPS 96(DI), Y3, Y3
	ADDQ   $128, DI
	SUBQ   $32, CX
	JMP    max32

max8:
	TESTQ  CX, CX
	JZ     maxdone
	VMAXPS (DI), Y0, Y0
	ADDQ   $32, DI
	SUBQ   $8, CX
	JMP    max8

maxdone:
	VMAXPS       Y1, Y0, Y0
	VMAXPS       Y3, Y2, Y2
	VMAXPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x0e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x01, X0, X1
	VMAXSS       X1, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

// func gemvQ8_0AVX2(out *float32, codes *int8, scales, x *float32, rows, cols int)
//
// out[r] = Σ_b scales[r·cols/32 + b]·(codes of block b of row r)·x: a
// block's 32 products summed in Y1, then scaled into the row's sum in Y0
// (cols a multiple of 32).
TEXT ·gemvQ8_0AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ scales+16(FP), R13
	MOVQ x+24(FP), DX
	MOVQ rows+32(FP), R8
	MOVQ cols+40(FP), R9

q8row:
	TESTQ  R8, R8
	JZ     q8done
	VXORPS Y0, Y0, Y0
	MOVQ   DX, BX
	MOVQ   R9, CX

q8block:
	VPMOVSXBD    (SI), Y4
	VPMOVSXBD    8(SI), Y5
	VPMOVSXBD    16(SI), Y6
	VPMOVSXBD    24(SI), Y7
	VCVTDQ2PS    Y4, Y4
	VCVTDQ2PS    Y5, Y5
	VCVTDQ2PS    Y6, Y6
	VCVTDQ2PS    Y7, Y7
	VMULPS       (BX), Y4, Y1
	VFMADD231PS  32(BX), Y5, Y1
	VMULPS       64(BX), Y6, Y2
	VFMADD231PS  96(BX), Y7, Y2
	VADDPS       Y2, Y1, Y1
	VBROADCASTSS (R13), Y3
	VFMADD231PS  Y1, Y3, Y0
	ADDQ         $32, SI
	ADDQ         $128, BX
	ADDQ         $4, R13
	SUBQ         $32, CX
	JNZ          q8block
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0x0e, X0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0x01, X0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (DI)
	ADDQ         $4, DI
	DECQ         R8
	JMP          q8row

q8done:
	VZEROUPPER
	RET

// func gemvTQ8_0AVX2(out *float32, codes *int8, scales, a *float32, rows, cols int)
//
// out[d] += Σ_t a[t]·scale(t, d/32)·code(t, d): for each block of 32
// columns the rows are walked top to bottom with its sums in Y0-Y3, each
// row's codes widened and multiplied by a[t] times the row's block scale
// (cols a multiple of 32).
TEXT ·gemvTQ8_0AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ scales+16(FP), R13
	MOVQ a+24(FP), DX
	MOVQ rows+32(FP), R8
	MOVQ cols+40(FP), R9
	MOVQ R9, R10
	SHRQ $3, R10          // a row's scales in bytes: cols/32 floats

tq8cols:
	TESTQ   R9, R9
	JZ      tq8done
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ    SI, BX
	MOVQ    R13, R11
	MOVQ    DX, AX
	MOVQ    R8, CX

tq8row:
	VMOVSS       (AX), X8
	VMULSS       (R11), X8, X8
	VBROADCASTSS X8, Y8
	VPMOVSXBD    (BX), Y4
	VPMOVSXBD    8(BX), Y5
	VPMOVSXBD    16(BX), Y6
	VPMOVSXBD    24(BX), Y7
	VCVTDQ2PS    Y4, Y4
	VCVTDQ2PS    Y5, Y5
	VCVTDQ2PS    Y6, Y6
	VCVTDQ2PS    Y7, Y7
	VFMADD231PS  Y4, Y8, Y0
	VFMADD231PS  Y5, Y8, Y1
	VFMADD231PS  Y6, Y8, Y2
	VFMADD231PS  Y7, Y8, Y3
	ADDQ         $4, AX
	ADDQ         R10, R11
	MOVQ         cols+40(FP), R12
	ADDQ         R12, BX
	DECQ         CX
	JNZ          tq8row
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	ADDQ         $128, DI
	ADDQ         $32, SI
	ADDQ         $4, R13
	SUBQ         $32, R9
	JMP          tq8cols

tq8done:
	VZEROUPPER
	RET
