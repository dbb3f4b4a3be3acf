// Command vnnigen writes engine/cpu's int8 kernels: MLX affine q4 and q8
// rows times int8 activations, one function per code width and dtype of
// scales and biases. int8_vnni_amd64.s has the AVX-512 VNNI ones (the
// description below), int8_ymm_amd64.s the 256-bit ones (ymm.go), once
// with AVX-VNNI and once with AVX2 alone, int8_amx_amd64.s the AMX-INT8
// batch kernel (amx.go).
//
// avo, the generator the CPU speed issue suggested, cannot express these:
// its newest release served here (v0.5.0) has no VPDPBUSD (AVX512_VNNI),
// so this is a plain text/template over Go assembly instead
// (docs/RATIONALE.md, "Integer activations").
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// dtype is how a kernel reads sixteen scales or biases at (BASE)(AX*size)
// under a mask into a register as floats.
type dtype struct {
	Name string
	Size int
	load string // template: {{.Src}} memory operand, {{.Dst}} register
}

var dtypes = []dtype{
	{"F32", 4, "VMOVUPS.Z   SRC, MASK, DST"},
	{"BF16", 2, "VPMOVZXWD.Z SRC, MASK, DST\n\tVPSLLD      $16, DST, DST"},
	{"F16", 2, "VCVTPH2PS.Z SRC, MASK, DST"},
}

func (d dtype) Load(src, dst, mask string) string {
	return strings.NewReplacer("SRC", src, "DST", dst, "MASK", mask).Replace(d.load)
}

// kernel is one generated function.
type kernel struct {
	Bits int
	dtype
}

func (k kernel) Func() string { return fmt.Sprintf("gemvQ%dS%sVNNI", k.Bits, k.Name) }

// masked is a kernel with the mask registers of one of its steps.
type masked struct {
	kernel
	KG, KC string
}

// Masks gives the kernel's step template its mask registers.
func (k kernel) Masks(kg, kc string) masked { return masked{k, kg, kc} }

func (k kernel) Prep() string { return fmt.Sprintf("panelQ%dS%sVNNI", k.Bits, k.Name) }

// PrepTiles is the amx set's panel kernel (prepTiles).
func (k kernel) PrepTiles() string { return fmt.Sprintf("panelQ%dS%sTiles", k.Bits, k.Name) }

// Gathers are the byte offsets within a chunk of the four-byte groups of
// codes a panel kernel gathers: four for q4 (each gives two groups, low
// and high nibbles), eight for q8.
func (k kernel) Gathers() []int {
	n := 8
	if k.Bits == 4 {
		n = 4
	}
	g := make([]int, n)
	for i := range g {
		g[i] = 4 * i
	}
	return g
}

// Halves are the byte offsets within a chunk of the sixteen-byte pieces
// of each row a panel kernel loads when it has sixteen rows: one for q4,
// two for q8.
func (k kernel) Halves() []int {
	if k.Bits == 4 {
		return []int{0}
	}
	return []int{0, 16}
}

// rows16 loads the sixteen bytes at off of each of sixteen rows, from SI
// on, R14 bytes apart, into Z0-Z3 (Zj's lane L holds row 4L+j) and
// transposes the dwords of each lane across them: Zk then holds every
// row's dword k, as a VPGATHERDD of those dwords would. Gathers cost AMD's
// cores far more than these loads: on an AMD EPYC (Zen 4) the gathers
// made the panels 60 %% of a 12-token prefill of the 1B shape, and the
// loads halved the panels' time.
//
// With off 0 each row is also prefetched pf bytes ahead (eight chunks, as
// the amx set's prepTiles does): sixteen streams are more than the
// hardware prefetchers follow, and a short prompt's prefill reads its
// weights here. On the AMD EPYC (Zen 4), 1B q4 at one thread, three
// alternating runs each: prefill of 128 tokens 116-121 -> 121-125 tok/s,
// of 16 tokens 83-85 -> 84-90.
func rows16(off, pf int) string {
	var b strings.Builder
	b.WriteString("\tMOVQ SI, DX")
	for r := range 16 {
		if r > 0 {
			b.WriteString("\n\tADDQ R14, DX")
		}
		if lane := r / 4; lane == 0 {
			fmt.Fprintf(&b, "\n\tVMOVDQU %d(DX), X%d", off, r)
		} else {
			fmt.Fprintf(&b, "\n\tVINSERTI32X4 $%d, %d(DX), Z%d, Z%d", lane, off, r%4, r%4)
		}
		if off == 0 {
			fmt.Fprintf(&b, "\n\tPREFETCHT0 %d(DX)", pf)
		}
	}
	b.WriteString(`
	VPUNPCKLDQ  Z1, Z0, Z4
	VPUNPCKHDQ  Z1, Z0, Z5
	VPUNPCKLDQ  Z3, Z2, Z6
	VPUNPCKHDQ  Z3, Z2, Z7
	VPUNPCKLQDQ Z6, Z4, Z0
	VPUNPCKHQDQ Z6, Z4, Z1
	VPUNPCKLQDQ Z7, Z5, Z2
	VPUNPCKHQDQ Z7, Z5, Z3`)
	return b.String()
}

