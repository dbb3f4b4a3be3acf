#include "textflag.h"
#include "blocks_amd64.h"

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
// dx, R11 xsum, R12 blocks, R15 the prefetch distance; per row AX the
// block, DX its activations, CX its index. Y0 and Y1 the row's sums, Y2 the bias terms (X11 the last
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
	MOVQ ahead+64(FP), R15 \
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

// ARGSK loads a folding kernel's arguments, which add bs before blocks.
#define ARGSK \
	MOVQ out+0(FP), DI \
	MOVQ w+8(FP), SI \
	MOVQ rows+16(FP), BX \
	MOVQ rowBytes+24(FP), R8 \
	MOVQ xq+32(FP), R9 \
	MOVQ dx+40(FP), R10 \
	MOVQ xsum+48(FP), R11 \
	MOVQ bs+56(FP), R14 \
	MOVQ blocks+64(FP), R12 \
	MOVQ ahead+72(FP), R15 \
	MOVL $0x0f0f0f0f, AX \
	VMOVD AX, X15 \
	VPBROADCASTD X15, Y15

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

// SCALES8R is SCALES8 with d·dx left in Y18.
#define SCALES8R(bb) \
	GATHER8(0, bb, X8) \
	VCVTPH2PS X8, Y8 \
	VMULPS (R10)(CX*4), Y8, Y18

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

// The register form of the AVX-512 Q4 kernels keeps the eight d·dx in
// Y18 instead of the frame and picks block i's with VPERMPS by the index
// in Y20+i (IDX8 sets them) rather than a 32-byte store to the frame
// read back four bytes at a time: on an AMD EPYC (Zen 4) that made the
// k-quant kernels of the time 20 % faster on a 2048×2048 decode product
// (Q4_K 177 -> 142 µs, Q6_K 240 -> 191 µs), before they folded their
// scales (below); on an Intel AMX VM it made Q4_0's 25 % slower (102 ->
// 127 µs). The 256-bit sets have too few registers, and keep the frame.
#define BLOCKR(i, LOAD, DOT, acc, idx) \
	LOAD(i) \
	DOT(i) \
	VCVTDQ2PS Y6, Y6 \
	VPERMPS Y18, idx, Y4 \
	VFMADD231PS Y4, Y6, acc

// IDX8 sets Y20+i to lanes of i, for i < 8.
#define IDX8 \
	MOVL $0, R13 \
	VPBROADCASTD R13, Y20 \
	MOVL $1, R13 \
	VPBROADCASTD R13, Y21 \
	MOVL $2, R13 \
	VPBROADCASTD R13, Y22 \
	MOVL $3, R13 \
	VPBROADCASTD R13, Y23 \
	MOVL $4, R13 \
	VPBROADCASTD R13, Y24 \
	MOVL $5, R13 \
	VPBROADCASTD R13, Y25 \
	MOVL $6, R13 \
	VPBROADCASTD R13, Y26 \
	MOVL $7, R13 \
	VPBROADCASTD R13, Y27

// KBLOCKS are eight blocks (a k-quant super-block's chunks), alternating
// between two sums.
#define KBLOCKS(L0, L1, L2, L3, L4, L5, L6, L7, DOT) \
	BLOCK(0, L0, DOT, Y0) \
	BLOCK(1, L1, DOT, Y1) \
	BLOCK(2, L2, DOT, Y0) \
	BLOCK(3, L3, DOT, Y1) \
	BLOCK(4, L4, DOT, Y0) \
	BLOCK(5, L5, DOT, Y1) \
	BLOCK(6, L6, DOT, Y0) \
	BLOCK(7, L7, DOT, Y1)

// BLOCKS8R are eight blocks on BLOCKR, alternating between two sums.
#define BLOCKS8R(L0, L1, L2, L3, L4, L5, L6, L7, DOT) \
	BLOCKR(0, L0, DOT, Y0, Y20) \
	BLOCKR(1, L1, DOT, Y1, Y21) \
	BLOCKR(2, L2, DOT, Y0, Y22) \
	BLOCKR(3, L3, DOT, Y1, Y23) \
	BLOCKR(4, L4, DOT, Y0, Y24) \
	BLOCKR(5, L5, DOT, Y1, Y25) \
	BLOCKR(6, L6, DOT, Y0, Y26) \
	BLOCKR(7, L7, DOT, Y1, Y27)

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

// PF8Q4 and PF8Q8 prefetch the weights R15 bytes (q8: twice as many, the
// same number of weights) ahead into L2, the distance the backend chose
// at run time (ahead.go; docs/RATIONALE.md, "Prefetch"), a line for each
// 64 bytes of eight blocks; PF1Q4 and PF1Q8 for one block.
#define PF8Q4 \
	PREFETCHT1 (AX)(R15*1) \
	PREFETCHT1 64(AX)(R15*1) \
	PREFETCHT1 128(AX)(R15*1)

#define PF1Q4 \
	PREFETCHT1 (AX)(R15*1)

#define PF8Q8 \
	PREFETCHT1 (AX)(R15*2) \
	PREFETCHT1 64(AX)(R15*2) \
	PREFETCHT1 128(AX)(R15*2) \
	PREFETCHT1 192(AX)(R15*2) \
	PREFETCHT1 256(AX)(R15*2)

