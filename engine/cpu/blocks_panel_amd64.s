#include "textflag.h"
#include "blocks_amd64.h"

// The panel kernels lay out sixteen rows of blocks for gemmI8, as fillI8
// (blocks_i8.go), a chunk (one block of each row) at a time: four rows'
// codes are loaded, their dwords transposed (four codes of one row to a
// dword, a row's dword j then the next row's), so that each store writes
// four rows of one column group; the rows' d (and m) are gathered,
// widened and stored with the bias.
//
// Registers: DI the panel's codes, R8 its scales, R9 its biases, SI the
// first row, R14 the row's bytes, AX three times that, R10 the chunk's
// offset in a row, R11 a block's bytes, BX chunks left, DX the chunk's
// block in the first row, R13 a row's block. Y15 bytes of 0x0f (Q8_0:
// 0x80), Y12 the bias factor (−8 or −128).

// PARGS loads the panel arguments; blocks of bb bytes, bias factor f.
#define PARGS(bb, f) \
	MOVQ wp+0(FP), DI \
	MOVQ sp+8(FP), R8 \
	MOVQ bp+16(FP), R9 \
	MOVQ w+24(FP), SI \
	MOVQ rowBytes+32(FP), R14 \
	LEAQ (R14)(R14*2), AX \
	MOVQ chunks+40(FP), BX \
	MOVQ $bb, R11 \
	XORQ R10, R10 \
	MOVL $f, R13 \
	VMOVD R13, X12 \
	VCVTDQ2PS X12, X12 \
	VBROADCASTSS X12, Y12

// T4 transposes the dwords of four registers in place (within each
// 128-bit lane), with four temporaries.
#define T4(A, B, C, D, T0, T1, T2, T3) \
	VPUNPCKLDQ B, A, T0 \
	VPUNPCKHDQ B, A, T1 \
	VPUNPCKLDQ D, C, T2 \
	VPUNPCKHDQ D, C, T3 \
	VPUNPCKLQDQ T2, T0, A \
	VPUNPCKHQDQ T2, T0, B \
	VPUNPCKLQDQ T3, T1, C \
	VPUNPCKHQDQ T3, T1, D

// T16 is ROW for each of sixteen rows.
#define T16(ROW) \
	ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5) ROW(6) ROW(7) \
	ROW(8) ROW(9) ROW(10) ROW(11) ROW(12) ROW(13) ROW(14) ROW(15)

// NIB stores X register x's low nibbles (column group j of four rows,
// row group g) and its high ones (group j+4).
#define NIB(x, j, g) \
	VPSRLD $4, x, X4 \
	VPAND X15, x, x \
	VPAND X15, X4, X4 \
	VMOVDQU x, (64*j+16*g)(DI) \
	VMOVDQU X4, (64*j+256+16*g)(DI)

// Q4ROWS lays out the 16 code bytes at off(R13) of four rows, row group g.
#define Q4ROWS(off, g) \
	VMOVDQU off(R13), X0 \
	VMOVDQU off(R13)(R14*1), X1 \
	VMOVDQU off(R13)(R14*2), X2 \
	VMOVDQU off(R13)(AX*1), X3 \
	T4(X0, X1, X2, X3, X4, X5, X6, X7) \
	NIB(X0, 0, g) \
	NIB(X1, 1, g) \
	NIB(X2, 2, g) \
	NIB(X3, 3, g) \
	LEAQ (R13)(R14*4), R13

// Q8ROWS lays out the 32 code bytes at 2(R13) of four rows, row group g:
// after the transpose, lane 0 of Y0-Y3 holds column groups 0-3, lane 1
// groups 4-7.
#define Q8ROWS(g) \
	VMOVDQU 2(R13), Y0 \
	VMOVDQU 2(R13)(R14*1), Y1 \
	VMOVDQU 2(R13)(R14*2), Y2 \
	VMOVDQU 2(R13)(AX*1), Y3 \
	T4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7) \
	VPXOR Y15, Y0, Y0 \
	VPXOR Y15, Y1, Y1 \
	VPXOR Y15, Y2, Y2 \
	VPXOR Y15, Y3, Y3 \
	VMOVDQU X0, (16*g)(DI) \
	VMOVDQU X1, (64+16*g)(DI) \
	VMOVDQU X2, (128+16*g)(DI) \
	VMOVDQU X3, (192+16*g)(DI) \
	VEXTRACTI128 $1, Y0, (256+16*g)(DI) \
	VEXTRACTI128 $1, Y1, (320+16*g)(DI) \
	VEXTRACTI128 $1, Y2, (384+16*g)(DI) \
	VEXTRACTI128 $1, Y3, (448+16*g)(DI) \
	LEAQ (R13)(R14*4), R13

