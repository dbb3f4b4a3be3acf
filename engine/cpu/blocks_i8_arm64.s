#include "textflag.h"

// GGUF blocks times int8 activations with NEON SDOT, read in place: the
// maths of blocks_i8.go. For each row, each block's codes meet their 32
// activations in SDOT (signed bytes: Q8_0's codes as they are, the 4- and
// 6-bit codes as small non-negative bytes, Q6_K's moved to q−32), the
// int32 lanes become floats times the block's step·dx into V21, and the
// bias terms (Q4_0's −8d, Q4_1's m, the k-quants' −dmin·m, each times the
// block's Σx, xsum) go to F20; out = Σ V21 + F20.
//
// The instructions Go's assembler lacks are encoded as in int8_arm64.s.
// A block's d and m live in F30 and F31 (F0-F5 are the low lanes of the
// vectors that the codes are loaded into).

// SDOT(m, n, d): Vd.4S += Σ of each four bytes of Vn.16B·Vm.16B (signed).
#define SDOT(m, n, d) WORD $(0x4E809400 | (m)<<16 | (n)<<5 | (d))
// SCVTF4(n, d): Vd.4S = float(Vn.4S).
#define SCVTF4(n, d) WORD $(0x4E21D800 | (n)<<5 | (d))
// FADDP4(m, n, d): Vd.4S = pairwise sums of Vn.4S then Vm.4S.
#define FADDP4(m, n, d) WORD $(0x6E20D400 | (m)<<16 | (n)<<5 | (d))
// FADDP2(n, d): Sd = Vn.S[0] + Vn.S[1].
#define FADDP2(n, d) WORD $(0x7E30D800 | (n)<<5 | (d))
// FMLAE(m, j, n, d): Vd.4S += Vn.4S·Vm.S[j].
#define FMLAE(m, j, n, d) WORD $(0x4F801000 | ((j)&1)<<21 | (m)<<16 | ((j)>>1)<<11 | (n)<<5 | (d))

// ARGS loads the arguments: R0 out, R1 w, R2 xq, R3 dx, R4 xsum, R12 f
// (16 floats of scratch), R5 rows, R6 blocks of a row.
#define ARGS \
	MOVD out+0(FP), R0; \
	MOVD w+8(FP), R1; \
	MOVD xq+16(FP), R2; \
	MOVD dx+24(FP), R3; \
	MOVD xsum+32(FP), R4; \
	MOVD f+40(FP), R12; \
	MOVD rows+48(FP), R5; \
	MOVD blocks+56(FP), R6

// ROW starts a row: R7, R8, R9 the activations, steps and sums from the
// start, R10 its blocks, V21 and F20 zero.
#define ROW \
	MOVD  R2, R7; \
	MOVD  R3, R8; \
	MOVD  R4, R9; \
	MOVD  R6, R10; \
	VEOR  V21.B16, V21.B16, V21.B16; \
	FMOVS ZR, F20

// STORE writes Σ V21 + F20 to the next out (R0).
#define STORE \
	FADDP4(21, 21, 21); \
	FADDP2(21, 21); \
	FADDS F20, F21, F21; \
	FMOVS.P F21, 4(R0)

// HALF reads the f16 at R1 (advanced by 2) into Fd as a float.
#define HALF(d) \
	MOVHU.P 2(R1), R11; \
	FMOVS   R11, d; \
	FCVTHS  d, d

// SCALE adds the lanes of V(acc) as floats, times Fstep·(the next dx,
// R8), to V21.
#define SCALE(step, acc) \
	SCVTF4(acc, acc); \
	FMOVS.P 4(R8), F25; \
	FMULS   step, F25, F25; \
	FMLAE(25, 0, acc, 21)

// func gemvQ8_0NEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)
TEXT ·gemvQ8_0NEON(SB), NOSPLIT, $0-64
	ARGS
q8row:
	ROW