#define PF1Q8 \
	PREFETCHT1 (AX)(R15*2)

// ROWS is a kernel's loop over its rows: blocks of bb bytes, LOAD and DOT
// as BLOCK's, BIAS8 and BIAS1 add eight blocks' or one block's m·xsum,
// PF8 and PF1 prefetch; SCALES and BLOCKS are the 256-bit sets' (SCALES8,
// KBLOCKS) or the AVX-512 ones' (SCALES8R, BLOCKS8R).
#define ROWS(bb, LOAD, DOT, BIAS8, BIAS1, PF8, PF1, SCALES, BLOCKS) \
row: \
	ROW \
eight: \
	LEAQ 8(CX), R13 \
	CMPQ R13, R12 \
	JGT one \
	PF8 \
	SCALES(bb) \
	BIAS8 \
	BLOCKS(LOAD, LOAD, LOAD, LOAD, LOAD, LOAD, LOAD, LOAD, DOT) \
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

// func gemvQ4_0I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ4_0I8AVX2(SB), NOSPLIT, $32-72
	ARGS(-8)
	ROWS(18, LOADQ40, MADD, BIAS8D, BIAS1D, PF8Q4, PF1Q4, SCALES8, KBLOCKS)

// func gemvQ4_1I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ4_1I8AVX2(SB), NOSPLIT, $32-72
	ARGS(0)
	ROWS(20, LOADQ41, MADD, BIAS8M, BIAS1M, PF8Q4, PF1Q4, SCALES8, KBLOCKS)

// func gemvQ8_0I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ8_0I8AVX2(SB), NOSPLIT, $32-72
	ARGS(0)
	ROWS(34, LOADQ80S, MADDS, NOBIAS, NOBIAS, PF8Q8, PF1Q8, SCALES8, KBLOCKS)

// The same on AVX-512 VNNI's VPDPBUSD (on Y registers: AVX512VL), one
// instruction for VPMADDUBSW and VPMADDWD, which does not saturate:
// Q8_0's codes go unsigned, 128 added, and −128d·xsum takes it off.

// Q4_0 and Q4_1 have two forms, which give the same bits and differ in
// where a block's d·dx comes from: the frame (VBROADCASTSS, a load), or
// Y18 by VPERMPS (IDX8's index, port 5 on Intel's cores). Which is
// faster depends on the CPU, and a probe chooses (blocks_q4_amd64.go).

// func gemvQ4_0I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ4_0I8VNNI(SB), NOSPLIT, $32-72
	ARGS(-8)
	ROWS(18, LOADQ40, VNNI, BIAS8D, BIAS1D, PF8Q4, PF1Q4, SCALES8, KBLOCKS)

// func gemvQ4_1I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ4_1I8VNNI(SB), NOSPLIT, $32-72
	ARGS(0)
	ROWS(20, LOADQ41, VNNI, BIAS8M, BIAS1M, PF8Q4, PF1Q4, SCALES8, KBLOCKS)

// func gemvQ4_0I8VNNIR(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ4_0I8VNNIR(SB), NOSPLIT, $32-72
	ARGS(-8)
	IDX8
	ROWS(18, LOADQ40, VNNI, BIAS8D, BIAS1D, PF8Q4, PF1Q4, SCALES8R, BLOCKS8R)

// func gemvQ4_1I8VNNIR(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ4_1I8VNNIR(SB), NOSPLIT, $32-72
	ARGS(0)
	IDX8
	ROWS(20, LOADQ41, VNNI, BIAS8M, BIAS1M, PF8Q4, PF1Q4, SCALES8R, BLOCKS8R)

