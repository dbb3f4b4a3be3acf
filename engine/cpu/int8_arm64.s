#include "textflag.h"

// MLX affine rows times int8 activations with NEON SDOT (ARMv8.2
// dotprod), the maths of gemvI8Go. For each row: f[c] = scale[g]·dx[c]
// and β = Σ bias[g]·xsum[c] over the row's chunks c of 32 (g the group of
// c), then blocks of 128 weights: SDOT multiplies four signed bytes of
// codes and activations at a time into int32 lanes, one accumulator per
// chunk; ADDP folds the four accumulators into one vector of the four
// chunks' sums, which SCVTF makes floats, times f of those chunks. Then
// the chunks of the tail one at a time; out = Σ lanes + β.
//
// Go's assembler has no SDOT, SCVTF (vector), FADDP or FMUL (vector)
// mnemonic: the macros below encode them (register numbers, not names),
// sources first as in Go's syntax. The encodings were checked against
// llvm-mc -triple=aarch64 -mattr=+dotprod.

// SDOT(m, n, d): Vd.4S += Σ of each four bytes of Vn.16B·Vm.16B (signed).
#define SDOT(m, n, d) WORD $(0x4E809400 | (m)<<16 | (n)<<5 | (d))
// SCVTF4(n, d): Vd.4S = float(Vn.4S).
#define SCVTF4(n, d) WORD $(0x4E21D800 | (n)<<5 | (d))
// SCVTF1(n, d): Sd = float(Sn), on the low int32 lane.
#define SCVTF1(n, d) WORD $(0x5E21D800 | (n)<<5 | (d))
// FADDP4(m, n, d): Vd.4S = pairwise sums of Vn.4S then Vm.4S.
#define FADDP4(m, n, d) WORD $(0x6E20D400 | (m)<<16 | (n)<<5 | (d))
// FADDP2(n, d): Sd = Vn.S[0] + Vn.S[1].
#define FADDP2(n, d) WORD $(0x7E30D800 | (n)<<5 | (d))

// PROLOGUE is a row's f and β (F20), from dx (R5), xsum (R6) into f
// (R7); the row's scales and biases are read from R2 and R3, which it
// advances past them. R11 is the dtype of scales and biases (halfKind),
// R13 the groups of a row, R14 the chunks of a group.
#define PROLOGUE \
	MOVD  R5, R15; \
	MOVD  R6, R16; \
	MOVD  R7, R17; \
	MOVD  R13, R19; \
	FMOVS ZR, F20; \
group: \
	CMP   $1, R11; \
	BLT   sf32; \
	BEQ   sbf16; \
	MOVHU.P 2(R2), R21; \
	MOVHU.P 2(R3), R22; \
	FMOVS R21, F0; \
	FMOVS R22, F1; \
	FCVTHS F0, F0; \
	FCVTHS F1, F1; \
	B     chunk0; \
sbf16: \
	MOVHU.P 2(R2), R21; \
	MOVHU.P 2(R3), R22; \
	LSLW  $16, R21; \
	LSLW  $16, R22; \
	FMOVS R21, F0; \
	FMOVS R22, F1; \
	B     chunk0; \
sf32: \
	FMOVS.P 4(R2), F0; \
	FMOVS.P 4(R3), F1; \
chunk0: \
	MOVD  R14, R20; \
chunk: \
	FMOVS.P 4(R15), F2; \
	FMOVS.P 4(R16), F3; \
	FMULS F0, F2, F2; \
	FMOVS.P F2, 4(R17); \
	FMADDS F1, F20, F3, F20; \
	SUBS  $1, R20; \
	BNE   chunk; \
	SUBS  $1, R19; \
	BNE   group