// HALVES8 gathers the halves at off(R13) of eight rows into X register x
// and steps R13 past them.
#define HALVES8(off, x) \
	VPINSRW $0, off(R13), x, x \
	VPINSRW $1, off(R13)(R14*1), x, x \
	VPINSRW $2, off(R13)(R14*2), x, x \
	VPINSRW $3, off(R13)(AX*1), x, x \
	LEAQ (R13)(R14*4), R13 \
	VPINSRW $4, off(R13), x, x \
	VPINSRW $5, off(R13)(R14*1), x, x \
	VPINSRW $6, off(R13)(R14*2), x, x \
	VPINSRW $7, off(R13)(AX*1), x, x \
	LEAQ (R13)(R14*4), R13

// SCALES stores the sixteen rows' d, widened, and d times the bias factor
// (Y12) as their biases, unless m (Q4_1) gives them.
#define SCALES \
	MOVQ DX, R13 \
	HALVES8(0, X8) \
	HALVES8(0, X9) \
	VCVTPH2PS X8, Y8 \
	VCVTPH2PS X9, Y9 \
	VMOVUPS Y8, (R8) \
	VMOVUPS Y9, 32(R8) \
	VMULPS Y12, Y8, Y8 \
	VMULPS Y12, Y9, Y9 \
	VMOVUPS Y8, (R9) \
	VMOVUPS Y9, 32(R9)

// MINS41 stores the sixteen rows' m (Q4_1), widened, as their biases.
#define MINS41 \
	MOVQ DX, R13 \
	HALVES8(2, X8) \
	HALVES8(2, X9) \
	VCVTPH2PS X8, Y8 \
	VCVTPH2PS X9, Y9 \
	VMOVUPS Y8, (R9) \
	VMOVUPS Y9, 32(R9)

// NEXT steps to the next chunk.
#define NEXT \
	ADDQ $512, DI \
	ADDQ $64, R8 \
	ADDQ $64, R9 \
	ADDQ R11, R10 \
	DECQ BX

// func panelQ4_0AVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ4_0AVX2(SB), NOSPLIT, $0-48
	PARGS(18, -8)
	MOVL $0x0f0f0f0f, R13
	VMOVD R13, X15
	VPBROADCASTD X15, Y15
q40chunk:
	LEAQ (SI)(R10*1), DX
	MOVQ DX, R13
	Q4ROWS(2, 0)
	Q4ROWS(2, 1)
	Q4ROWS(2, 2)
	Q4ROWS(2, 3)
	SCALES
	NEXT
	JNZ q40chunk
	VZEROUPPER
	RET

// func panelQ4_1AVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ4_1AVX2(SB), NOSPLIT, $0-48
	PARGS(20, 0)
	MOVL $0x0f0f0f0f, R13
	VMOVD R13, X15
	VPBROADCASTD X15, Y15
q41chunk:
	LEAQ (SI)(R10*1), DX
	MOVQ DX, R13
	Q4ROWS(4, 0)
	Q4ROWS(4, 1)
	Q4ROWS(4, 2)
	Q4ROWS(4, 3)
	SCALES
	MINS41
	NEXT
	JNZ q41chunk
	VZEROUPPER
	RET

// func panelQ8_0AVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ8_0AVX2(SB), NOSPLIT, $0-48
	PARGS(34, -128)
	MOVL $0x80808080, R13
	VMOVD R13, X15
	VPBROADCASTD X15, Y15
q80chunk:
	LEAQ (SI)(R10*1), DX
	MOVQ DX, R13
	Q8ROWS(0)
	Q8ROWS(1)
	Q8ROWS(2)
	Q8ROWS(3)
	SCALES
	NEXT
	JNZ q80chunk
	VZEROUPPER
	RET

// The k-quants' panels, Q4_K and Q5_K: a super-block of sixteen rows at a
// time. Each pair of chunks (32 code bytes of a row) goes four rows at a
// time through T4; each dword column's low nibbles go to the even chunk,
// its high nibbles to the odd one (lane 0 word j, lane 1 word j+4), with
// Q5_K's fifth bits or'ed in from qh, transposed alike into Y8-Y11. Then
// each row's scales and mins are unpacked (UNPACKK) and their d·sc and
// −dmin·m scattered to the panel's chunks. Y15 holds bytes of 0x0f, Y12
// of 0x10.

