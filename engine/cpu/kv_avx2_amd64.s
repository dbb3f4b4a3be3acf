#include "textflag.h"

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