// Q8_0's eight blocks go two to a Z register, the even block in the low
// half and the odd one in the high half: one load pair, VPDPBUSD,
// conversion and FMA for two blocks, where the Y kernels spend them on
// one (Q8_0 has 34 bytes a block to Q4_0's 18). Each lane still adds the
// same products in the same order (the even blocks' into the low half,
// as into Y0 before, the odd ones' into the high half, as into Y1), so
// the sums are the Y kernel's, bit for bit. Decode of the 1B Q8_0 file,
// three alternating runs: 6.08–6.11 -> 6.27–6.31 tok/s on one thread,
// 11.67–11.71 -> 12.06–12.13 on two. q8pairs is VPERMPS's index of each
// pair's two d·dx, eight lanes each.
DATA q8pairs<>+0(SB)/4, $0
DATA q8pairs<>+4(SB)/4, $0
DATA q8pairs<>+8(SB)/4, $0
DATA q8pairs<>+12(SB)/4, $0
DATA q8pairs<>+16(SB)/4, $0
DATA q8pairs<>+20(SB)/4, $0
DATA q8pairs<>+24(SB)/4, $0
DATA q8pairs<>+28(SB)/4, $0
DATA q8pairs<>+32(SB)/4, $1
DATA q8pairs<>+36(SB)/4, $1
DATA q8pairs<>+40(SB)/4, $1
DATA q8pairs<>+44(SB)/4, $1
DATA q8pairs<>+48(SB)/4, $1
DATA q8pairs<>+52(SB)/4, $1
DATA q8pairs<>+56(SB)/4, $1
DATA q8pairs<>+60(SB)/4, $1
DATA q8pairs<>+64(SB)/4, $2
DATA q8pairs<>+68(SB)/4, $2
DATA q8pairs<>+72(SB)/4, $2
DATA q8pairs<>+76(SB)/4, $2
DATA q8pairs<>+80(SB)/4, $2
DATA q8pairs<>+84(SB)/4, $2
DATA q8pairs<>+88(SB)/4, $2
DATA q8pairs<>+92(SB)/4, $2
DATA q8pairs<>+96(SB)/4, $3
DATA q8pairs<>+100(SB)/4, $3
DATA q8pairs<>+104(SB)/4, $3
DATA q8pairs<>+108(SB)/4, $3
DATA q8pairs<>+112(SB)/4, $3
DATA q8pairs<>+116(SB)/4, $3
DATA q8pairs<>+120(SB)/4, $3
DATA q8pairs<>+124(SB)/4, $3
DATA q8pairs<>+128(SB)/4, $4
DATA q8pairs<>+132(SB)/4, $4
DATA q8pairs<>+136(SB)/4, $4
DATA q8pairs<>+140(SB)/4, $4
DATA q8pairs<>+144(SB)/4, $4
DATA q8pairs<>+148(SB)/4, $4
DATA q8pairs<>+152(SB)/4, $4
DATA q8pairs<>+156(SB)/4, $4
DATA q8pairs<>+160(SB)/4, $5
DATA q8pairs<>+164(SB)/4, $5
DATA q8pairs<>+168(SB)/4, $5
DATA q8pairs<>+172(SB)/4, $5
DATA q8pairs<>+176(SB)/4, $5
DATA q8pairs<>+180(SB)/4, $5
DATA q8pairs<>+184(SB)/4, $5
DATA q8pairs<>+188(SB)/4, $5
DATA q8pairs<>+192(SB)/4, $6
DATA q8pairs<>+196(SB)/4, $6
DATA q8pairs<>+200(SB)/4, $6
DATA q8pairs<>+204(SB)/4, $6
DATA q8pairs<>+208(SB)/4, $6
DATA q8pairs<>+212(SB)/4, $6
DATA q8pairs<>+216(SB)/4, $6
DATA q8pairs<>+220(SB)/4, $6
DATA q8pairs<>+224(SB)/4, $7
DATA q8pairs<>+228(SB)/4, $7
DATA q8pairs<>+232(SB)/4, $7
DATA q8pairs<>+236(SB)/4, $7
DATA q8pairs<>+240(SB)/4, $7
DATA q8pairs<>+244(SB)/4, $7
DATA q8pairs<>+248(SB)/4, $7
DATA q8pairs<>+252(SB)/4, $7
GLOBL q8pairs<>(SB), RODATA|NOPTR, $256

// PAIR adds blocks 2p and 2p+1 of eight, their d·dx picked from Y9 by
// the index in idx, to Z0.
#define PAIR(p, idx) \
	VMOVDQU (2+2*p*34)(AX), Y3 \
	VINSERTI64X4 $1, (2+(2*p+1)*34)(AX), Z3, Z3 \
	VPXORD Z15, Z3, Z3 \
	VPXORD Z6, Z6, Z6 \
	VPDPBUSD (64*p)(DX), Z3, Z6 \
	VCVTDQ2PS Z6, Z6 \
	VPERMPS Z9, idx, Z4 \
	VFMADD231PS Z4, Z6, Z0

// func gemvQ8_0I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ8_0I8VNNI(SB), NOSPLIT, $32-72
	ARGS(-128)
	MOVL $0x80808080, R13
	VMOVD R13, X15
	VPBROADCASTD X15, Z15
	VMOVDQU32 q8pairs<>+0(SB), Z16
	VMOVDQU32 q8pairs<>+64(SB), Z17
	VMOVDQU32 q8pairs<>+128(SB), Z18
	VMOVDQU32 q8pairs<>+192(SB), Z19

row:
	ROW

eight:
	LEAQ 8(CX), R13
	CMPQ R13, R12
	JGT  fold
	PF8Q8
	SCALES8(34)
	BIAS8D
	PAIR(0, Z16)
	PAIR(1, Z17)
	PAIR(2, Z18)
	PAIR(3, Z19)
	NEXT(8, 34)
	JMP  eight

fold:
	// The odd blocks' sums to Y1, before the one-block loop's VEX
	// instructions on Y0 clear Z0's high half.
	VEXTRACTF64X4 $1, Z0, Y1

one:
	CMPQ CX, R12
	JGE  end
	PF1Q8
	SCALE1
	BIAS1D
	BLOCK(0, LOADQ80, VNNI, Y0)
	NEXT(1, 34)
	JMP  one

end:
	STORE
	JNZ row
	VZEROUPPER
	RET