q8block:
	HALF(F30)
	VLD1.P 32(R1), [V0.B16, V1.B16]
	VLD1.P 32(R7), [V2.B16, V3.B16]
	VEOR   V16.B16, V16.B16, V16.B16
	SDOT(2, 0, 16)
	SDOT(3, 1, 16)
	SCALE(F30, 16)
	SUBS   $1, R10
	BNE    q8block
	STORE
	SUBS   $1, R5
	BNE    q8row
	RET

// NIBBLES splits the 16 bytes of V0 into the block's codes 0-15 (low
// nibbles, V1) and 16-31 (high, V0), with V7 all 0x0F, and multiplies
// them with the block's 32 activations (R7, advanced) into V16.
#define NIBBLES \
	VLD1.P 16(R1), [V0.B16]; \
	VAND   V7.B16, V0.B16, V1.B16; \
	VUSHR  $4, V0.B16, V0.B16; \
	VLD1.P 32(R7), [V2.B16, V3.B16]; \
	VEOR   V16.B16, V16.B16, V16.B16; \
	SDOT(2, 1, 16); \
	SDOT(3, 0, 16)

// func gemvQ4_0NEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)
TEXT ·gemvQ4_0NEON(SB), NOSPLIT, $0-64
	ARGS
	VMOVI  $15, V7.B16
	FMOVS  $8.0, F6
q40row:
	ROW
q40block:
	HALF(F30)
	NIBBLES
	SCALE(F30, 16)
	FMOVS.P 4(R9), F5
	FMULS  F30, F5, F5
	FMSUBS F6, F20, F5, F20 // F20 −= 8·d·Σx
	SUBS   $1, R10
	BNE    q40block
	STORE
	SUBS   $1, R5
	BNE    q40row
	RET

// func gemvQ4_1NEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)
TEXT ·gemvQ4_1NEON(SB), NOSPLIT, $0-64
	ARGS
	VMOVI  $15, V7.B16
q41row:
	ROW
q41block:
	HALF(F30)
	HALF(F31)
	NIBBLES
	SCALE(F30, 16)
	FMOVS.P 4(R9), F5
	FMADDS F31, F20, F5, F20 // F20 += m·Σx
	SUBS   $1, R10
	BNE    q41block
	STORE
	SUBS   $1, R5
	BNE    q41row
	RET

// KSCALES(j) unpacks sub-blocks j and j+4's 6-bit scales and mins from the
// twelve bytes in R13 (0-3), R14 (4-7), R15 (8-11) (gguf.ScaleMinK4) and
// stores d·sc to f[j], f[j+4] and dmin·m to f[8+j], f[12+j] (R12), with
// d in F0, dmin in F1.
#define KSCALES(j) \
	UBFX    $(8*(j)), R13, $6, R16; \
	UBFX    $(8*(j)), R14, $6, R17; \
	UBFX    $(8*(j)), R15, $4, R19; \
	UBFX    $(8*(j)+6), R13, $2, R20; \
	ORR     R20<<4, R19, R19; \
	UBFX    $(8*(j)+4), R15, $4, R21; \
	UBFX    $(8*(j)+6), R14, $2, R22; \
	ORR     R22<<4, R21, R21; \
	SCVTFWS R16, F16; \
	SCVTFWS R17, F17; \
	SCVTFWS R19, F19; \
	SCVTFWS R21, F22; \
	FMULS   F0, F16, F16; \
	FMULS   F1, F17, F17; \
	FMULS   F0, F19, F19; \
	FMULS   F1, F22, F22; \
	FMOVS   F16, (4*(j))(R12); \
	FMOVS   F19, (4*(j)+16)(R12); \
	FMOVS   F17, (4*(j)+32)(R12); \
	FMOVS   F22, (4*(j)+48)(R12)

// KHEAD reads a Q4_K or Q5_K super-block's d, dmin and scales (R1
// advanced past them) into F0, F1 and f.
#define KHEAD \
	HALF(F0); \
	HALF(F1); \
	MOVWU.P 4(R1), R13; \
	MOVWU.P 4(R1), R14; \
	MOVWU.P 4(R1), R15; \
	KSCALES(0); \
	KSCALES(1); \
	KSCALES(2); \
	KSCALES(3)

