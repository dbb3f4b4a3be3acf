#include "textflag.h"

// Dense gemv with NEON: out[r] = w[r·cols:(r+1)·cols]·x, for each row
// sixteen columns at a time into four vector sums (FMLA), then four, then
// one. bf16 and f16 weights are widened in registers: bf16 by zipping
// zero halves under them, f16 with FCVTL.
//
// Go's assembler has no FADD (vector), FADDP or FCVTL mnemonic: the
// macros below encode them (register numbers, not names), sources first
// as in Go's syntax; checked against llvm-mc -triple=aarch64.

// FADD4(m, n, d): Vd.4S = Vn.4S + Vm.4S.
#define FADD4(m, n, d) WORD $(0x4E20D400 | (m)<<16 | (n)<<5 | (d))
// FADDP4(m, n, d): Vd.4S = pairwise sums of Vn.4S then Vm.4S.
#define FADDP4(m, n, d) WORD $(0x6E20D400 | (m)<<16 | (n)<<5 | (d))
// FADDP2(n, d): Sd = Vn.S[0] + Vn.S[1].
#define FADDP2(n, d) WORD $(0x7E30D800 | (n)<<5 | (d))
// FCVTL(n, d), FCVTL2(n, d): Vd.4S = the low, high four halves of Vn.8H.
#define FCVTL(n, d) WORD $(0x0E217800 | (n)<<5 | (d))
#define FCVTL2(n, d) WORD $(0x4E217800 | (n)<<5 | (d))

// ARGS loads out (R0), w (R1), x (R2), rows (R3), cols (R4).
#define ARGS \
	MOVD out+0(FP), R0; \
	MOVD w+8(FP), R1; \
	MOVD x+16(FP), R2; \
	MOVD rows+24(FP), R3; \
	MOVD cols+32(FP), R4

// ZERO clears the sums V0-V3 and points R5 at x.
#define ZERO \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	MOVD R2, R5

// FMA16 adds the weights in V4-V7 times the next sixteen of x to V0-V3.
#define FMA16 \
	VLD1.P 64(R5), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	VFMLA V4.S4, V16.S4, V0.S4; \
	VFMLA V5.S4, V17.S4, V1.S4; \
	VFMLA V6.S4, V18.S4, V2.S4; \
	VFMLA V7.S4, V19.S4, V3.S4

// FMA4 adds the weights in V4 times the next four of x to V0.
#define FMA4 \
	VLD1.P 16(R5), [V16.S4]; \
	VFMLA V4.S4, V16.S4, V0.S4

// REDUCE leaves V0-V3's sum in F0.
#define REDUCE \
	FADD4(1, 0, 0); \
	FADD4(3, 2, 2); \
	FADD4(2, 0, 0); \
	FADDP4(0, 0, 0); \
	FADDP2(0, 0)

// FMA1 adds the weight in F4 times the next element of x to F0.
#define FMA1 \
	FMOVS.P 4(R5), F16; \
	FMADDS F4, F0, F16, F0

// The widening loads of bf16 (zero halves in V30) and f16 weights.
#define BF16X16 \
	VLD1.P 32(R1), [V8.H8, V9.H8]; \
	VZIP1 V8.H8, V30.H8, V4.H8; \
	VZIP2 V8.H8, V30.H8, V5.H8; \
	VZIP1 V9.H8, V30.H8, V6.H8; \
	VZIP2 V9.H8, V30.H8, V7.H8
#define BF16X4 \
	VLD1.P 8(R1), [V8.H4]; \
	VZIP1 V8.H8, V30.H8, V4.H8
#define BF16X1 \
	MOVHU.P 2(R1), R7; \
	LSLW $16, R7; \
	FMOVS R7, F4
#define F16X16 \
	VLD1.P 32(R1), [V8.H8, V9.H8]; \
	FCVTL(8, 4); \
	FCVTL2(8, 5); \
	FCVTL(9, 6); \
	FCVTL2(9, 7)
#define F16X4 \
	VLD1.P 8(R1), [V8.H4]; \
	FCVTL(8, 4)
#define F16X1 \
	MOVHU.P 2(R1), R7; \
	FMOVS R7, F4; \
	FCVTHS F4, F4
#define F32X16 VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
#define F32X4 VLD1.P 16(R1), [V4.S4]
#define F32X1 FMOVS.P 4(R1), F4

// GEMV is the row loop, with LOAD16, LOAD4 and LOAD1 the loads of
// sixteen, four and one weights.
#define GEMV(LOAD16, LOAD4, LOAD1) \
	VEOR V30.B16, V30.B16, V30.B16; \
row: \
	ZERO; \
	LSR  $4, R4, R6; \
	CBZ  R6, by4; \
by16: \
	LOAD16; \
	FMA16; \
	SUBS $1, R6; \
	BNE  by16; \
by4: \
	UBFX $2, R4, $2, R6; \
	CBZ  R6, by1; \
by4loop: \
	LOAD4; \
	FMA4; \
	SUBS $1, R6; \
	BNE  by4loop; \
by1: \
	REDUCE; \
	AND  $3, R4, R6; \
	CBZ  R6, store; \
by1loop: \
	LOAD1; \
	FMA1; \
	SUBS $1, R6; \
	BNE  by1loop; \
store: \
	FMOVS.P F0, 4(R0); \
	SUBS $1, R3; \
	BNE  row; \
	RET

// func gemvF32NEON(out, w, x *float32, rows, cols int)
TEXT ·gemvF32NEON(SB), NOSPLIT, $0-40
	ARGS
	GEMV(F32X16, F32X4, F32X1)

// func gemvBF16NEON(out *float32, w *uint16, x *float32, rows, cols int)
TEXT ·gemvBF16NEON(SB), NOSPLIT, $0-40
	ARGS
	GEMV(BF16X16, BF16X4, BF16X1)

// func gemvF16NEON(out *float32, w *uint16, x *float32, rows, cols int)
TEXT ·gemvF16NEON(SB), NOSPLIT, $0-40
	ARGS
	GEMV(F16X16, F16X4, F16X1)
