package cpu

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

// TestQ4Forms checks that the two forms of the AVX-512 VNNI Q4_0 and
// Q4_1 kernels give the same bits, whole eights of blocks and the ones
// after, so that the probe's choice changes no result; and that the
// probe chose one.
func TestQ4Forms(t *testing.T) {
	if _, err := chooseKernels("avx512vnni"); err != nil {
		t.Skip("this CPU has no AVX-512 VNNI:", err)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		typ             gguf.Type
		frame, register blockGemvAsm
	}{{gguf.Q4_0, gemvQ4_0I8VNNI, gemvQ4_0I8VNNIR}, {gguf.Q4_1, gemvQ4_1I8VNNI, gemvQ4_1I8VNNIR}} {
		for _, cols := range []int{32, 576, 2048 + 96} {
			const rows = 17
			w := randBlocks(rng, c.typ, rows, cols, false)
			xq := make([]int8, cols)
			for i := range xq {
				xq[i] = int8(rng.IntN(255) - 127)
			}
			dx := randF32(rng, cols/32)
			xsum := make([]float32, cols/32)
			quantSums(xsum, dx, xq, i8Natural)
			a, b := make([]float32, rows), make([]float32, rows)
			asmBlockGemv(c.frame, c.typ)(a, w, xq, dx, xsum, nil)
			asmBlockGemv(c.register, c.typ)(b, w, xq, dx, xsum, nil)
			if !slices.Equal(a, b) {
				t.Fatalf("%s, %d columns: the frame form gives %v, the register form %v", c.typ, cols, a, b)
			}
		}
	}
	if f := q4Form(); !strings.Contains(f, "form") {
		t.Errorf("q4Form() = %q", f)
	}
}