// KSTORE stores dword column j of four rows (y; h their qh), row group
// g, of chunk pair p: low nibbles to chunk 2p, high to chunk 2p+1, each
// with HLO's or HHI's bits.
#define KSTORE(y, h, j, p, g, HLO, HHI) \
	VPAND Y15, y, Y4 \
	HLO(h) \
	VMOVDQU X4, (1024*p+64*j+16*g)(DI) \
	VEXTRACTI128 $1, Y4, (1024*p+64*j+256+16*g)(DI) \
	VPSRLW $4, y, Y4 \
	VPAND Y15, Y4, Y4 \
	HHI(h) \
	VMOVDQU X4, (1024*p+512+64*j+16*g)(DI) \
	VEXTRACTI128 $1, Y4, (1024*p+512+64*j+256+16*g)(DI)

// KCODES lays out chunk pair p of four rows (R13 the first), row group
// g, from their code bytes at qs.
#define KCODES(qs, p, g, HLO, HHI) \
	VMOVDQU (qs+32*p)(R13), Y0 \
	VMOVDQU (qs+32*p)(R13)(R14*1), Y1 \
	VMOVDQU (qs+32*p)(R13)(R14*2), Y2 \
	VMOVDQU (qs+32*p)(R13)(AX*1), Y3 \
	T4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7) \
	KSTORE(Y0, Y8, 0, p, g, HLO, HHI) \
	KSTORE(Y1, Y9, 1, p, g, HLO, HHI) \
	KSTORE(Y2, Y10, 2, p, g, HLO, HHI) \
	KSTORE(Y3, Y11, 3, p, g, HLO, HHI)

// NOH adds no bits (Q4_K); H0-H7 add bit c of qh as bit 4 (Q5_K).
#define NOH(h)

#define HBIT \
	VPAND Y12, Y5, Y5 \
	VPOR Y5, Y4, Y4

#define H0(h) \
	VPSLLW $4, h, Y5 \
	HBIT

#define H1(h) \
	VPSLLW $3, h, Y5 \
	HBIT

#define H2(h) \
	VPSLLW $2, h, Y5 \
	HBIT

#define H3(h) \
	VPSLLW $1, h, Y5 \
	HBIT

#define H4(h) \
	VPAND Y12, h, Y5 \
	VPOR Y5, Y4, Y4

#define H5(h) \
	VPSRLW $1, h, Y5 \
	HBIT

#define H6(h) \
	VPSRLW $2, h, Y5 \
	HBIT

#define H7(h) \
	VPSRLW $3, h, Y5 \
	HBIT

// Q4KGROUP and Q5KGROUP lay out row group g's four chunk pairs and step
// R13 to the next group.
#define Q4KGROUP(g) \
	KCODES(16, 0, g, NOH, NOH) \
	KCODES(16, 1, g, NOH, NOH) \
	KCODES(16, 2, g, NOH, NOH) \
	KCODES(16, 3, g, NOH, NOH) \
	LEAQ (R13)(R14*4), R13

#define Q5KGROUP(g) \
	VMOVDQU 16(R13), Y8 \
	VMOVDQU 16(R13)(R14*1), Y9 \
	VMOVDQU 16(R13)(R14*2), Y10 \
	VMOVDQU 16(R13)(AX*1), Y11 \
	T4(Y8, Y9, Y10, Y11, Y4, Y5, Y6, Y7) \
	KCODES(48, 0, g, H0, H1) \
	KCODES(48, 1, g, H2, H3) \
	KCODES(48, 2, g, H4, H5) \
	KCODES(48, 3, g, H6, H7) \
	LEAQ (R13)(R14*4), R13

// SCATTER8 stores the eight floats of y (x its low half) to chunks 0-7
// of row r at base.
#define SCATTER8(y, x, base, r) \
	VMOVSS x, (4*r)(base) \
	VEXTRACTPS $1, x, (64+4*r)(base) \
	VEXTRACTPS $2, x, (128+4*r)(base) \
	VEXTRACTPS $3, x, (192+4*r)(base) \
	VEXTRACTF128 $1, y, X8 \
	VMOVSS X8, (256+4*r)(base) \
	VEXTRACTPS $1, X8, (320+4*r)(base) \
	VEXTRACTPS $2, X8, (384+4*r)(base) \
	VEXTRACTPS $3, X8, (448+4*r)(base)

// KROWZ sets Y6 and Y7 to the d·sc and −dmin·m of the super-block at
// R13 and steps R13 to the next row.
#define KROWZ \
	VPBROADCASTW (R13), X9 \
	VCVTPH2PS X9, Y9 \
	VPBROADCASTW 2(R13), X10 \
	VCVTPH2PS X10, Y10 \
	VMOVDQU 4(R13), X4 \
	UNPACKK \
	VPMOVZXBD X5, Y6 \
	VCVTDQ2PS Y6, Y6 \
	VMULPS Y9, Y6, Y6 \
	VPSHUFD $0x0e, X5, X5 \
	VPMOVZXBD X5, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VMULPS Y10, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
	VSUBPS Y7, Y8, Y7 \
	ADDQ R14, R13