// KPAIR(p) multiplies sub-blocks 2p (V2, V3) and 2p+1 (V0, V1) with their
// 64 activations (R7, advanced), scales them by f[2p], f[2p+1] and takes
// dmin·m·Σx of each (f[8+2p], f[9+2p]) from F20.
#define KPAIR(p) \
	VLD1.P 64(R7), [V12.B16, V13.B16, V14.B16, V15.B16]; \
	VEOR   V16.B16, V16.B16, V16.B16; \
	VEOR   V17.B16, V17.B16, V17.B16; \
	SDOT(12, 2, 16); \
	SDOT(13, 3, 16); \
	SDOT(14, 0, 17); \
	SDOT(15, 1, 17); \
	FMOVS  (8*(p))(R12), F24; \
	SCALE(F24, 16); \
	FMOVS  (8*(p)+4)(R12), F24; \
	SCALE(F24, 17); \
	FMOVS  (8*(p)+32)(R12), F24; \
	FMOVS.P 4(R9), F5; \
	FMSUBS F24, F20, F5, F20; \
	FMOVS  (8*(p)+36)(R12), F24; \
	FMOVS.P 4(R9), F5; \
	FMSUBS F24, F20, F5, F20

// Q4CODES splits the 32 bytes at R1 (advanced) into sub-block 2p's codes
// (low nibbles: V2, V3) and 2p+1's (high: V0, V1).
#define Q4CODES \
	VLD1.P 32(R1), [V0.B16, V1.B16]; \
	VAND   V7.B16, V0.B16, V2.B16; \
	VAND   V7.B16, V1.B16, V3.B16; \
	VUSHR  $4, V0.B16, V0.B16; \
	VUSHR  $4, V1.B16, V1.B16

// func gemvQ4_KNEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)
TEXT ·gemvQ4_KNEON(SB), NOSPLIT, $0-64
	ARGS
	VMOVI  $15, V7.B16
q4krow:
	ROW
q4kblock:
	KHEAD
	Q4CODES
	KPAIR(0)
	Q4CODES
	KPAIR(1)
	Q4CODES
	KPAIR(2)
	Q4CODES
	KPAIR(3)
	SUBS   $1, R10
	BNE    q4kblock
	STORE
	SUBS   $1, R5
	BNE    q4krow
	RET

// Q5CODES is Q4CODES with the fifth bits: bit 0 of each byte of V8, V9
// (qh, shifted right by 2p) for sub-block 2p, bit 1 for 2p+1; then qh
// moves on by two bits. V10 is all 0x01.
#define Q5CODES \
	Q4CODES; \
	VAND  V10.B16, V8.B16, V11.B16; \
	VAND  V10.B16, V9.B16, V12.B16; \
	VSHL  $4, V11.B16, V11.B16; \
	VSHL  $4, V12.B16, V12.B16; \
	VORR  V11.B16, V2.B16, V2.B16; \
	VORR  V12.B16, V3.B16, V3.B16; \
	VUSHR $1, V8.B16, V8.B16; \
	VUSHR $1, V9.B16, V9.B16; \
	VAND  V10.B16, V8.B16, V11.B16; \
	VAND  V10.B16, V9.B16, V12.B16; \
	VSHL  $4, V11.B16, V11.B16; \
	VSHL  $4, V12.B16, V12.B16; \
	VORR  V11.B16, V0.B16, V0.B16; \
	VORR  V12.B16, V1.B16, V1.B16; \
	VUSHR $1, V8.B16, V8.B16; \
	VUSHR $1, V9.B16, V9.B16

// func gemvQ5_KNEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)
TEXT ·gemvQ5_KNEON(SB), NOSPLIT, $0-64
	ARGS
	VMOVI  $15, V7.B16
	VMOVI  $1, V10.B16
q5krow:
	ROW
q5kblock:
	KHEAD
	VLD1.P 32(R1), [V8.B16, V9.B16]
	Q5CODES
	KPAIR(0)
	Q5CODES
	KPAIR(1)
	Q5CODES
	KPAIR(2)
	Q5CODES
	KPAIR(3)
	SUBS   $1, R10
	BNE    q5kblock
	STORE
	SUBS   $1, R5
	BNE    q5krow
	RET

