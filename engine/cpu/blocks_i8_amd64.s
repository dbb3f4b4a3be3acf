#include "textflag.h"

// GGUF block kernels over int8 activations (blocks_i8.go), AVX2 with FMA
// and F16C: every x86 int8 set has them. A row goes eight blocks (of 32
// weights) at a time: the eight blocks' d are gathered and widened at
// once and multiplied by their steps dx (stored to the frame, each then
// broadcast by a load), and their bias terms m·xsum added in one vector
// (m = −8d for Q4_0, Q4_1's m; Q8_0 has none). Each block's codes then
// meet its 32 int8 activations: VPMADDUBSW (unsigned times signed bytes,
// pairs summed in int16) and VPMADDWD (pairs of those in int32), the
// eight int32 lanes as floats times d·dx added to one of two sums. Q8_0's
// signed codes go through VPSIGNB as llama.cpp's do: |q| times xq with
// q's sign, which needs xq > −128. The largest int16 is 15·127·2 (Q4) or
// 128·127·2 (Q8_0), below the saturation at 32767. Blocks past the last
// eight go one at a time.
//
// Registers: DI out, SI the row, R8 its bytes, BX rows left, R9 xq, R10
// dx, R11 xsum, R12 blocks; per row AX the block, DX its activations, CX
// its index. Y0 and Y1 the row's sums, Y2 the bias terms (X11 the last
// blocks'), Y12 the bias factor, Y13 the nibble shifts (0 for the low
// lane, 4 for the high), Y14 int16 ones, Y15 bytes of 0x0f.

// ARGS loads the arguments and the constants; f is the bias factor.
#define ARGS(f) \
	MOVQ out+0(FP), DI \
	MOVQ w+8(FP), SI \
	MOVQ rows+16(FP), BX \
	MOVQ rowBytes+24(FP), R8 \
	MOVQ xq+32(FP), R9 \
	MOVQ dx+40(FP), R10 \
	MOVQ xsum+48(FP), R11 \
	MOVQ blocks+56(FP), R12 \
	MOVL $0x0f0f0f0f, AX \
	VMOVD AX, X15 \
	VPBROADCASTD X15, Y15 \
	VPCMPEQW Y14, Y14, Y14 \
	VPSRLW $15, Y14, Y14 \
	MOVL $4, AX \
	VMOVD AX, X13 \
	VPBROADCASTD X13, Y13 \
	VPERM2I128 $0x08, Y13, Y13, Y13 \
	MOVL $f, AX \
	VMOVD AX, X12 \
	VCVTDQ2PS X12, X12 \
	VBROADCASTSS X12, Y12

// ROW starts a row.
#define ROW \
	MOVQ SI, AX \
	MOVQ R9, DX \
	XORQ CX, CX \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS X11, X11, X11

// GATHER8 sets X register x to the halves at off(AX) of eight blocks of
// bb bytes.
#define GATHER8(off, bb, x) \
	VPINSRW $0, off(AX), x, x \
	VPINSRW $1, (off+bb)(AX), x, x \
	VPINSRW $2, (off+2*bb)(AX), x, x \
	VPINSRW $3, (off+3*bb)(AX), x, x \
	VPINSRW $4, (off+4*bb)(AX), x, x \
	VPINSRW $5, (off+5*bb)(AX), x, x \
	VPINSRW $6, (off+6*bb)(AX), x, x \
	VPINSRW $7, (off+7*bb)(AX), x, x

// SCALES8 stores d·dx of the next eight blocks to the frame and leaves
// their d in Y8.
#define SCALES8(bb) \
	GATHER8(0, bb, X8) \
	VCVTPH2PS X8, Y8 \
	VMULPS (R10)(CX*4), Y8, Y9 \
	VMOVUPS Y9, sc-32(SP)

// SCALE1 stores d·dx of the next block to the frame's first float and
// leaves its d in X8.
#define SCALE1 \
	MOVWLZX (AX), R13 \
	VMOVD R13, X8 \
	VCVTPH2PS X8, X8 \
	VMULSS (R10)(CX*4), X8, X9 \
	VMOVSS X9, sc-32(SP)

