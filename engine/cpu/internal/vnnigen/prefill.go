package main

import "fmt"

// The batch kernels' assembly (prefill: panels of sixteen rows against
// the whole batch): text/templates over Go assembly, filled in by main.

// pfArgs and pfNext are the batch kernels' prefetch of the next panel's
// weights (i8Panel.next): pfArgs loads its start to R15 and its end to a
// frame slot, pfNext asks for two lines of it each chunk, into L2, until
// the end. The panel kernels then read it from there, not from memory:
// the Q4_K panels were 17 % of a 1B Q4_K_M's prefill, as much as the
// memory's speed and latency allow without it.
const pfArgs = `
	MOVQ pf+80(FP), R15
	MOVQ pfn+88(FP), AX
	ADDQ R15, AX
	MOVQ AX, pfend-16(SP)`

// gemmArgs loads a batch kernel's arguments to their registers, the one
// at 48 named sums (xs, or hs), and leaves the tile's end in a frame slot.
func gemmArgs(sums string) string {
	return fmt.Sprintf(`
	MOVQ tile+0(FP), DI
	MOVQ wp+8(FP), SI
	MOVQ sp+16(FP), R8
	MOVQ bp+24(FP), R9
	MOVQ xq+32(FP), R10
	MOVQ dx+40(FP), R11
	MOVQ %s+48(FP), R12
	MOVQ np+56(FP), R13
	SHLQ $2, R13
	MOVQ chunks+72(FP), BX
	SHLQ $6, BX
	MOVQ nt+64(FP), AX
	SHLQ $6, AX
	ADDQ DI, AX
	MOVQ AX, end-8(SP)
`, sums)
}

// gemmTail ends the zmm batch kernels: after the last chunk, the eight
// inputs' sums to the tile, and on to the next eight.
const gemmTail = `
{{- range .Lanes}}
	VMOVUPS Z{{add 8 .}}, {{mul 64 .}}(DI)
{{- end}}
	ADDQ $512, DI
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	CMPQ DI, end-8(SP)
	JLT  inputs
	VZEROUPPER
	RET
`

const pfNext = `
	CMPQ R15, pfend-16(SP)
	JGE  nopf
	PREFETCHT1 (R15)
	PREFETCHT1 64(R15)
	ADDQ $128, R15
nopf:`

var gemm = `
// func gemmI8VNNI(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx, xs *float32, np, nt, chunks int, pf *byte, pfn int)
//
// The batch kernel: a panel of sixteen rows (wp: for each four columns,
// each row's four codes; sp, bp: each 32-column chunk's scale and bias of
// the sixteen rows) times nt of np inputs (xq: for each four columns, each
// input's four int8s; dx, xs: each chunk's step and sum of each input), to
// tile[t·16+r]. Eight inputs at a time: for each four columns, one load of
// the panel and eight VPDPBUSD with an input's four bytes broadcast; at
// each chunk's end the int32 sums become floats, times scale·step, plus
// bias·sum. Meanwhile the pfn bytes at pf are prefetched (pfNext).
TEXT ·gemmI8VNNI(SB), NOSPLIT, $16-96` + pfArgs + gemmArgs("xs") + `
inputs:
{{- range .Lanes}}
	VPXORD Z{{add 8 .}}, Z{{add 8 .}}, Z{{add 8 .}}
{{- end}}
	MOVQ R10, AX
	MOVQ R11, DX
	MOVQ R12, R14
	XORQ CX, CX
chunk:` + pfNext + `
{{- range .Lanes}}
	VPXORD Z{{.}}, Z{{.}}, Z{{.}}
{{- end}}
{{- range .Lanes}}
	VMOVDQU32 {{mul 64 .}}(SI)(CX*8), Z16
{{- range $.Lanes}}
	VPDPBUSD.BCST {{mul 4 .}}(AX), Z16, Z{{.}}
{{- end}}
	ADDQ R13, AX
{{- end}}
	VMOVUPS (R8)(CX*1), Z17
	VMOVUPS (R9)(CX*1), Z18
{{- range .Lanes}}
	VCVTDQ2PS         Z{{.}}, Z{{.}}
	VMULPS.BCST       {{mul 4 .}}(DX), Z17, Z19
	VFMADD231PS       Z19, Z{{.}}, Z{{add 8 .}}
	VFMADD231PS.BCST  {{mul 4 .}}(R14), Z18, Z{{add 8 .}}
{{- end}}
	ADDQ R13, DX
	ADDQ R13, R14
	ADDQ $64, CX
	CMPQ CX, BX
	JLT  chunk` + gemmTail