// KSC stores row r's d·sc and −dmin·m (R13 its super-block) and steps
// R13 to the next row.
#define KSC(r) \
	KROWZ \
	SCATTER8(Y6, X6, R8, r) \
	SCATTER8(Y7, X7, R9, r)

#define KSCALES16 \
	MOVQ DX, R13 \
	KSC(0) \
	KSC(1) \
	KSC(2) \
	KSC(3) \
	KSC(4) \
	KSC(5) \
	KSC(6) \
	KSC(7) \
	KSC(8) \
	KSC(9) \
	KSC(10) \
	KSC(11) \
	KSC(12) \
	KSC(13) \
	KSC(14) \
	KSC(15)

// KNEXT steps to the next super-block: eight chunks of codes, scales and
// biases.
#define KNEXT \
	ADDQ $4096, DI \
	ADDQ $512, R8 \
	ADDQ $512, R9 \
	ADDQ R11, R10 \
	SUBQ $8, BX

// PFK prefetches the sixteen rows' blocks at DX+off, LINES of each
// four rows (48 bytes apart, so that every line of a row's step, 144 or
// 176 bytes a super-block (LINES3), 210 (LINES5), is asked for): sixteen
// streams at once are more than the hardware prefetchers follow. An
// 8192×2048 Q4_K matrix's panels, from memory: 2.9 -> 2.0 ms (AVX2
// scales), 2.6 -> 1.9 ms (AVX-512), medians of six alternating runs on a
// shared AMD EPYC VM.
#define PFK(off, LINES) \
	LEAQ off(DX), CX \
	LINES \
	LEAQ (CX)(R14*4), CX \
	LINES \
	LEAQ (CX)(R14*4), CX \
	LINES \
	LEAQ (CX)(R14*4), CX \
	LINES

// PF4 prefetches the line at o of four rows (CX the first).
#define PF4(o) \
	PREFETCHT0 o(CX) \
	PREFETCHT0 o(CX)(R14*1) \
	PREFETCHT0 o(CX)(R14*2) \
	PREFETCHT0 o(CX)(AX*1)

#define LINES3 PF4(0) PF4(48) PF4(96)
#define LINES5 PF4(0) PF4(48) PF4(96) PF4(144) PF4(192)

// KPANEL is a k-quant panel kernel: PARGS and its constants done, for
// each super-block GROUP lays out the codes of the rows' four groups
// and SCALES their scales and biases; bb is a super-block's bytes, LINES
// the prefetches a row needs.
#define KPANEL(bb, GROUP, SCALES, LINES) \
sb: \
	LEAQ (SI)(R10*1), DX \
	PFK(2*bb, LINES) \
	MOVQ DX, R13 \
	GROUP(0) \
	GROUP(1) \
	GROUP(2) \
	GROUP(3) \
	SCALES \
	KNEXT \
	JNZ sb \
	VZEROUPPER \
	RET

// KBYTES sets Y15 to bytes of 0x0f and, for Q5_K, Y12 to bytes of 0x10.
#define KBYTES \
	MOVL $0x0f0f0f0f, R13 \
	VMOVD R13, X15 \
	VPBROADCASTD X15, Y15 \
	MOVL $0x10101010, R13 \
	VMOVD R13, X12 \
	VPBROADCASTD X12, Y12

// func panelQ4_KAVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ4_KAVX2(SB), NOSPLIT, $0-48
	PARGS(144, 0)
	KBYTES
	KPANEL(144, Q4KGROUP, KSCALES16, LINES3)

// func panelQ5_KAVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ5_KAVX2(SB), NOSPLIT, $0-48
	PARGS(176, 0)
	KBYTES
	KPANEL(176, Q5KGROUP, KSCALES16, LINES3)

// The AVX-512 VNNI sets' k-quant panels lay the codes out as above but
// the scales and biases in registers: each row's eight d·sc and −dmin·m
// (KROWZ) go to the low (rows 0-7) or high (rows 8-15) half of one of
// Z16-Z23 and Z24-Z31, and an 8×8 transpose in both halves at once
// (TRSTORE) gives each chunk's sixteen rows, one 64-byte store, where
// KSC stores every float on its own (VEXTRACTPS). A 1B Q4_K_M's panels
// were 18 % of its 128-token prefill and of a new chat's first token; the
// panels of a 1024×2048 Q4_K matrix took 139 µs this way and 107 µs with
// the transpose (medians of six runs, AMD EPYC Zen 4).

// KLO puts the next row's (ROW: KROWZ, Q6ROWZ) in the low halves of s
// and b (rows 0-7).
#define KLO(ROW, s, b) \
	ROW \
	VMOVAPS Y6, s \
	VMOVAPS Y7, b