// ARGS loads the arguments shared by both kernels and derives R12 (chunks
// of a row), R13 (groups of a row) and R14 (chunks of a group).
#define ARGS \
	MOVD out+0(FP), R0; \
	MOVD w+8(FP), R1; \
	MOVD scales+16(FP), R2; \
	MOVD biases+24(FP), R3; \
	MOVD xq+32(FP), R4; \
	MOVD dx+40(FP), R5; \
	MOVD xsum+48(FP), R6; \
	MOVD f+56(FP), R7; \
	MOVD rows+64(FP), R8; \
	MOVD cols+72(FP), R9; \
	MOVD gshift+80(FP), R10; \
	MOVD kind+88(FP), R11; \
	LSR  $5, R9, R12; \
	LSR  R10, R9, R13; \
	SUB  $5, R10, R10; \
	MOVD $1, R14; \
	LSL  R10, R14, R14

// FOLD4 adds the four chunk accumulators V16-V19 as floats times f (R17,
// advanced) to V21.
#define FOLD4 \
	VADDP V17.S4, V16.S4, V16.S4; \
	VADDP V19.S4, V18.S4, V18.S4; \
	VADDP V18.S4, V16.S4, V16.S4; \
	SCVTF4(16, 16); \
	VLD1.P 16(R17), [V22.S4]; \
	VFMLA V22.S4, V16.S4, V21.S4

// FOLD1 adds the chunk accumulator V16 as a float times f (R17, advanced)
// to β (F20).
#define FOLD1 \
	VADDV V16.S4, V16; \
	SCVTF1(16, 16); \
	FMOVS.P 4(R17), F22; \
	FMADDS F22, F20, F16, F20

// STORE adds V21's lanes to β (F20) into the next out (R0).
#define STORE \
	FADDP4(21, 21, 21); \
	FADDP2(21, 21); \
	FADDS F20, F21, F21; \
	FMOVS.P F21, 4(R0)

// SDOTE(m, j, n, d): Vd.4S += Σ of each four bytes of Vn.16B·Vm.4B[j]
// (signed), the same four bytes of Vm for every lane.
#define SDOTE(m, j, n, d) WORD $(0x4F80E000 | ((j)&1)<<21 | (m)<<16 | ((j)>>1)<<11 | (n)<<5 | (d))
// FMULE(m, j, n, d): Vd.4S = Vn.4S·Vm.S[j].
#define FMULE(m, j, n, d) WORD $(0x4F809000 | ((j)&1)<<21 | (m)<<16 | ((j)>>1)<<11 | (n)<<5 | (d))
// FMLAE(m, j, n, d): Vd.4S += Vn.4S·Vm.S[j].
#define FMLAE(m, j, n, d) WORD $(0x4F801000 | ((j)&1)<<21 | (m)<<16 | ((j)>>1)<<11 | (n)<<5 | (d))

// func gemmQ4I8NEON(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx, xs *float32, np, nt, chunks int)
// func gemmQ8I8NEON(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx, xs *float32, np, nt, chunks int)
//
// The batch kernels: a panel of sixteen rows (wp: for each four columns,
// each row's four codes; sp, bp: each 32-column chunk's scale and bias of
// the sixteen rows) times nt of np inputs (xq: for each four columns, each
// input's four int8s; dx, xs: each chunk's step and sum of each input), to
// tile[t·16+r]. Four inputs at a time: for each four columns, one load of
// the panel (four vectors of four rows) and of the inputs' sixteen bytes,
// and sixteen SDOTE, one per vector and input, into V16-V31; at each
// chunk's end the int32 sums become floats, times scale·step (V14), plus
// bias·sum, added to the tile. q4 codes are signed bytes as they are; q8
// codes go in as q-128 (XQ8: XOR 0x80, and each input's -128·Σxq by one
// SDOT into V6), and CORRECTQ8 subtracts that at each chunk's end.

// CLEARQ8 starts a chunk's -128·Σxq (V6), with V5 all bytes 0x80.
#define CLEARQ8 \
	VEOR V6.B16, V6.B16, V6.B16; \
	VMOVI $128, V5.B16

// XQ8 turns the panel's four vectors into q-128 and adds the four
// inputs' -128·Σxq to V6.
#define XQ8 \
	VEOR V5.B16, V0.B16, V0.B16; \
	VEOR V5.B16, V1.B16, V1.B16; \
	VEOR V5.B16, V2.B16, V2.B16; \
	VEOR V5.B16, V3.B16, V3.B16; \
	SDOT(4, 5, 6)