const prep = `
// func {{.Prep}}(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)
//
// A panel for gemmI8VNNI from up to sixteen rows of MLX q{{.Bits}} weights
// (wstride bytes apart; sstride scales and biases apart). Each four bytes
// of a chunk of the sixteen rows go to one line of the panel{{if eq .Bits 4}}, split
// into low and high nibbles (nibble order){{end}}: with sixteen rows, each
// row's sixteen bytes are loaded (Zj's lane L holds row 4L+j) and a 4×4
// transpose of dwords in each lane leaves Zk holding every row's dword k;
// with fewer, they are gathered (VPGATHERDD, masked to the rows there
// are, so that no row past the last is read). Each chunk's scales and
// biases are gathered.
{{- if ne .Name "F32"}} A two-byte scale is gathered as the high half
// of the four bytes that end with it, which lie inside the file, as the
// tensor never starts it.
{{- end}}
TEXT ·{{.Prep}}(SB), NOSPLIT, $0-88
	MOVQ wp+0(FP), DI
	MOVQ sp+8(FP), R8
	MOVQ bp+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ wstride+32(FP), R14
	MOVQ scales+40(FP), R11
	MOVQ biases+48(FP), R12
	MOVQ rows+64(FP), AX
	MOVQ $-1, DX
	BZHIQ AX, DX, DX
	KMOVW DX, K1
	VMOVDQU32 iota<>(SB), Z27
	VPBROADCASTD wstride+32(FP), Z26
	VPMULLD Z26, Z27, Z30
	MOVQ sstride+56(FP), AX
	SHLQ ${{if eq .Name "F32"}}2{{else}}1{{end}}, AX
	VPBROADCASTD AX, Z26
	VPMULLD Z26, Z27, Z29
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
{{- if eq .Name "BF16"}}
	MOVL $0xffff0000, AX
	VPBROADCASTD AX, Z28
{{- end}}
	MOVQ chunks+72(FP), BX
	MOVQ gshift+80(FP), CX
	SUBQ $5, CX
	XORQ AX, AX

chunk:
	CMPQ AX, BX
	JGE  done
	KORTESTW K1, K1
	JCC  gather
{{- range .Halves}}
{{rows16 . (mul 32 $.Bits)}}
{{- if eq $.Bits 4}}
{{- range $k := lanes4}}
	VPSRLD  $4, Z{{$k}}, Z8
	VPANDD  Z31, Z{{$k}}, Z{{$k}}
	VPANDD  Z31, Z8, Z8
	VMOVDQU32 Z{{$k}}, {{mul 64 $k}}(DI)
	VMOVDQU32 Z8, {{add 256 (mul 64 $k)}}(DI)
{{- end}}
{{- else}}
{{- $h := .}}
{{- range $k := lanes4}}
	VMOVDQU32 Z{{$k}}, {{add (mul 16 $h) (mul 64 $k)}}(DI)
{{- end}}
{{- end}}
{{- end}}
	JMP  laid

gather:
{{- range .Gathers}}
	KMOVW K1, K2
	VPXORD Z0, Z0, Z0
	VPGATHERDD {{.}}(SI)(Z30*1), K2, Z0
{{- if eq $.Bits 4}}
	VPSRLD  $4, Z0, Z1
	VPANDD  Z31, Z0, Z0
	VPANDD  Z31, Z1, Z1
	VMOVDQU32 Z0, {{mul 16 .}}(DI)
	VMOVDQU32 Z1, {{add 256 (mul 16 .)}}(DI)
{{- else}}
	VMOVDQU32 Z0, {{mul 16 .}}(DI)
{{- end}}
{{- end}}

laid:
` + prepScales

// prepTiles is prep for the amx set: the same scales and biases, the codes
// laid out straight in tile order (i8Panel.a), a row at a time with no
// gather, so that gemmI8AMX needs no amxPanel. A short batch's prefill
// reads its weights here: each row is prefetched eight chunks ahead
// (fewer or more were slower, measured on a 13-token prompt).
const prepTiles = `
// func {{.PrepTiles}}(a *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)
//
// {{.Prep}}'s panel for the amx set, its codes in tile order: for each
// chunk, each of the sixteen rows' 32 codes{{if eq .Bits 4}} (the chunk's sixteen bytes'
// low nibbles, then their high nibbles: nibble order){{end}}, rows past rows zero.
TEXT ·{{.PrepTiles}}(SB), NOSPLIT, $0-88
	MOVQ a+0(FP), DI
	MOVQ sp+8(FP), R8
	MOVQ bp+16(FP), R9
	MOVQ w+24(FP), SI
	MOVQ scales+40(FP), R11
	MOVQ biases+48(FP), R12
	MOVQ rows+64(FP), AX
	MOVQ $-1, DX
	BZHIQ AX, DX, DX
	KMOVW DX, K1
	VMOVDQU32 iota<>(SB), Z27
	MOVQ sstride+56(FP), AX
	SHLQ ${{if eq .Name "F32"}}2{{else}}1{{end}}, AX
	VPBROADCASTD AX, Z26
	VPMULLD Z26, Z27, Z29
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
{{- if eq .Name "BF16"}}
	MOVL $0xffff0000, AX
	VPBROADCASTD AX, Z28
{{- end}}
	VPXORD Z2, Z2, Z2
	MOVQ chunks+72(FP), BX
	MOVQ gshift+80(FP), CX
	SUBQ $5, CX
	XORQ AX, AX

chunk:
	CMPQ AX, BX
	JGE  done
	MOVQ SI, R14
	XORQ R10, R10
	MOVQ rows+64(FP), DX
	SHLQ $5, DX

row:
	CMPQ R10, DX
	JGE  pad
	PREFETCHT0 {{mul 32 .Bits}}(R14)
{{- if eq .Bits 4}}
	VMOVDQU (R14), X0
	VPSRLW  $4, X0, X1
	VPANDD  X31, X0, X0
	VPANDD  X31, X1, X1
	VMOVDQU X0, (DI)(R10*1)
	VMOVDQU X1, 16(DI)(R10*1)
{{- else}}
	VMOVDQU (R14), Y0
	VMOVDQU Y0, (DI)(R10*1)
{{- end}}
	ADDQ wstride+32(FP), R14
	ADDQ $32, R10
	JMP  row

pad:
	CMPQ R10, $512
	JGE  scales
	VMOVDQU Y2, (DI)(R10*1)
	ADDQ $32, R10
	JMP  pad

scales:
` + prepScales