// KHI puts the next row's in the high halves of s and b (rows 8-15).
#define KHI(ROW, s, b) \
	ROW \
	VINSERTF64X4 $1, Y6, s, s \
	VINSERTF64X4 $1, Y7, b, b

// COLS stores chunks j and j+4 of sixteen rows to base from a transposed
// pair (a: rows 0-3 and 8-11, b: rows 4-7 and 12-15; chunk j in their
// lanes 0 and 2, j+4 in 1 and 3).
#define COLS(a, b, j, base) \
	VSHUFF32X4 $0x88, b, a, Z5 \
	VSHUFF32X4 $0xd8, Z5, Z5, Z5 \
	VMOVUPS Z5, (64*j)(base) \
	VSHUFF32X4 $0xdd, b, a, Z7 \
	VSHUFF32X4 $0xd8, Z7, Z7, Z7 \
	VMOVUPS Z7, (64*j+256)(base)

// TRSTORE stores the eight chunks of r0-r7 (row i in the low half of
// r_i, row i+8 in its high half) to base, sixteen rows a chunk. It
// leaves Z12 and Z15 (the code kernels' constants) alone.
#define TRSTORE(r0, r1, r2, r3, r4, r5, r6, r7, base) \
	VUNPCKLPS r1, r0, Z0 \
	VUNPCKHPS r1, r0, Z1 \
	VUNPCKLPS r3, r2, Z2 \
	VUNPCKHPS r3, r2, Z3 \
	VUNPCKLPS r5, r4, Z4 \
	VUNPCKHPS r5, r4, Z5 \
	VUNPCKLPS r7, r6, Z6 \
	VUNPCKHPS r7, r6, Z7 \
	VSHUFPS $0x44, Z2, Z0, Z8 \
	VSHUFPS $0xee, Z2, Z0, Z9 \
	VSHUFPS $0x44, Z3, Z1, Z0 \
	VSHUFPS $0xee, Z3, Z1, Z2 \
	VSHUFPS $0x44, Z6, Z4, Z1 \
	VSHUFPS $0xee, Z6, Z4, Z3 \
	VSHUFPS $0x44, Z7, Z5, Z4 \
	VSHUFPS $0xee, Z7, Z5, Z6 \
	COLS(Z8, Z1, 0, base) \
	COLS(Z9, Z3, 1, base) \
	COLS(Z0, Z4, 2, base) \
	COLS(Z2, Z6, 3, base)

#define KSCALES16Z(ROW) \
	MOVQ DX, R13 \
	KLO(ROW, Y16, Y24) \
	KLO(ROW, Y17, Y25) \
	KLO(ROW, Y18, Y26) \
	KLO(ROW, Y19, Y27) \
	KLO(ROW, Y20, Y28) \
	KLO(ROW, Y21, Y29) \
	KLO(ROW, Y22, Y30) \
	KLO(ROW, Y23, Y31) \
	KHI(ROW, Z16, Z24) \
	KHI(ROW, Z17, Z25) \
	KHI(ROW, Z18, Z26) \
	KHI(ROW, Z19, Z27) \
	KHI(ROW, Z20, Z28) \
	KHI(ROW, Z21, Z29) \
	KHI(ROW, Z22, Z30) \
	KHI(ROW, Z23, Z31) \
	TRSTORE(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, R8) \
	TRSTORE(Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31, R9)

// func panelQ4_KVNNI(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ4_KVNNI(SB), NOSPLIT, $0-48
	PARGS(144, 0)
	KBYTES
	KPANEL(144, Q4KGROUP, KSCALES16Z(KROWZ), LINES3)

// func panelQ5_KVNNI(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ5_KVNNI(SB), NOSPLIT, $0-48
	PARGS(176, 0)
	KBYTES
	KPANEL(176, Q5KGROUP, KSCALES16Z(KROWZ), LINES3)

// Q6_K's codes: the low nibbles of ql's 32 bytes at 64h+32p, with qh's
// bits 2p and 2p+1 (qh's 32 bytes at 128+32h) as bits 4 and 5, are
// chunk 4h+p; their high nibbles, with bits 2p+4 and 2p+5, chunk
// 4h+p+2; 32 is taken from each code. A row's sixteen int8 scales, times
// d: the even ones are the chunks' scales, the odd ones their biases
// (the scales of their last sixteen columns, for gemmQ6K). Y15 holds
// bytes of 0x0f, Y12 of 0x30, Y13 of 0x20.

// Q6SHL4 and the others move qh's two bits for a chunk to bits 4 and 5.
#define Q6SHL4(h) VPSLLW $4, h, Y5
#define Q6SHL2(h) VPSLLW $2, h, Y5
#define Q6SH0(h) VMOVDQA h, Y5
#define Q6SHR2(h) VPSRLW $2, h, Y5