// Q6LOW(A, B) and Q6HIGH(A, B) put the low or high nibbles of ql's
// vectors A and B into V9 and V10 (V7 all 0x0F).
#define Q6LOW(A, B) \
	VAND  V7.B16, A.B16, V9.B16; \
	VAND  V7.B16, B.B16, V10.B16
#define Q6HIGH(A, B) \
	VUSHR $4, A.B16, V9.B16; \
	VUSHR $4, B.B16, V10.B16

// Q6CHUNK(k) finishes the codes of weights 32k..32k+31 of a Q6_K half
// block (their low four bits in V9, V10): the low two bits of qh's bytes
// (V4, V5, which then move on by two bits) above them, less 32 (V6);
// multiplies them with their 32 activations
// (R7, advanced) into V16 (the first sixteen) and V17, and adds each as
// floats times d·sc (the int8 scales 2k and 2k+1 at R13; F30 = d) and the
// chunk's dx to V21.
#define Q6CHUNK(k) \
	VAND   V8.B16, V4.B16, V11.B16; \
	VAND   V8.B16, V5.B16, V12.B16; \
	VUSHR  $2, V4.B16, V4.B16; \
	VUSHR  $2, V5.B16, V5.B16; \
	VSHL   $4, V11.B16, V11.B16; \
	VSHL   $4, V12.B16, V12.B16; \
	VORR   V11.B16, V9.B16, V9.B16; \
	VORR   V12.B16, V10.B16, V10.B16; \
	VSUB   V6.B16, V9.B16, V9.B16; \
	VSUB   V6.B16, V10.B16, V10.B16; \
	VLD1.P 32(R7), [V26.B16, V27.B16]; \
	VEOR   V16.B16, V16.B16, V16.B16; \
	VEOR   V17.B16, V17.B16, V17.B16; \
	SDOT(26, 9, 16); \
	SDOT(27, 10, 17); \
	MOVB   (2*(k))(R13), R14; \
	MOVB   (2*(k)+1)(R13), R15; \
	SCVTFWS R14, F24; \
	SCVTFWS R15, F23; \
	FMULS  F30, F24, F24; \
	FMULS  F30, F23, F23; \
	SCVTF4(16, 16); \
	SCVTF4(17, 17); \
	FMOVS.P 4(R8), F25; \
	FMULS  F25, F24, F24; \
	FMULS  F25, F23, F23; \
	FMLAE(24, 0, 16, 21); \
	FMLAE(23, 0, 17, 21)

// Q6HALF does half h of the Q6_K block at R1: ql at R1+64h (V0-V3), qh
// at R1+128+32h (V4, V5), the scales at R1+192+8h (R13).
#define Q6HALF(h) \
	ADD    $(64*(h)), R1, R16; \
	VLD1   (R16), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	ADD    $(128+32*(h)), R1, R16; \
	VLD1   (R16), [V4.B16, V5.B16]; \
	ADD    $(192+8*(h)), R1, R13; \
	Q6LOW(V0, V1); \
	Q6CHUNK(0); \
	Q6LOW(V2, V3); \
	Q6CHUNK(1); \
	Q6HIGH(V0, V1); \
	Q6CHUNK(2); \
	Q6HIGH(V2, V3); \
	Q6CHUNK(3)

// func gemvQ6_KNEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)
TEXT ·gemvQ6_KNEON(SB), NOSPLIT, $0-64
	ARGS
	VMOVI  $15, V7.B16
	VMOVI  $3, V8.B16
	VMOVI  $32, V6.B16
q6krow:
	ROW
q6kblock:
	MOVHU  208(R1), R11
	FMOVS  R11, F30
	FCVTHS F30, F30
	Q6HALF(0)
	Q6HALF(1)
	ADD    $210, R1
	SUBS   $1, R10
	BNE    q6kblock
	STORE
	SUBS   $1, R5
	BNE    q6krow
	RET