// The k-quants: a super-block of 256 weights is eight chunks of the
// input. Q4_K and Q5_K give each chunk a 6-bit scale and min under the
// super-block's d and dmin (w = d·sc·q − dmin·m): the sixteen 6-bit
// fields are unpacked with vector shifts and masks (kshift, kmaska,
// kmaskb), d·sc·dx goes to the frame and dmin·m·xsum off the bias sums.
// Q6_K gives each 16 weights a signed 8-bit scale (w = d·sc·(q−32)):
// its codes go signed, and a chunk's two scales times d·dx meet the
// int32 lanes of its two halves (q6idx picks them from the frame).

// KROWS is a k-quant kernel's loop over its rows, BODY a super-block.
// The k-quants have no single-block bias sums, and Q5_K and Q6_K hold qh
// in Y11: X11 is cleared for STORE.
#define KROWS(BODY) \
row: \
	ROW \
sb: \
	BODY \
	CMPQ CX, R12 \
	JLT sb \
	VXORPS X11, X11, X11 \
	STORE \
	JNZ row \
	VZEROUPPER \
	RET

// KSCALES stores d·sc·dx of the super-block's eight chunks to the frame
// and takes dmin·m·xsum off the bias sums.
#define KSCALES \
	VPBROADCASTW (AX), X9 \
	VCVTPH2PS X9, Y9 \
	VPBROADCASTW 2(AX), X10 \
	VCVTPH2PS X10, Y10 \
	VMOVDQU 4(AX), X4 \
	UNPACKK \
	VPMOVZXBD X5, Y6 \
	VCVTDQ2PS Y6, Y6 \
	VMULPS Y9, Y6, Y6 \
	VMULPS (R10)(CX*4), Y6, Y6 \
	VMOVUPS Y6, sc-32(SP) \
	VPSHUFD $0x0e, X5, X5 \
	VPMOVZXBD X5, Y6 \
	VCVTDQ2PS Y6, Y6 \
	VMULPS Y10, Y6, Y6 \
	VFNMADD231PS (R11)(CX*4), Y6, Y2

// [u0, u2, u1, u2] of the twelve scale bytes as dwords, shifted and
// masked, or'ed with [u0, u0, u1, u1] shifted and masked: the eight
// scales' bytes, then the eight mins' (ggml's get_scale_min_k4). The
// panel kernels (blocks_panel_amd64.s) use them too.
DATA ·kScaleShift+0(SB)/4, $0
DATA ·kScaleShift+4(SB)/4, $0
DATA ·kScaleShift+8(SB)/4, $0
DATA ·kScaleShift+12(SB)/4, $4
GLOBL ·kScaleShift(SB), RODATA|NOPTR, $16
DATA ·kScaleMaskA+0(SB)/4, $0x3f3f3f3f
DATA ·kScaleMaskA+4(SB)/4, $0x0f0f0f0f
DATA ·kScaleMaskA+8(SB)/4, $0x3f3f3f3f
DATA ·kScaleMaskA+12(SB)/4, $0x0f0f0f0f
GLOBL ·kScaleMaskA(SB), RODATA|NOPTR, $16
DATA ·kScaleMaskB+0(SB)/4, $0
DATA ·kScaleMaskB+4(SB)/4, $0x30303030
DATA ·kScaleMaskB+8(SB)/4, $0
DATA ·kScaleMaskB+12(SB)/4, $0x30303030
GLOBL ·kScaleMaskB(SB), RODATA|NOPTR, $16

// Q4_K's chunks: the 32 bytes of a pair of chunks, low nibbles the even
// chunk's (kept in Y7 for the odd one), high ones the odd's.
#define LQ4KE(i) \
	VMOVDQU (16+16*i)(AX), Y7 \
	VPAND Y15, Y7, Y3

#define LQ4KO(i) \
	VPSRLW $4, Y7, Y3 \
	VPAND Y15, Y3, Y3

// Q5_K's: Q4_K's at 48, and bit i of qh (Y11) as bit 4 of chunk i's
// codes, Y12 holding bytes of 0x10.
#define HIBIT \
	VPAND Y12, Y5, Y5 \
	VPOR Y5, Y3, Y3

#define LQ5K0(i) \
	VMOVDQU 48(AX), Y7 \
	VPAND Y15, Y7, Y3 \
	VPSLLW $4, Y11, Y5 \
	HIBIT

#define LQ5K1(i) \
	LQ4KO(i) \
	VPSLLW $3, Y11, Y5 \
	HIBIT

#define LQ5K2(i) \
	VMOVDQU 80(AX), Y7 \
	VPAND Y15, Y7, Y3 \
	VPSLLW $2, Y11, Y5 \
	HIBIT

#define LQ5K3(i) \
	LQ4KO(i) \
	VPSLLW $1, Y11, Y5 \
	HIBIT

#define LQ5K4(i) \
	VMOVDQU 112(AX), Y7 \
	VPAND Y15, Y7, Y3 \
	VMOVDQU Y11, Y5 \
	HIBIT

#define LQ5K5(i) \
	LQ4KO(i) \
	VPSRLW $1, Y11, Y5 \
	HIBIT

#define LQ5K6(i) \
	VMOVDQU 144(AX), Y7 \
	VPAND Y15, Y7, Y3 \
	VPSRLW $2, Y11, Y5 \
	HIBIT

#define LQ5K7(i) \
	LQ4KO(i) \
	VPSRLW $3, Y11, Y5 \
	HIBIT