// BLOCK adds block i times its activations, times its d·dx (the frame's
// float i), to acc: LOAD(i) puts its codes in Y3 as unsigned bytes,
// DOT(i) their products with the activations, as int32, in Y6.
#define BLOCK(i, LOAD, DOT, acc) \
	LOAD(i) \
	DOT(i) \
	VCVTDQ2PS Y6, Y6 \
	VBROADCASTSS sc-(32-4*i)(SP), Y4 \
	VFMADD231PS Y4, Y6, acc

// Q4_0 and Q4_1's codes: the 16 bytes after the block's head of 2 or 4
// bytes, low nibbles (weights 0-15) to the low lane, high ones to the
// high lane.
#define LOADQ40(i) \
	VBROADCASTI128 (2+i*18)(AX), Y3 \
	VPSRLVD Y13, Y3, Y3 \
	VPAND Y15, Y3, Y3

#define LOADQ41(i) \
	VBROADCASTI128 (4+i*20)(AX), Y3 \
	VPSRLVD Y13, Y3, Y3 \
	VPAND Y15, Y3, Y3

// Q8_0's codes plus 128 (Y15 holds bytes of 0x80), for VPDPBUSD; the
// madd kernel takes them signed.
#define LOADQ80(i) \
	VMOVDQU (2+i*34)(AX), Y3 \
	VPXOR Y15, Y3, Y3

#define LOADQ80S(i) \
	VMOVDQU (2+i*34)(AX), Y3

// MADD and VNNI multiply the unsigned codes in Y3 with the activations.
#define MADD(i) \
	VPMADDUBSW (32*i)(DX), Y3, Y6 \
	VPMADDWD Y14, Y6, Y6

#define VNNI(i) \
	VPXOR Y6, Y6, Y6 \
	VPDPBUSD (32*i)(DX), Y3, Y6

// MADDS multiplies Q8_0's signed codes with the activations.
#define MADDS(i) \
	VMOVDQU (32*i)(DX), Y5 \
	VPSIGNB Y3, Y3, Y4 \
	VPSIGNB Y3, Y5, Y5 \
	VPMADDUBSW Y5, Y4, Y6 \
	VPMADDWD Y14, Y6, Y6

// NEXT steps past n blocks of bb bytes.
#define NEXT(n, bb) \
	ADDQ $(n*bb), AX \
	ADDQ $(32*n), DX \
	ADDQ $n, CX

// STORE writes the row's sum and steps to the next row.
#define STORE \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVHLPS X0, X0, X1 \
	VADDPS X1, X0, X0 \
	VPSHUFD $1, X0, X1 \
	VADDSS X1, X0, X0 \
	VADDSS X11, X0, X0 \
	VMOVSS X0, (DI) \
	ADDQ $4, DI \
	ADDQ R8, SI \
	DECQ BX

// PF8Q4 and PF8Q8 prefetch the weights 8 KB (q8: 16 KB) ahead into L2
// (docs/RATIONALE.md, "Prefetch"), a line for each 64 bytes of eight
// blocks; PF1Q4 and PF1Q8 for one block.
#define PF8Q4 \
	PREFETCHT1 8192(AX) \
	PREFETCHT1 (8192+64)(AX) \
	PREFETCHT1 (8192+128)(AX)

#define PF1Q4 \
	PREFETCHT1 8192(AX)

#define PF8Q8 \
	PREFETCHT1 16384(AX) \
	PREFETCHT1 (16384+64)(AX) \
	PREFETCHT1 (16384+128)(AX) \
	PREFETCHT1 (16384+192)(AX) \
	PREFETCHT1 (16384+256)(AX)

#define PF1Q8 \
	PREFETCHT1 16384(AX)

// ROWS is a kernel's loop over its rows: blocks of bb bytes, LOAD and DOT
// as BLOCK's, BIAS8 and BIAS1 add eight blocks' or one block's m·xsum,
// PF8 and PF1 prefetch.
#define ROWS(bb, LOAD, DOT, BIAS8, BIAS1, PF8, PF1) \
row: \
	ROW \