// CORRECTQ8 subtracts each input's -128·Σxq (V6) from its sums.
#define CORRECTQ8 \
	VDUP V6.S[0], V7.S4; \
	VSUB V7.S4, V16.S4, V16.S4; \
	VSUB V7.S4, V17.S4, V17.S4; \
	VSUB V7.S4, V18.S4, V18.S4; \
	VSUB V7.S4, V19.S4, V19.S4; \
	VDUP V6.S[1], V7.S4; \
	VSUB V7.S4, V20.S4, V20.S4; \
	VSUB V7.S4, V21.S4, V21.S4; \
	VSUB V7.S4, V22.S4, V22.S4; \
	VSUB V7.S4, V23.S4, V23.S4; \
	VDUP V6.S[2], V7.S4; \
	VSUB V7.S4, V24.S4, V24.S4; \
	VSUB V7.S4, V25.S4, V25.S4; \
	VSUB V7.S4, V26.S4, V26.S4; \
	VSUB V7.S4, V27.S4, V27.S4; \
	VDUP V6.S[3], V7.S4; \
	VSUB V7.S4, V28.S4, V28.S4; \
	VSUB V7.S4, V29.S4, V29.S4; \
	VSUB V7.S4, V30.S4, V30.S4; \
	VSUB V7.S4, V31.S4, V31.S4

#define NONE

// GEMM is the kernel, with CLEAR, XOR and CORRECT what q8 adds.
#define GEMM(CLEAR, XOR, CORRECT) \
	MOVD tile+0(FP), R0; \
	MOVD wp+8(FP), R1; \
	MOVD sp+16(FP), R2; \
	MOVD bp+24(FP), R3; \
	MOVD xq+32(FP), R4; \
	MOVD dx+40(FP), R5; \
	MOVD xs+48(FP), R6; \
	MOVD np+56(FP), R7; \
	MOVD nt+64(FP), R8; \
	MOVD chunks+72(FP), R9; \
	LSL  $2, R7, R10; \
	MOVD ZR, R12; \
inputs: \
	ADD  R12<<6, R0, R13; \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	MOVD R13, R23; \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R23); \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R23); \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R23); \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R23); \
	MOVD R1, R14; \
	MOVD R2, R15; \
	MOVD R3, R16; \
	ADD  R12<<2, R4, R17; \
	ADD  R12<<2, R5, R19; \
	ADD  R12<<2, R6, R20; \
	MOVD R9, R21; \
chunk: \
	VEOR V16.B16, V16.B16, V16.B16; \
	VEOR V17.B16, V17.B16, V17.B16; \
	VEOR V18.B16, V18.B16, V18.B16; \
	VEOR V19.B16, V19.B16, V19.B16; \
	VEOR V20.B16, V20.B16, V20.B16; \
	VEOR V21.B16, V21.B16, V21.B16; \
	VEOR V22.B16, V22.B16, V22.B16; \
	VEOR V23.B16, V23.B16, V23.B16; \
	VEOR V24.B16, V24.B16, V24.B16; \
	VEOR V25.B16, V25.B16, V25.B16; \
	VEOR V26.B16, V26.B16, V26.B16; \
	VEOR V27.B16, V27.B16, V27.B16; \
	VEOR V28.B16, V28.B16, V28.B16; \
	VEOR V29.B16, V29.B16, V29.B16; \
	VEOR V30.B16, V30.B16, V30.B16; \
	VEOR V31.B16, V31.B16, V31.B16; \
	CLEAR; \
	MOVD $8, R22; \