func main() {
	dir := flag.String("dir", ".", "directory to write int8_vnni_amd64.s, int8_ymm_amd64.s and int8_amx_amd64.s to")
	flag.Parse()
	for name, text := range map[string][]byte{"int8_vnni_amd64.s": zmm(), "int8_ymm_amd64.s": ymm(), "int8_amx_amd64.s": amx()} {
		if err := os.WriteFile(filepath.Join(*dir, name), text, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// prefetchHint is how the decode kernels ask for the weights ahead of
// their loads: into L2 (PREFETCHT1) rather than into L1, as first
// written: the whole 1B q4 model decoded 12 % faster on one thread and 6 %
// on two (docs/RATIONALE.md, "Prefetch", has the commands). How far ahead
// is the argument ahead (R15), bytes of q4 codes (q8 twice as far, the
// same number of weights), which the backend chooses at run time
// (ahead.go).
const prefetchHint = "PREFETCHT1"

var funcs = template.FuncMap{
	"prefetch": func(bits, off int) string {
		return fmt.Sprintf("%s  %d(SI)(R15*%d)", prefetchHint, off, bits/4)
	},
	"mul4":   func(i int) int { return 4 * i },
	"mul2":   func(i int) int { return 2 * i },
	"mul2p1": func(i int) int { return 2*i + 1 },
	"add":    func(a, b int) int { return a + b },
	"mul":    func(a, b int) int { return a * b },
	"rows16": rows16,
	"lanes4": func() []int { return []int{0, 1, 2, 3} },
}

// execute appends template text filled in with each of data to b.
func execute(b *bytes.Buffer, text string, data ...any) {
	t := template.Must(template.New("").Funcs(funcs).Parse(text))
	for _, d := range data {
		if err := t.Execute(b, d); err != nil {
			log.Fatal(err)
		}
	}
}

func zmm() []byte {
	var b bytes.Buffer
	b.WriteString(header)
	var kernels []any
	for _, bits := range []int{4, 8} {
		for _, d := range dtypes {
			kernels = append(kernels, kernel{bits, d})
		}
	}
	execute(&b, preStep+body, kernels...)
	lanes := make([]int, 16)
	for i := range lanes {
		lanes[i] = i
	}
	execute(&b, quant, lanes)
	execute(&b, gemm, struct{ Lanes []int }{lanes[:8]})
	execute(&b, gemmQ6K, struct {
		Lanes  []int
		Halves []string // the registers with each half's scales
	}{lanes[:8], []string{"R8", "R9"}})
	execute(&b, prep, kernels...)
	execute(&b, prepTiles, kernels...)
	return b.Bytes()
}

func ymm() []byte {
	var b bytes.Buffer
	b.WriteString(ymmHeader)
	var gemvs, gemms, panels []any
	for _, is := range isas {
		for _, bits := range []int{4, 8} {
			for _, d := range dtypes {
				gemvs = append(gemvs, ymmKernel{Bits: bits, dtype: d, isa: is, Ones: 13, Tmp: 14, Even: 12})
			}
			if !is.VNNI || bits == 4 {
				gemms = append(gemms, ymmKernel{Bits: bits, isa: is, Ones: 11, Tmp: 12})
			}
		}
	}
	for _, bits := range []int{4, 8} {
		for _, d := range dtypes {
			panels = append(panels, ymmKernel{Bits: bits, dtype: d})
		}
	}
	execute(&b, ymmGemv, gemvs...)
	execute(&b, ymmGemm, gemms...)
	for _, is := range isas {
		execute(&b, ymmGemmQ6K, ymmKernel{isa: is, Ones: 11, Tmp: 12})
	}
	execute(&b, ymmPanel, panels...)
	block := make([]int, 32)
	for i := range block {
		block[i] = i
	}
	execute(&b, ymmQuant, block)
	return b.Bytes()
}
