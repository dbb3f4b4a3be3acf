package cpu

import "github.com/driftwoodlabs/driftwood/engine/gguf"

// blocksNEON holds the int8 GGUF decode kernels with SDOT
// (blocks_i8_arm64.s), indexed as kernelSet.gemvBlocksI8. The batch
// products lay the blocks out in Go (blockMatrix.fillI8) for the SDOT
// panel kernels.
var blocksNEON = [blockI8Types]blockGemvI8{
	neonBlockGemv(gguf.Q4_0, gemvQ4_0NEON), neonBlockGemv(gguf.Q4_1, gemvQ4_1NEON), neonBlockGemv(gguf.Q8_0, gemvQ8_0NEON),
	neonBlockGemv(gguf.Q4_K, gemvQ4_KNEON), neonBlockGemv(gguf.Q5_K, gemvQ5_KNEON), neonBlockGemv(gguf.Q6_K, gemvQ6_KNEON),
}

// neonBlockGemv wraps the kernel for blocks of typ, checking the operands
// that the assembly trusts.
func neonBlockGemv(typ gguf.Type, asm func(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)) blockGemvI8 {
	bs := typ.BlockSize()
	return func(out []float32, w []byte, xq []int8, dx, xsum []float32, _ []int16) {
		if rows, _, _ := blockGemvShape(typ, out, w, xq, dx, xsum); rows > 0 {
			var f [16]float32 // the k-quants' steps and offsets of a super-block
			asm(&out[0], &w[0], &xq[0], &dx[0], &xsum[0], &f[0], rows, len(xq)/bs)
		}
	}
}

//go:noescape
func gemvQ4_0NEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)

//go:noescape
func gemvQ4_1NEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)

//go:noescape
func gemvQ8_0NEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)

//go:noescape
func gemvQ4_KNEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)

//go:noescape
func gemvQ5_KNEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)

//go:noescape
func gemvQ6_KNEON(out *float32, w *byte, xq *int8, dx, xsum, f *float32, rows, blocks int)