k4: \
	VLD1.P 64(R14), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	VLD1 (R17), [V4.B16]; \
	ADD  R10, R17; \
	XOR; \
	SDOTE(4, 0, 0, 16); \
	SDOTE(4, 0, 1, 17); \
	SDOTE(4, 0, 2, 18); \
	SDOTE(4, 0, 3, 19); \
	SDOTE(4, 1, 0, 20); \
	SDOTE(4, 1, 1, 21); \
	SDOTE(4, 1, 2, 22); \
	SDOTE(4, 1, 3, 23); \
	SDOTE(4, 2, 0, 24); \
	SDOTE(4, 2, 1, 25); \
	SDOTE(4, 2, 2, 26); \
	SDOTE(4, 2, 3, 27); \
	SDOTE(4, 3, 0, 28); \
	SDOTE(4, 3, 1, 29); \
	SDOTE(4, 3, 2, 30); \
	SDOTE(4, 3, 3, 31); \
	SUBS $1, R22; \
	BNE  k4; \
	CORRECT; \
	VLD1 (R19), [V4.S4]; \
	VLD1 (R20), [V5.S4]; \
	ADD  R10, R19; \
	ADD  R10, R20; \
	VLD1.P 64(R15), [V6.S4, V7.S4, V8.S4, V9.S4]; \
	VLD1.P 64(R16), [V10.S4, V11.S4, V12.S4, V13.S4]; \
	MOVD R13, R23; \
	VLD1 (R23), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	SCVTF4(16, 16); \
	FMULE(4, 0, 6, 14); \
	VFMLA V14.S4, V16.S4, V0.S4; \
	FMLAE(5, 0, 10, 0); \
	SCVTF4(17, 17); \
	FMULE(4, 0, 7, 14); \
	VFMLA V14.S4, V17.S4, V1.S4; \
	FMLAE(5, 0, 11, 1); \
	SCVTF4(18, 18); \
	FMULE(4, 0, 8, 14); \
	VFMLA V14.S4, V18.S4, V2.S4; \
	FMLAE(5, 0, 12, 2); \
	SCVTF4(19, 19); \
	FMULE(4, 0, 9, 14); \
	VFMLA V14.S4, V19.S4, V3.S4; \
	FMLAE(5, 0, 13, 3); \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R23); \
	VLD1 (R23), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	SCVTF4(20, 20); \
	FMULE(4, 1, 6, 14); \
	VFMLA V14.S4, V20.S4, V0.S4; \
	FMLAE(5, 1, 10, 0); \
	SCVTF4(21, 21); \
	FMULE(4, 1, 7, 14); \
	VFMLA V14.S4, V21.S4, V1.S4; \
	FMLAE(5, 1, 11, 1); \
	SCVTF4(22, 22); \
	FMULE(4, 1, 8, 14); \
	VFMLA V14.S4, V22.S4, V2.S4; \
	FMLAE(5, 1, 12, 2); \
	SCVTF4(23, 23); \
	FMULE(4, 1, 9, 14); \
	VFMLA V14.S4, V23.S4, V3.S4; \
	FMLAE(5, 1, 13, 3); \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R23); \
	VLD1 (R23), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	SCVTF4(24, 24); \
	FMULE(4, 2, 6, 14); \
	VFMLA V14.S4, V24.S4, V0.S4; \
	FMLAE(5, 2, 10, 0); \
	SCVTF4(25, 25); \
	FMULE(4, 2, 7, 14); \
	VFMLA V14.S4, V25.S4, V1.S4; \
	FMLAE(5, 2, 11, 1); \
	SCVTF4(26, 26); \
	FMULE(4, 2, 8, 14); \
	VFMLA V14.S4, V26.S4, V2.S4; \
	FMLAE(5, 2, 12, 2); \
	SCVTF4(27, 27); \
	FMULE(4, 2, 9, 14); \
	VFMLA V14.S4, V27.S4, V3.S4; \
	FMLAE(5, 2, 13, 3); \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R23); \
	VLD1 (R23), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	SCVTF4(28, 28); \
	FMULE(4, 3, 6, 14); \
	VFMLA V14.S4, V28.S4, V0.S4; \
	FMLAE(5, 3, 10, 0); \
	SCVTF4(29, 29); \
	FMULE(4, 3, 7, 14); \
	VFMLA V14.S4, V29.S4, V1.S4; \
	FMLAE(5, 3, 11, 1); \
	SCVTF4(30, 30); \
	FMULE(4, 3, 8, 14); \
	VFMLA V14.S4, V30.S4, V2.S4; \
	FMLAE(5, 3, 12, 2); \
	SCVTF4(31, 31); \
	FMULE(4, 3, 9, 14); \
	VFMLA V14.S4, V31.S4, V3.S4; \
	FMLAE(5, 3, 13, 3); \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R23); \
	SUBS $1, R21; \
	BNE  chunk; \
	ADD  $4, R12; \
	CMP  R8, R12; \
	BLT  inputs; \
	RET