// prepScales ends prep and prepTiles: a chunk's scales and biases of the
// sixteen rows, gathered (VPGATHERDD, masked to the rows there are) and
// widened, or, for a chunk that is not its group's first (a group is
// 1<<CX chunks), those of the chunk before, kept in Z24 and Z25; then on
// to the next chunk.
const prepScales = `	MOVQ $1, DX
	SHLQ CX, DX
	DECQ DX
	ANDQ AX, DX
	JNZ  samegroup
	MOVQ AX, DX
	SHRQ CX, DX
	LEAQ (R11)(DX*{{.Size}}), R10
	LEAQ (R12)(DX*{{.Size}}), R13
	KMOVW K1, K2
	VPXORD Z0, Z0, Z0
	VPGATHERDD {{if ne .Name "F32"}}-2{{else}}0{{end}}(R10)(Z29*1), K2, Z0
	KMOVW K1, K2
	VPXORD Z1, Z1, Z1
	VPGATHERDD {{if ne .Name "F32"}}-2{{else}}0{{end}}(R13)(Z29*1), K2, Z1
{{- if eq .Name "BF16"}}
	VPANDD Z28, Z0, Z0
	VPANDD Z28, Z1, Z1
{{- else if eq .Name "F16"}}
	VPSRLD    $16, Z0, Z0
	VPSRLD    $16, Z1, Z1
	VPMOVDW   Z0, Y0
	VPMOVDW   Z1, Y1
	VCVTPH2PS Y0, Z0
	VCVTPH2PS Y1, Z1
{{- end}}
	VMOVDQA32 Z0, Z24
	VMOVDQA32 Z1, Z25

samegroup:
	VMOVUPS Z24, (R8)
	VMOVUPS Z25, (R9)
	ADDQ $512, DI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ ${{mul 4 .Bits}}, SI
	INCQ AX
	JMP  chunk

done:
	VZEROUPPER
	RET
`

var gemmQ6K = `
// func gemmQ6KVNNI(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx *float32, hs *int32, np, nt, chunks int, pf *byte, pfn int)
//
// gemmI8VNNI for Q6_K's panels (fillQ6K): signed codes, each chunk's
// first sixteen columns scaled by sp, its last sixteen by bp. VPDPBUSD
// takes the codes unsigned, so each panel line has 32 added (the codes
// 0 to 63) and each half's int32 sums of an input start at hs, −32·the
// sum of that input's sixteen int8s (prepareI8Batch): exact, as the
// products' sums stay far inside int32. At each half's end the sums become floats,
// times that half's scale·step. It prefetches as gemmI8VNNI does.
TEXT ·gemmQ6KVNNI(SB), NOSPLIT, $16-96` + pfArgs + gemmArgs("hs") + `	MOVL $0x20202020, AX
	VPBROADCASTD AX, Z20

inputs:
{{- range .Lanes}}
	VPXORD Z{{add 8 .}}, Z{{add 8 .}}, Z{{add 8 .}}
{{- end}}
	MOVQ R10, AX
	MOVQ R11, DX
	MOVQ R12, R14
	XORQ CX, CX
chunk:` + pfNext + `
{{- range $h, $scale := .Halves}}
{{- range $.Lanes}}
	VPBROADCASTD {{mul 4 .}}(R14), Z{{.}}
{{- end}}
	ADDQ R13, R14
{{- range lanes4}}
	VPADDB {{add (mul 256 $h) (mul 64 .)}}(SI)(CX*8), Z20, Z16
{{- range $.Lanes}}
	VPDPBUSD.BCST {{mul 4 .}}(AX), Z16, Z{{.}}
{{- end}}
	ADDQ R13, AX
{{- end}}
	VMOVUPS ({{$scale}})(CX*1), Z17
{{- range $.Lanes}}
	VCVTDQ2PS         Z{{.}}, Z{{.}}
	VMULPS.BCST       {{mul 4 .}}(DX), Z17, Z19
	VFMADD231PS       Z19, Z{{.}}, Z{{add 8 .}}
{{- end}}
{{- end}}
	ADDQ R13, DX
	ADDQ $64, CX
	CMPQ CX, BX
	JLT  chunk` + gemmTail