// Q6SC stores row r's scales (R13 its super-block) and steps R13 to the
// next row.
#define Q6SC(r) \
	Q6ROWZ \
	SCATTER8(Y6, X6, R8, r) \
	SCATTER8(Y7, X7, R9, r)

#define Q6SCALES16 \
	MOVQ DX, R13 \
	T16(Q6SC)

DATA q6even<>+0(SB)/8, $0x0e0c0a0806040200
DATA q6even<>+8(SB)/8, $0x0f0d0b0907050301
GLOBL q6even<>(SB), RODATA|NOPTR, $16

// Q6STORE stores dword column j of four rows (y; h their qh), row
// group g: y's low nibbles, with the qh bits SHL moves, to chunk cl, its
// high nibbles, with SHH's, to chunk ch, 32 taken from each.
#define Q6STORE(y, h, j, g, cl, ch, SHL, SHH) \
	VPAND Y15, y, Y4 \
	SHL(h) \
	VPAND Y12, Y5, Y5 \
	VPOR Y5, Y4, Y4 \
	VPSUBB Y13, Y4, Y4 \
	VMOVDQU X4, (512*(cl)+64*j+16*g)(DI) \
	VEXTRACTI128 $1, Y4, (512*(cl)+64*j+256+16*g)(DI) \
	VPSRLW $4, y, Y4 \
	VPAND Y15, Y4, Y4 \
	SHH(h) \
	VPAND Y12, Y5, Y5 \
	VPOR Y5, Y4, Y4 \
	VPSUBB Y13, Y4, Y4 \
	VMOVDQU X4, (512*(ch)+64*j+16*g)(DI) \
	VEXTRACTI128 $1, Y4, (512*(ch)+64*j+256+16*g)(DI)

// Q6CODES lays out the ql bytes at off of four rows (R13 the first), row
// group g, as chunks cl and ch.
#define Q6CODES(off, g, cl, ch, SHL, SHH) \
	VMOVDQU off(R13), Y0 \
	VMOVDQU off(R13)(R14*1), Y1 \
	VMOVDQU off(R13)(R14*2), Y2 \
	VMOVDQU off(R13)(AX*1), Y3 \
	T4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7) \
	Q6STORE(Y0, Y8, 0, g, cl, ch, SHL, SHH) \
	Q6STORE(Y1, Y9, 1, g, cl, ch, SHL, SHH) \
	Q6STORE(Y2, Y10, 2, g, cl, ch, SHL, SHH) \
	Q6STORE(Y3, Y11, 3, g, cl, ch, SHL, SHH)

// Q6HALF lays out half hf of four rows' super-blocks: their qh bytes,
// transposed alike into Y8-Y11, then the two runs of ql.
#define Q6HALF(hf, g) \
	VMOVDQU (128+32*hf)(R13), Y8 \
	VMOVDQU (128+32*hf)(R13)(R14*1), Y9 \
	VMOVDQU (128+32*hf)(R13)(R14*2), Y10 \
	VMOVDQU (128+32*hf)(R13)(AX*1), Y11 \
	T4(Y8, Y9, Y10, Y11, Y4, Y5, Y6, Y7) \
	Q6CODES(64*hf, g, 4*hf, 4*hf+2, Q6SHL4, Q6SH0) \
	Q6CODES(64*hf+32, g, 4*hf+1, 4*hf+3, Q6SHL2, Q6SHR2)

#define Q6GROUP(g) \
	Q6HALF(0, g) \
	Q6HALF(1, g) \
	LEAQ (R13)(R14*4), R13

// Q6ROWZ sets Y6 and Y7 to the d·sc of the even and the odd scales of
// the super-block at R13 (X14 the shuffle that parts them) and steps R13
// to the next row.
#define Q6ROWZ \
	VPBROADCASTW 208(R13), X9 \
	VCVTPH2PS X9, Y9 \
	VMOVDQU 192(R13), X5 \
	VPSHUFB X14, X5, X5 \
	VPMOVSXBD X5, Y6 \
	VCVTDQ2PS Y6, Y6 \
	VMULPS Y9, Y6, Y6 \
	VPSHUFD $0x0e, X5, X5 \
	VPMOVSXBD X5, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VMULPS Y9, Y7, Y7 \
	ADDQ R14, R13

// Q6BYTES sets Y15, Y12 and Y13 to bytes of 0x0f, 0x30 and 0x20, X14 to
// q6even.
#define Q6BYTES \
	MOVL $0x0f0f0f0f, R13 \
	VMOVD R13, X15 \
	VPBROADCASTD X15, Y15 \
	MOVL $0x30303030, R13 \
	VMOVD R13, X12 \
	VPBROADCASTD X12, Y12 \
	MOVL $0x20202020, R13 \
	VMOVD R13, X13 \
	VPBROADCASTD X13, Y13 \
	VMOVDQU q6even<>(SB), X14