#define Q4K(DOT, SCALES, BLOCKS) \
	PREFETCHT1 (AX)(R15*1) \
	PREFETCHT1 64(AX)(R15*1) \
	PREFETCHT1 128(AX)(R15*1) \
	SCALES \
	BLOCKS(LQ4KE, LQ4KO, LQ4KE, LQ4KO, LQ4KE, LQ4KO, LQ4KE, LQ4KO, DOT) \
	NEXT(8, 18)

#define Q5K(DOT, SCALES, BLOCKS) \
	PREFETCHT1 (AX)(R15*1) \
	PREFETCHT1 64(AX)(R15*1) \
	PREFETCHT1 128(AX)(R15*1) \
	SCALES \
	VMOVDQU 16(AX), Y11 \
	BLOCKS(LQ5K0, LQ5K1, LQ5K2, LQ5K3, LQ5K4, LQ5K5, LQ5K6, LQ5K7, DOT) \
	NEXT(8, 22)

// Q6_K's chunk i = 4h+k: ql's 32 bytes at 64h (k = 0, 2; kept in Y7) or
// 64h+32 (k = 1, 3; kept in Y10), low nibbles for k < 2, and bits 2k, 2k+1
// of qh's 32 bytes at 128+32h (Y11) as bits 4 and 5; Y13 holds bytes of
// 0x30.
#define Q6HI \
	VPAND Y13, Y5, Y5 \
	VPOR Y5, Y3, Y3

#define LQ6K0(h) \
	VMOVDQU (64*h)(AX), Y7 \
	VMOVDQU (128+32*h)(AX), Y11 \
	VPAND Y15, Y7, Y3 \
	VPSLLW $4, Y11, Y5 \
	Q6HI

#define LQ6K1(h) \
	VMOVDQU (64*h+32)(AX), Y10 \
	VPAND Y15, Y10, Y3 \
	VPSLLW $2, Y11, Y5 \
	Q6HI

#define LQ6K2(h) \
	VPSRLW $4, Y7, Y3 \
	VPAND Y15, Y3, Y3 \
	VPAND Y13, Y11, Y5 \
	VPOR Y5, Y3, Y3

#define LQ6K3(h) \
	VPSRLW $4, Y10, Y3 \
	VPAND Y15, Y3, Y3 \
	VPSRLW $2, Y11, Y5 \
	Q6HI

// SIGNED6 and SIGNED6V multiply Q6_K's codes less 32 (Y12 holds bytes of
// 32) with the activations, as MADDS does, on madd or on VPDPBUSD.
#define SIGNED6(i) \
	VPSUBB Y12, Y3, Y3 \
	VMOVDQU (32*i)(DX), Y5 \
	VPSIGNB Y3, Y3, Y4 \
	VPSIGNB Y3, Y5, Y5 \
	VPMADDUBSW Y5, Y4, Y6 \
	VPMADDWD Y14, Y6, Y6

#define SIGNED6V(i) \
	VPSUBB Y12, Y3, Y3 \
	VMOVDQU (32*i)(DX), Y5 \
	VPSIGNB Y3, Y3, Y4 \
	VPSIGNB Y3, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPDPBUSD Y5, Y4, Y6

// Q6BLOCK adds chunk i = 4h+k, times its two halves' d·sc·dx, to acc.
#define Q6BLOCK(i, h, k, LOAD, DOT, acc) \
	LOAD(h) \
	DOT(i) \
	VCVTDQ2PS Y6, Y6 \
	VMOVDQU q6idx<>+(32*k)(SB), Y8 \
	VPERMPS s16-(64-32*h)(SP), Y8, Y4 \
	VFMADD231PS Y4, Y6, acc

// Q6SCALES stores the super-block's sixteen d·sc·dx to the frame, each
// chunk's dx twice (q6dup picks them).
#define Q6SCALES \
	VPBROADCASTW 208(AX), X9 \
	VCVTPH2PS X9, Y9 \
	VPMOVSXBD 192(AX), Y6 \
	VCVTDQ2PS Y6, Y6 \
	VMULPS Y9, Y6, Y6 \
	VMOVDQU q6dup<>(SB), Y8 \
	VPERMPS (R10)(CX*4), Y8, Y5 \
	VMULPS Y5, Y6, Y6 \
	VMOVUPS Y6, s16-64(SP) \
	VPMOVSXBD 200(AX), Y6 \
	VCVTDQ2PS Y6, Y6 \
	VMULPS Y9, Y6, Y6 \
	VMOVDQU q6dup<>+32(SB), Y8 \
	VPERMPS (R10)(CX*4), Y8, Y5 \
	VMULPS Y5, Y6, Y6 \
	VMOVUPS Y6, s16-32(SP)