// q4: 64 code bytes are 128 weights, the low nibbles the even ones of
// four chunks and the high nibbles the odd ones; xq comes in that order
// (q4I8Index), and in nibble order in the tail.

// func gemvQ4I8NEON(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, rows, cols, gshift, kind int)
TEXT ·gemvQ4I8NEON(SB), NOSPLIT, $0-96
	ARGS
	VMOVI $15, V31.B16

row:
	PROLOGUE
	MOVD R7, R17
	MOVD R4, R15
	VEOR V21.B16, V21.B16, V21.B16
	LSR  $2, R12, R19
	CBZ  R19, tail

block:
	VLD1.P 64(R1), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R15), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R15), [V8.B16, V9.B16, V10.B16, V11.B16]
	VAND  V31.B16, V0.B16, V12.B16
	VAND  V31.B16, V1.B16, V13.B16
	VAND  V31.B16, V2.B16, V14.B16
	VAND  V31.B16, V3.B16, V15.B16
	VUSHR $4, V0.B16, V0.B16
	VUSHR $4, V1.B16, V1.B16
	VUSHR $4, V2.B16, V2.B16
	VUSHR $4, V3.B16, V3.B16
	VEOR  V16.B16, V16.B16, V16.B16
	VEOR  V17.B16, V17.B16, V17.B16
	VEOR  V18.B16, V18.B16, V18.B16
	VEOR  V19.B16, V19.B16, V19.B16
	SDOT(4, 12, 16)
	SDOT(5, 13, 17)
	SDOT(6, 14, 18)
	SDOT(7, 15, 19)
	SDOT(8, 0, 16)
	SDOT(9, 1, 17)
	SDOT(10, 2, 18)
	SDOT(11, 3, 19)
	FOLD4
	SUBS $1, R19
	BNE  block

tail:
	AND  $3, R12, R19
	CBZ  R19, done

tailchunk:
	VLD1.P 16(R1), [V0.B16]
	VLD1.P 32(R15), [V4.B16, V5.B16]
	VAND  V31.B16, V0.B16, V12.B16
	VUSHR $4, V0.B16, V0.B16
	VEOR  V16.B16, V16.B16, V16.B16
	SDOT(4, 12, 16)
	SDOT(5, 0, 16)
	FOLD1
	SUBS $1, R19
	BNE  tailchunk

done:
	STORE
	SUBS $1, R8
	BNE  row
	RET

// q8: codes are unsigned bytes and SDOT multiplies signed ones, so each
// code goes in as q-128 (q XOR 0x80) and the chunk's -128·Σxq, made with
// SDOT into V24-V27 from V30 (all bytes -128), is subtracted: the sums
// stay exact in int32.

// func gemvQ8I8NEON(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, rows, cols, gshift, kind int)
TEXT ·gemvQ8I8NEON(SB), NOSPLIT, $0-96
	ARGS
	VMOVI $128, V30.B16

row:
	PROLOGUE
	MOVD R7, R17
	MOVD R4, R15
	VEOR V21.B16, V21.B16, V21.B16
	LSR  $2, R12, R19
	CBZ  R19, tail

