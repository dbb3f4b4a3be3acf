package cpu

import (
	"math/bits"
	"unsafe"
)

// neonDotKernels is the NEON set with the affine and GGUF block kernels
// over int8 activations (int8.go, blocks_i8.go) for CPUs with the ARMv8.2
// dot product (SDOT, int8_arm64.s, blocks_i8_arm64.s), for decode and the
// prefill batch; the prefill panels are laid out in Go.
var neonDotKernels = func() kernelSet {
	ks := neonKernels
	ks.name = "neondot"
	ks.gemvQ4I8 = neonGemv{4, gemvQ4I8NEON}.gemv
	ks.gemvQ8I8 = neonGemv{8, gemvQ8I8NEON}.gemv
	ks.quantI8 = quantNEON
	ks.panelI8 = [2]panelI8{panelGo(4), panelGo(8)}
	ks.gemmI8 = [2]gemmI8{neonGemm(gemmQ4I8NEON), neonGemm(gemmQ8I8NEON)}
	ks.gemvBlocksI8 = blocksNEON
	return ks
}()

// neonGemv wraps an int8 affine gemv kernel, checking the operands that
// the assembly trusts.
type neonGemv struct {
	bits int
	asm  func(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, rows, cols, gshift, kind int)
}

func (a neonGemv) gemv(out []float32, w []uint32, scales, biases halfVec, xq []int8, dx, xsum, f []float32, group int) {
	rows, cols := len(out), len(xq)
	if rows == 0 {
		return
	}
	groups, chunks := cols/max(group, 1), cols/int8Block
	if group&(group-1) != 0 || group < 32 || group > 128 || cols == 0 || cols%group != 0 ||
		len(w) < rows*cols*a.bits/32 || scales.len() < rows*groups || biases.len() < rows*groups ||
		len(dx) < chunks || len(xsum) < chunks || len(f) < chunks {
		panic("cpu: int8 affine gemv operands do not match")
	}
	k := halfKind(scales)
	if halfKind(biases) != k {
		gemvI8Go(out, w, scales, biases, xq, dx, xsum, group, a.bits)
		return
	}
	a.asm(&out[0], &w[0], halfPtr(scales), halfPtr(biases), &xq[0], &dx[0], &xsum[0], &f[0],
		rows, cols, bits.TrailingZeros(uint(group)), k)
}

// quantNEON wraps quantI8NEON, checking the lengths that it trusts.
func quantNEON(xq []int8, dx, xsum, x []float32, order i8Order) {
	cols := len(x)
	if cols == 0 || cols%int8Block != 0 || len(xq) < cols || len(dx) < cols/int8Block || len(xsum) < cols/int8Block {
		panic("cpu: int8 quantisation operands do not match")
	}
	quantI8NEON(&xq[0], &dx[0], &xsum[0], &x[0], cols, int(order))
}

//go:noescape
func quantI8NEON(xq *int8, dx, xsum, x *float32, cols, order int)

// panelGo is panelI8Go for bits-bit weights.
func panelGo(bits int) panelI8 {
	return func(p *i8Panel, w []uint32, scales, biases halfVec, rows, cols, group int) {
		panelI8Go(p, w, scales, biases, rows, cols, group, bits)
	}
}

// neonGemm is a NEON batch kernel as a gemmI8; they take four inputs a pass.
func neonGemm(f gemmI8Asm) gemmI8 { return asmGemm(f, 4) }

//go:noescape
func gemmQ4I8NEON(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx, xs *float32, np, nt, chunks int)

//go:noescape
func gemmQ8I8NEON(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx, xs *float32, np, nt, chunks int)

//go:noescape
func gemvQ4I8NEON(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, rows, cols, gshift, kind int)

//go:noescape
func gemvQ8I8NEON(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, rows, cols, gshift, kind int)