DATA q6dup<>+0(SB)/4, $0
DATA q6dup<>+4(SB)/4, $0
DATA q6dup<>+8(SB)/4, $1
DATA q6dup<>+12(SB)/4, $1
DATA q6dup<>+16(SB)/4, $2
DATA q6dup<>+20(SB)/4, $2
DATA q6dup<>+24(SB)/4, $3
DATA q6dup<>+28(SB)/4, $3
DATA q6dup<>+32(SB)/4, $4
DATA q6dup<>+36(SB)/4, $4
DATA q6dup<>+40(SB)/4, $5
DATA q6dup<>+44(SB)/4, $5
DATA q6dup<>+48(SB)/4, $6
DATA q6dup<>+52(SB)/4, $6
DATA q6dup<>+56(SB)/4, $7
DATA q6dup<>+60(SB)/4, $7
GLOBL q6dup<>(SB), RODATA|NOPTR, $64

// q6idx[k]: scales 2k (four lanes) and 2k+1 (four lanes).
DATA q6idx<>+0(SB)/4, $0
DATA q6idx<>+4(SB)/4, $0
DATA q6idx<>+8(SB)/4, $0
DATA q6idx<>+12(SB)/4, $0
DATA q6idx<>+16(SB)/4, $1
DATA q6idx<>+20(SB)/4, $1
DATA q6idx<>+24(SB)/4, $1
DATA q6idx<>+28(SB)/4, $1
DATA q6idx<>+32(SB)/4, $2
DATA q6idx<>+36(SB)/4, $2
DATA q6idx<>+40(SB)/4, $2
DATA q6idx<>+44(SB)/4, $2
DATA q6idx<>+48(SB)/4, $3
DATA q6idx<>+52(SB)/4, $3
DATA q6idx<>+56(SB)/4, $3
DATA q6idx<>+60(SB)/4, $3
DATA q6idx<>+64(SB)/4, $4
DATA q6idx<>+68(SB)/4, $4
DATA q6idx<>+72(SB)/4, $4
DATA q6idx<>+76(SB)/4, $4
DATA q6idx<>+80(SB)/4, $5
DATA q6idx<>+84(SB)/4, $5
DATA q6idx<>+88(SB)/4, $5
DATA q6idx<>+92(SB)/4, $5
DATA q6idx<>+96(SB)/4, $6
DATA q6idx<>+100(SB)/4, $6
DATA q6idx<>+104(SB)/4, $6
DATA q6idx<>+108(SB)/4, $6
DATA q6idx<>+112(SB)/4, $7
DATA q6idx<>+116(SB)/4, $7
DATA q6idx<>+120(SB)/4, $7
DATA q6idx<>+124(SB)/4, $7
GLOBL q6idx<>(SB), RODATA|NOPTR, $128

#define Q6K(DOT) \
	PREFETCHT1 (AX)(R15*1) \
	PREFETCHT1 64(AX)(R15*1) \
	PREFETCHT1 128(AX)(R15*1) \
	PREFETCHT1 192(AX)(R15*1) \
	Q6SCALES \
	Q6BLOCK(0, 0, 0, LQ6K0, DOT, Y0) \
	Q6BLOCK(1, 0, 1, LQ6K1, DOT, Y1) \
	Q6BLOCK(2, 0, 2, LQ6K2, DOT, Y0) \
	Q6BLOCK(3, 0, 3, LQ6K3, DOT, Y1) \
	Q6BLOCK(4, 1, 0, LQ6K0, DOT, Y0) \
	Q6BLOCK(5, 1, 1, LQ6K1, DOT, Y1) \
	Q6BLOCK(6, 1, 2, LQ6K2, DOT, Y0) \
	Q6BLOCK(7, 1, 3, LQ6K3, DOT, Y1) \
	ADDQ $210, AX \
	ADDQ $256, DX \
	ADDQ $8, CX

// BYTES sets Y register y to bytes of b.
#define BYTES(b, y) \
	MOVL $b, R13 \
	VMOVD R13, X8 \
	VPBROADCASTD X8, y

// func gemvQ4_KI8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ4_KI8AVX2(SB), NOSPLIT, $64-72
	ARGS(0)
	KROWS(Q4K(MADD, KSCALES, KBLOCKS))

// func gemvQ5_KI8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ5_KI8AVX2(SB), NOSPLIT, $64-72
	ARGS(0)
	BYTES(0x10101010, Y12)
	KROWS(Q5K(MADD, KSCALES, KBLOCKS))

// func gemvQ6_KI8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)
TEXT ·gemvQ6_KI8AVX2(SB), NOSPLIT, $64-72
	ARGS(0)
	BYTES(0x20202020, Y12)
	BYTES(0x30303030, Y13)
	KROWS(Q6K(SIGNED6))

// DQ6 dequantises chunk i = 4h+k of a Q6_K super-block (AX) to dst (DI):
// its codes less 32, in the frame, widened eight at a time, times their
// half's d·sc (the frame's s16).
#define DQ6(i, h, LOAD) \
	LOAD(h) \
	VPSUBB Y12, Y3, Y3 \
	VMOVDQU Y3, q-32(SP) \
	VBROADCASTSS s16-(96-8*i)(SP), Y8 \
	VBROADCASTSS s16-(92-8*i)(SP), Y14 \
	VPMOVSXBD q-32(SP), Y4 \
	VCVTDQ2PS Y4, Y4 \
	VMULPS Y8, Y4, Y4 \
	VMOVUPS Y4, (128*i)(DI) \
	VPMOVSXBD q-24(SP), Y4 \
	VCVTDQ2PS Y4, Y4 \
	VMULPS Y8, Y4, Y4 \
	VMOVUPS Y4, (128*i+32)(DI) \
	VPMOVSXBD q-16(SP), Y4 \
	VCVTDQ2PS Y4, Y4 \
	VMULPS Y14, Y4, Y4 \
	VMOVUPS Y4, (128*i+64)(DI) \
	VPMOVSXBD q-8(SP), Y4 \
	VCVTDQ2PS Y4, Y4 \
	VMULPS Y14, Y4, Y4 \
	VMOVUPS Y4, (128*i+96)(DI)