// func panelQ6_KAVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ6_KAVX2(SB), NOSPLIT, $0-48
	PARGS(210, 0)
	Q6BYTES
	KPANEL(210, Q6GROUP, Q6SCALES16, LINES5)

// func panelQ6_KVNNI(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ6_KVNNI(SB), NOSPLIT, $0-48
	PARGS(210, 0)
	Q6BYTES
	KPANEL(210, Q6GROUP, KSCALES16Z(Q6ROWZ), LINES5)

// The amx set's panels are laid out straight in tile order (i8Panel.a:
// for each chunk, each row's 32 codes in column order), so they need no
// transpose. For the k-quants a row's 32 code bytes are two chunks'
// codes, its low and high nibbles. DI is a.

// TROWS4K lays out the codes of rows r (R13 its super-block).
#define TROWS4K(r) \
	TPAIR4K(0, 0, 1, r) \
	TPAIR4K(32, 2, 3, r) \
	TPAIR4K(64, 4, 5, r) \
	TPAIR4K(96, 6, 7, r) \
	ADDQ R14, R13

// TPAIR4K stores the nibbles of the 32 code bytes at 16+off(R13) to row r
// of chunks cl (low) and ch (high).
#define TPAIR4K(off, cl, ch, r) \
	VMOVDQU (16+off)(R13), Y0 \
	VPAND Y15, Y0, Y1 \
	VMOVDQU Y1, (512*cl+32*r)(DI) \
	VPSRLW $4, Y0, Y0 \
	VPAND Y15, Y0, Y0 \
	VMOVDQU Y0, (512*ch+32*r)(DI)

// func panelQ4_KTiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ4_KTiles(SB), NOSPLIT, $0-48
	PARGS(144, 0)
	MOVL $0x0f0f0f0f, R13
	VMOVD R13, X15
	VPBROADCASTD X15, Y15
q4ktsb:
	LEAQ (SI)(R10*1), DX
	MOVQ DX, R13
	TROWS4K(0)
	TROWS4K(1)
	TROWS4K(2)
	TROWS4K(3)
	TROWS4K(4)
	TROWS4K(5)
	TROWS4K(6)
	TROWS4K(7)
	TROWS4K(8)
	TROWS4K(9)
	TROWS4K(10)
	TROWS4K(11)
	TROWS4K(12)
	TROWS4K(13)
	TROWS4K(14)
	TROWS4K(15)
	KSCALES16
	KNEXT
	JNZ q4ktsb
	VZEROUPPER
	RET

// T6STORE stores Y1's nibbles (SH moves their qh bits from Y8) to row r
// of chunk c, less 32.
#define T6STORE(c, r, SH) \
	SH(Y8) \
	VPAND Y12, Y5, Y5 \
	VPOR Y5, Y1, Y1 \
	VPSUBB Y13, Y1, Y1 \
	VMOVDQU Y1, (512*(c)+32*r)(DI)

// T6CODES lays out the ql bytes at off of row r as chunks cl and ch.
#define T6CODES(off, r, cl, ch, SHL, SHH) \
	VMOVDQU (off)(R13), Y0 \
	VPAND Y15, Y0, Y1 \
	T6STORE(cl, r, SHL) \
	VPSRLW $4, Y0, Y1 \
	VPAND Y15, Y1, Y1 \
	T6STORE(ch, r, SHH)

#define T6HALF(hf, r) \
	VMOVDQU (128+32*hf)(R13), Y8 \
	T6CODES(64*hf, r, 4*hf, 4*hf+2, Q6SHL4, Q6SH0) \
	T6CODES(64*hf+32, r, 4*hf+1, 4*hf+3, Q6SHL2, Q6SHR2)

#define TROWS6K(r) \
	T6HALF(0, r) \
	T6HALF(1, r) \
	ADDQ R14, R13

// func panelQ6_KTiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ6_KTiles(SB), NOSPLIT, $0-48
	PARGS(210, 0)
	Q6BYTES
q6ktsb:
	LEAQ (SI)(R10*1), DX
	MOVQ DX, R13
	TROWS6K(0)
	TROWS6K(1)
	TROWS6K(2)
	TROWS6K(3)
	TROWS6K(4)
	TROWS6K(5)
	TROWS6K(6)
	TROWS6K(7)
	TROWS6K(8)
	TROWS6K(9)
	TROWS6K(10)
	TROWS6K(11)
	TROWS6K(12)
	TROWS6K(13)
	TROWS6K(14)
	TROWS6K(15)
	Q6SCALES16
	KNEXT
	JNZ q6ktsb
	VZEROUPPER
	RET

