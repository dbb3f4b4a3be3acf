// Command vnnigen writes engine/cpu's AVX-512 VNNI kernels
// (int8_vnni_amd64.s): MLX affine q4 and q8 rows times int8 activations,
// one function per code width and dtype of scales and biases, all from the
// one description below.
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
	"strings"
	"text/template"
)

// dtype is how a kernel reads sixteen scales or biases at (BASE)(AX*size)
// under mask K1 into a register as floats.
type dtype struct {
	Name string
	Size int
	load string // template: {{.Src}} memory operand, {{.Dst}} register
}

var dtypes = []dtype{
	{"F32", 4, "VMOVUPS.Z   SRC, K1, DST"},
	{"BF16", 2, "VPMOVZXWD.Z SRC, K1, DST\n\tVPSLLD      $16, DST, DST"},
	{"F16", 2, "VCVTPH2PS.Z SRC, K1, DST"},
}

func (d dtype) Load(src, dst string) string {
	return strings.NewReplacer("SRC", src, "DST", dst).Replace(d.load)
}

// kernel is one generated function.
type kernel struct {
	Bits int
	dtype
}

func (k kernel) Func() string { return fmt.Sprintf("gemvQ%dS%sVNNI", k.Bits, k.Name) }

func (k kernel) Prep() string { return fmt.Sprintf("panelQ%dS%sVNNI", k.Bits, k.Name) }

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

func main() {
	out := flag.String("out", "int8_vnni_amd64.s", "file to write (- for stdout)")
	flag.Parse()
	t := template.Must(template.New("body").Parse(body))
	var b bytes.Buffer
	b.WriteString(header)
	for _, bits := range []int{4, 8} {
		for _, d := range dtypes {
			if err := t.Execute(&b, kernel{bits, d}); err != nil {
				log.Fatal(err)
			}
		}
	}
	funcs := template.FuncMap{
		"mul4":   func(i int) int { return 4 * i },
		"mul2":   func(i int) int { return 2 * i },
		"mul2p1": func(i int) int { return 2*i + 1 },
	}
	lanes := make([]int, 16)
	for i := range lanes {
		lanes[i] = i
	}
	if err := template.Must(template.New("quant").Funcs(funcs).Parse(quant)).Execute(&b, lanes); err != nil {
		log.Fatal(err)
	}
	funcs["add"] = func(a, b int) int { return a + b }
	funcs["mul"] = func(a, b int) int { return a * b }
	if err := template.Must(template.New("gemm").Funcs(funcs).Parse(gemm)).Execute(&b, struct{ Lanes []int }{lanes[:8]}); err != nil {
		log.Fatal(err)
	}
	pt := template.Must(template.New("prep").Funcs(funcs).Parse(prep))
	for _, bits := range []int{4, 8} {
		for _, d := range dtypes {
			if err := pt.Execute(&b, kernel{bits, d}); err != nil {
				log.Fatal(err)
			}
		}
	}
	if *out == "-" {
		os.Stdout.Write(b.Bytes())
		return
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