eight: \
	LEAQ 8(CX), R13 \
	CMPQ R13, R12 \
	JGT one \
	PF8 \
	SCALES8(bb) \
	BIAS8 \
	BLOCK(0, LOAD, DOT, Y0) \
	BLOCK(1, LOAD, DOT, Y1) \
	BLOCK(2, LOAD, DOT, Y0) \
	BLOCK(3, LOAD, DOT, Y1) \
	BLOCK(4, LOAD, DOT, Y0) \
	BLOCK(5, LOAD, DOT, Y1) \
	BLOCK(6, LOAD, DOT, Y0) \
	BLOCK(7, LOAD, DOT, Y1) \
	NEXT(8, bb) \
	JMP eight \
one: \
	CMPQ CX, R12 \
	JGE end \
	PF1 \
	SCALE1 \
	BIAS1 \
	BLOCK(0, LOAD, DOT, Y0) \
	NEXT(1, bb) \
	JMP one \
end: \
	STORE \
	JNZ row \
	VZEROUPPER \
	RET

// A bias of the factor in Y12 (Q4_0: −8, Q8_0 on VPDPBUSD: −128) times d
// times xsum.
#define BIAS8D \
	VMULPS Y12, Y8, Y8 \
	VFMADD231PS (R11)(CX*4), Y8, Y2

#define BIAS1D \
	VMULSS X12, X8, X8 \
	VFMADD231SS (R11)(CX*4), X8, X11

// Q4_1's bias: its m, the half after d, times xsum.
#define BIAS8M \
	GATHER8(2, 20, X10) \
	VCVTPH2PS X10, Y10 \
	VFMADD231PS (R11)(CX*4), Y10, Y2

#define BIAS1M \
	MOVWLZX 2(AX), R13 \
	VMOVD R13, X10 \
	VCVTPH2PS X10, X10 \
	VFMADD231SS (R11)(CX*4), X10, X11

// NOBIAS is Q8_0's on the madd path, whose codes stay signed.
#define NOBIAS

// func gemvQ4_0I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)
TEXT ·gemvQ4_0I8AVX2(SB), NOSPLIT, $32-64
	ARGS(-8)
	ROWS(18, LOADQ40, MADD, BIAS8D, BIAS1D, PF8Q4, PF1Q4)

// func gemvQ4_1I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)
TEXT ·gemvQ4_1I8AVX2(SB), NOSPLIT, $32-64
	ARGS(0)
	ROWS(20, LOADQ41, MADD, BIAS8M, BIAS1M, PF8Q4, PF1Q4)

// func gemvQ8_0I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)
TEXT ·gemvQ8_0I8AVX2(SB), NOSPLIT, $32-64
	ARGS(0)
	ROWS(34, LOADQ80S, MADDS, NOBIAS, NOBIAS, PF8Q8, PF1Q8)

// The same on AVX-512 VNNI's VPDPBUSD (on Y registers: AVX512VL), one
// instruction for VPMADDUBSW and VPMADDWD, which does not saturate:
// Q8_0's codes go unsigned, 128 added, and −128d·xsum takes it off.

// func gemvQ4_0I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)
TEXT ·gemvQ4_0I8VNNI(SB), NOSPLIT, $32-64
	ARGS(-8)
	ROWS(18, LOADQ40, VNNI, BIAS8D, BIAS1D, PF8Q4, PF1Q4)

// func gemvQ4_1I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)
TEXT ·gemvQ4_1I8VNNI(SB), NOSPLIT, $32-64
	ARGS(0)
	ROWS(20, LOADQ41, VNNI, BIAS8M, BIAS1M, PF8Q4, PF1Q4)

// func gemvQ8_0I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)
TEXT ·gemvQ8_0I8VNNI(SB), NOSPLIT, $32-64
	ARGS(-128)
	MOVL $0x80808080, R13
	VMOVD R13, X15
	VPBROADCASTD X15, Y15
	ROWS(34, LOADQ80, VNNI, BIAS8D, BIAS1D, PF8Q8, PF1Q8)