// The legacy blocks' tile panels, a chunk at a time: Q8_0's 32 codes,
// signed as the blocks hold them and with no bias (for gemmSignedAMX),
// are a row's; Q4_0's and Q4_1's sixteen code bytes give the row's first
// sixteen codes (low nibbles) and its last sixteen (high), Q4_0's made
// signed too (q − 8, no bias).

// T8ROW lays out row r of the chunk (R13 its block) and steps R13 to the
// next row.
#define T8ROW(r) \
	VMOVDQU 2(R13), Y0 \
	VMOVDQU Y0, (32*r)(DI) \
	ADDQ R14, R13

// T4ROW does the same for Q4_0 (codes at 2) and Q4_1 (at 4).
#define T4ROW(off, r) \
	VMOVDQU off(R13), X0 \
	VPSRLW $4, X0, X1 \
	VPAND X15, X0, X0 \
	VPAND X15, X1, X1 \
	VMOVDQU X0, (32*r)(DI) \
	VMOVDQU X1, (32*r+16)(DI) \
	ADDQ R14, R13

#define T4ROW1(r) T4ROW(4, r)

// T4ROW0 is T4ROW for Q4_0, its codes less 8 (X14 bytes of 8).
#define T4ROW0(r) \
	VMOVDQU 2(R13), X0 \
	VPSRLW $4, X0, X1 \
	VPAND X15, X0, X0 \
	VPAND X15, X1, X1 \
	VPSUBB X14, X0, X0 \
	VPSUBB X14, X1, X1 \
	VMOVDQU X0, (32*r)(DI) \
	VMOVDQU X1, (32*r+16)(DI) \
	ADDQ R14, R13

// func panelQ8_0Tiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ8_0Tiles(SB), NOSPLIT, $0-48
	PARGS(34, 0)
q80tchunk:
	LEAQ (SI)(R10*1), DX
	MOVQ DX, R13
	T16(T8ROW)
	SCALES
	NEXT
	JNZ q80tchunk
	VZEROUPPER
	RET

// func panelQ4_0Tiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ4_0Tiles(SB), NOSPLIT, $0-48
	PARGS(18, 0)
	MOVL $0x0f0f0f0f, R13
	VMOVD R13, X15
	VPBROADCASTD X15, Y15
	MOVL $0x08080808, R13
	VMOVD R13, X14
	VPBROADCASTD X14, X14
q40tchunk:
	LEAQ (SI)(R10*1), DX
	MOVQ DX, R13
	T16(T4ROW0)
	SCALES
	NEXT
	JNZ q40tchunk
	VZEROUPPER
	RET

// func panelQ4_1Tiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ4_1Tiles(SB), NOSPLIT, $0-48
	PARGS(20, 0)
	MOVL $0x0f0f0f0f, R13
	VMOVD R13, X15
	VPBROADCASTD X15, Y15
q41tchunk:
	LEAQ (SI)(R10*1), DX
	MOVQ DX, R13
	T16(T4ROW1)
	SCALES
	MINS41
	NEXT
	JNZ q41tchunk
	VZEROUPPER
	RET

// T5PAIR lays out the 32 code bytes at 48+32p of row r as chunks 2p
// (low nibbles, HLO's bit of qh in Y8) and 2p+1 (high, HHI's).
#define T5PAIR(p, r, HLO, HHI) \
	VMOVDQU (48+32*p)(R13), Y0 \
	VPAND Y15, Y0, Y4 \
	HLO(Y8) \
	VMOVDQU Y4, (1024*p+32*r)(DI) \
	VPSRLW $4, Y0, Y4 \
	VPAND Y15, Y4, Y4 \
	HHI(Y8) \
	VMOVDQU Y4, (1024*p+512+32*r)(DI)

#define TROWS5K(r) \
	VMOVDQU 16(R13), Y8 \
	T5PAIR(0, r, H0, H1) \
	T5PAIR(1, r, H2, H3) \
	T5PAIR(2, r, H4, H5) \
	T5PAIR(3, r, H6, H7) \
	ADDQ R14, R13

// func panelQ5_KTiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
TEXT ·panelQ5_KTiles(SB), NOSPLIT, $0-48
	PARGS(176, 0)
	MOVL $0x0f0f0f0f, R13
	VMOVD R13, X15
	VPBROADCASTD X15, Y15
	MOVL $0x10101010, R13
	VMOVD R13, X12
	VPBROADCASTD X12, Y12
q5ktsb:
	LEAQ (SI)(R10*1), DX
	MOVQ DX, R13
	T16(TROWS5K)
	KSCALES16
	KNEXT
	JNZ q5ktsb
	VZEROUPPER
	RET