// func dequantQ6_KAVX2(dst *float32, src *byte, n int)
//
// Q6_K's n super-blocks at src to floats, as gguf.Dequantize: w =
// (d·sc)·(q−32). The float path's panels and rows (blockMatrix).
TEXT ·dequantQ6_KAVX2(SB), NOSPLIT, $96-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), AX
	MOVQ n+16(FP), BX
	BYTES(0x0f0f0f0f, Y15)
	BYTES(0x20202020, Y12)
	BYTES(0x30303030, Y13)
dq6:
	VPBROADCASTW 208(AX), X9
	VCVTPH2PS X9, Y9
	VPMOVSXBD 192(AX), Y6
	VCVTDQ2PS Y6, Y6
	VMULPS Y9, Y6, Y6
	VMOVUPS Y6, s16-96(SP)
	VPMOVSXBD 200(AX), Y6
	VCVTDQ2PS Y6, Y6
	VMULPS Y9, Y6, Y6
	VMOVUPS Y6, s16-64(SP)
	DQ6(0, 0, LQ6K0)
	DQ6(1, 0, LQ6K1)
	DQ6(2, 0, LQ6K2)
	DQ6(3, 0, LQ6K3)
	DQ6(4, 1, LQ6K0)
	DQ6(5, 1, LQ6K1)
	DQ6(6, 1, LQ6K2)
	DQ6(7, 1, LQ6K3)
	ADDQ $210, AX
	ADDQ $1024, DI
	DECQ BX
	JNZ dq6
	VZEROUPPER
	RET

// The AVX-512 VNNI k-quant kernels fold each chunk's scale into the
// integer sums (blocks_i8.go): a chunk's codes times its activations in
// int16 pairs (VPMADDUBSW; at most 2·63·127), then times the chunk's
// scale in every int16 lane (VPERMW of the scales by the index in
// Y20+i) added to one of two int32 sums (VPDPWSSD), which meet d·dx
// (Y16) once a super-block. bs (R14) holds the activations' sums of each
// 16. On an AMD EPYC (Zen 4) a 2048×2048 product, x's quantisation
// included, went from a step per chunk to this: Q4_K 156 -> 114 µs,
// Q5_K 191 -> 170, Q6_K 237 -> 141 (BenchmarkBlockGemv, medians of five
// alternating runs).

// IDXK sets Y20+j to int16 lanes of j (VPERMW's index of chunk j's
// scale), for j < 8.
#define IDXK \
	MOVL $0, R13 \
	VPBROADCASTD R13, Y20 \
	MOVL $0x10001, R13 \
	VPBROADCASTD R13, Y21 \
	MOVL $0x20002, R13 \
	VPBROADCASTD R13, Y22 \
	MOVL $0x30003, R13 \
	VPBROADCASTD R13, Y23 \
	MOVL $0x40004, R13 \
	VPBROADCASTD R13, Y24 \
	MOVL $0x50005, R13 \
	VPBROADCASTD R13, Y25 \
	MOVL $0x60006, R13 \
	VPBROADCASTD R13, Y26 \
	MOVL $0x70007, R13 \
	VPBROADCASTD R13, Y27

// IDX6 sets Y20+i to Q6_K's chunk i's two scales, 2i in the eight
// int16 lanes of the low half and 2i+1 in the high half, for i < 8.
#define IDX6 \
	VPXOR Y9, Y9, Y9 \
	MOVL $0x10001, R13 \
	VPBROADCASTD R13, X8 \
	VINSERTI128 $1, X8, Y9, Y9 \
	IDX6I(0, Y20) \
	IDX6I(1, Y21) \
	IDX6I(2, Y22) \
	IDX6I(3, Y23) \
	IDX6I(4, Y24) \
	IDX6I(5, Y25) \
	IDX6I(6, Y26) \
	IDX6I(7, Y27)

#define IDX6I(i, y) \
	MOVL $(2*i*0x10001), R13 \
	VPBROADCASTD R13, y \
	VPADDD Y9, y, y

// FOLD adds chunk i (its codes put in Y3 by LOAD(l)) times its
// activations, times its scale (VPERMW of Y17 by idx), to acc.
#define FOLD(i, l, LOAD, acc, idx) \
	LOAD(l) \
	VPMADDUBSW (32*i)(DX), Y3, Y6 \
	VPERMW Y17, idx, Y4 \
	VPDPWSSD Y4, Y6, acc

// FOLDED adds the super-block's two sums times d·dx to the row's sum.
#define FOLDED \
	VPADDD Y29, Y28, Y28 \
	VCVTDQ2PS Y28, Y28 \
	VFMADD231PS Y16, Y28, Y0