block:
	VLD1.P 64(R1), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R1), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R15), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P 64(R15), [V12.B16, V13.B16, V14.B16, V15.B16]
	VEOR  V30.B16, V0.B16, V0.B16
	VEOR  V30.B16, V1.B16, V1.B16
	VEOR  V30.B16, V2.B16, V2.B16
	VEOR  V30.B16, V3.B16, V3.B16
	VEOR  V30.B16, V4.B16, V4.B16
	VEOR  V30.B16, V5.B16, V5.B16
	VEOR  V30.B16, V6.B16, V6.B16
	VEOR  V30.B16, V7.B16, V7.B16
	VEOR  V16.B16, V16.B16, V16.B16
	VEOR  V17.B16, V17.B16, V17.B16
	VEOR  V18.B16, V18.B16, V18.B16
	VEOR  V19.B16, V19.B16, V19.B16
	VEOR  V24.B16, V24.B16, V24.B16
	VEOR  V25.B16, V25.B16, V25.B16
	VEOR  V26.B16, V26.B16, V26.B16
	VEOR  V27.B16, V27.B16, V27.B16
	SDOT(8, 0, 16)
	SDOT(10, 2, 17)
	SDOT(12, 4, 18)
	SDOT(14, 6, 19)
	SDOT(9, 1, 16)
	SDOT(11, 3, 17)
	SDOT(13, 5, 18)
	SDOT(15, 7, 19)
	SDOT(8, 30, 24)
	SDOT(10, 30, 25)
	SDOT(12, 30, 26)
	SDOT(14, 30, 27)
	SDOT(9, 30, 24)
	SDOT(11, 30, 25)
	SDOT(13, 30, 26)
	SDOT(15, 30, 27)
	VSUB  V24.S4, V16.S4, V16.S4
	VSUB  V25.S4, V17.S4, V17.S4
	VSUB  V26.S4, V18.S4, V18.S4
	VSUB  V27.S4, V19.S4, V19.S4
	FOLD4
	SUBS $1, R19
	BNE  block

tail:
	AND  $3, R12, R19
	CBZ  R19, done

tailchunk:
	VLD1.P 32(R1), [V0.B16, V1.B16]
	VLD1.P 32(R15), [V8.B16, V9.B16]
	VEOR  V30.B16, V0.B16, V0.B16
	VEOR  V30.B16, V1.B16, V1.B16
	VEOR  V16.B16, V16.B16, V16.B16
	VEOR  V24.B16, V24.B16, V24.B16
	SDOT(8, 0, 16)
	SDOT(9, 1, 16)
	SDOT(8, 30, 24)
	SDOT(9, 30, 24)
	VSUB  V24.S4, V16.S4, V16.S4
	FOLD1
	SUBS $1, R19
	BNE  tailchunk

done:
	STORE
	SUBS $1, R8
	BNE  row
	RET

// The batch kernels (GEMM, above).
TEXT ·gemmQ4I8NEON(SB), NOSPLIT, $0-80
	GEMM(NONE, NONE, NONE)

TEXT ·gemmQ8I8NEON(SB), NOSPLIT, $0-80
	GEMM(CLEARQ8, XQ8, CORRECTQ8)

// FABS4(n, d): Vd.4S = |Vn.4S|.
#define FABS4(n, d) WORD $(0x4EA0F800 | (n)<<5 | (d))
// FMAX4(m, n, d): Vd.4S = max(Vn.4S, Vm.4S).
#define FMAX4(m, n, d) WORD $(0x4E20F400 | (m)<<16 | (n)<<5 | (d))
// FMAXV(n, d): Sd = the largest lane of Vn.4S.
#define FMAXV(n, d) WORD $(0x6E30F800 | (n)<<5 | (d))
// FADD4(m, n, d): Vd.4S = Vn.4S + Vm.4S.
#define FADD4(m, n, d) WORD $(0x4E20D400 | (m)<<16 | (n)<<5 | (d))
// FCVTNS4(n, d): Vd.4S = Vn.4S rounded to the nearest int32, ties to even.
#define FCVTNS4(n, d) WORD $(0x4E21A800 | (n)<<5 | (d))

// func quantI8NEON(xq *int8, dx, xsum, x *float32, cols, order int)
//
// The activation quantiser (quantizeI8's maths), a chunk of 32 at a time:
// max|x| by FMAX and the sum by FADD, both as trees; dx = max/127; x times
// 127/max rounded to even (FCVTNS; a zero chunk multiplies by +Inf, and
// FCVTNS makes the NaNs of 0·Inf zeros); the int32s narrowed to bytes by
// UZP1, split into even and odd elements by UZP1 and UZP2 for the q4
// orders (i8Order).
TEXT ·quantI8NEON(SB), NOSPLIT, $0-48
	MOVD xq+0(FP), R0
	MOVD dx+8(FP), R1
	MOVD xsum+16(FP), R2
	MOVD x+24(FP), R3
	MOVD cols+32(FP), R4
	MOVD order+40(FP), R5
	LSR  $5, R4, R6
	LSR  $7, R4, R7
	LSL  $2, R7, R7 // chunks in whole blocks of 128
	MOVW $0x42fe0000, R8
	FMOVS R8, F31 // 127
	MOVD ZR, R9

qchunk:
	VLD1.P 64(R3), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R3), [V4.S4, V5.S4, V6.S4, V7.S4]
	FABS4(0, 8)
	FABS4(1, 9)
	FABS4(2, 10)
	FABS4(3, 11)
	FABS4(4, 12)
	FABS4(5, 13)
	FABS4(6, 14)
	FABS4(7, 15)
	FMAX4(9, 8, 8)
	FMAX4(11, 10, 10)
	FMAX4(13, 12, 12)
	FMAX4(15, 14, 14)
	FMAX4(10, 8, 8)
	FMAX4(14, 12, 12)
	FMAX4(12, 8, 8)
	FMAXV(8, 8)
	FADD4(1, 0, 16)
	FADD4(3, 2, 17)
	FADD4(5, 4, 18)
	FADD4(7, 6, 19)
	FADD4(17, 16, 16)
	FADD4(19, 18, 18)
	FADD4(18, 16, 16)
	FADDP4(16, 16, 16)
	FADDP2(16, 16)
	FMOVS.P F16, 4(R2)
	FDIVS F31, F8, F17
	FMOVS.P F17, 4(R1)
	FDIVS F8, F31, F18
	FMULE(18, 0, 0, 0)
	FMULE(18, 0, 1, 1)
	FMULE(18, 0, 2, 2)
	FMULE(18, 0, 3, 3)
	FMULE(18, 0, 4, 4)
	FMULE(18, 0, 5, 5)
	FMULE(18, 0, 6, 6)
	FMULE(18, 0, 7, 7)
	FCVTNS4(0, 0)
	FCVTNS4(1, 1)
	FCVTNS4(2, 2)
	FCVTNS4(3, 3)
	FCVTNS4(4, 4)
	FCVTNS4(5, 5)
	FCVTNS4(6, 6)
	FCVTNS4(7, 7)
	VUZP1 V1.H8, V0.H8, V0.H8
	VUZP1 V3.H8, V2.H8, V2.H8
	VUZP1 V5.H8, V4.H8, V4.H8
	VUZP1 V7.H8, V6.H8, V6.H8
	VUZP1 V2.B16, V0.B16, V0.B16
	VUZP1 V6.B16, V4.B16, V1.B16
	LSL  $5, R9, R10
	ADD  R0, R10, R10
	CBNZ R5, split
	VST1 [V0.B16, V1.B16], (R10)
	B    next

split:
	VUZP1 V1.B16, V0.B16, V2.B16
	VUZP2 V1.B16, V0.B16, V3.B16
	CMP  $1, R5
	BNE  pair
	CMP  R7, R9
	BHS  pair
	LSR  $2, R9, R11
	LSL  $7, R11, R11
	AND  $3, R9, R12
	ADD  R12<<4, R11, R11
	ADD  R0, R11, R10
	VST1 [V2.B16], (R10)
	ADD  $64, R10
	VST1 [V3.B16], (R10)
	B    next

pair:
	VST1 [V2.B16, V3.B16], (R10)

next:
	ADD  $1, R9
	CMP  R6, R9
	BLT  qchunk
	RET