// KSCALESK sets Y17's int16 lanes to the eight chunks' scales, Y16 to
// d·dx, and takes dmin·m·xsum off the bias sums.
#define KSCALESK \
	VPBROADCASTW (AX), X9 \
	VCVTPH2PS X9, Y9 \
	VMULPS.BCST (R10)(CX*4), Y9, Y16 \
	VPBROADCASTW 2(AX), X10 \
	VCVTPH2PS X10, Y10 \
	VMOVDQU 4(AX), X4 \
	UNPACKK \
	VPMOVZXBW X5, Y17 \
	VPSHUFD $0x0e, X5, X5 \
	VPMOVZXBD X5, Y6 \
	VCVTDQ2PS Y6, Y6 \
	VMULPS Y10, Y6, Y6 \
	VFNMADD231PS (R11)(CX*4), Y6, Y2 \
	VPXORD Y28, Y28, Y28 \
	VPXORD Y29, Y29, Y29

#define Q4KFOLD \
	PREFETCHT1 (AX)(R15*1) \
	PREFETCHT1 64(AX)(R15*1) \
	PREFETCHT1 128(AX)(R15*1) \
	KSCALESK \
	FOLD(0, 0, LQ4KE, Y28, Y20) \
	FOLD(1, 1, LQ4KO, Y29, Y21) \
	FOLD(2, 2, LQ4KE, Y28, Y22) \
	FOLD(3, 3, LQ4KO, Y29, Y23) \
	FOLD(4, 4, LQ4KE, Y28, Y24) \
	FOLD(5, 5, LQ4KO, Y29, Y25) \
	FOLD(6, 6, LQ4KE, Y28, Y26) \
	FOLD(7, 7, LQ4KO, Y29, Y27) \
	FOLDED \
	NEXT(8, 18)

#define Q5KFOLD \
	PREFETCHT1 (AX)(R15*1) \
	PREFETCHT1 64(AX)(R15*1) \
	PREFETCHT1 128(AX)(R15*1) \
	KSCALESK \
	VMOVDQU 16(AX), Y11 \
	FOLD(0, 0, LQ5K0, Y28, Y20) \
	FOLD(1, 1, LQ5K1, Y29, Y21) \
	FOLD(2, 2, LQ5K2, Y28, Y22) \
	FOLD(3, 3, LQ5K3, Y29, Y23) \
	FOLD(4, 4, LQ5K4, Y28, Y24) \
	FOLD(5, 5, LQ5K5, Y29, Y25) \
	FOLD(6, 6, LQ5K6, Y28, Y26) \
	FOLD(7, 7, LQ5K7, Y29, Y27) \
	FOLDED \
	NEXT(8, 22)

// Q6KFOLD: Y17 holds the sixteen scales as int16, Y30 32·Σ sc·bs of
// the super-block, taken off at the end.
#define Q6KFOLD \
	PREFETCHT1 (AX)(R15*1) \
	PREFETCHT1 64(AX)(R15*1) \
	PREFETCHT1 128(AX)(R15*1) \
	PREFETCHT1 192(AX)(R15*1) \
	VPMOVSXBW 192(AX), Y17 \
	VPBROADCASTW 208(AX), X9 \
	VCVTPH2PS X9, Y9 \
	VMULPS.BCST (R10)(CX*4), Y9, Y16 \
	VPMADDWD (R14)(CX*4), Y17, Y30 \
	VPSLLD $5, Y30, Y30 \
	VPXORD Y28, Y28, Y28 \
	VPXORD Y29, Y29, Y29 \
	FOLD(0, 0, LQ6K0, Y28, Y20) \
	FOLD(1, 0, LQ6K1, Y29, Y21) \
	FOLD(2, 0, LQ6K2, Y28, Y22) \
	FOLD(3, 0, LQ6K3, Y29, Y23) \
	FOLD(4, 1, LQ6K0, Y28, Y24) \
	FOLD(5, 1, LQ6K1, Y29, Y25) \
	FOLD(6, 1, LQ6K2, Y28, Y26) \
	FOLD(7, 1, LQ6K3, Y29, Y27) \
	VPSUBD Y30, Y28, Y28 \
	FOLDED \
	ADDQ $210, AX \
	ADDQ $256, DX \
	ADDQ $8, CX

// func gemvQ4_KI8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, bs *int16, blocks, ahead int)
TEXT ·gemvQ4_KI8VNNI(SB), NOSPLIT, $0-80
	ARGSK
	IDXK
	KROWS(Q4KFOLD)

// func gemvQ5_KI8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, bs *int16, blocks, ahead int)
TEXT ·gemvQ5_KI8VNNI(SB), NOSPLIT, $0-80
	ARGSK
	BYTES(0x10101010, Y12)
	IDXK
	KROWS(Q5KFOLD)

// func gemvQ6_KI8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, bs *int16, blocks, ahead int)
TEXT ·gemvQ6_KI8VNNI(SB), NOSPLIT, $0-80
	ARGSK
	BYTES(0x30303030, Y13)
	IDX6
	KROWS(Q6KFOLD)
