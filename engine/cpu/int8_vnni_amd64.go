package cpu

import (
	"math/bits"
	"unsafe"
)

//go:generate go run ./internal/vnnigen -out int8_vnni_amd64.s

// avx512VNNIKernels is the AVX-512 set with the affine kernels over int8
// activations (int8_vnni_amd64.s).
var avx512VNNIKernels = func() kernelSet {
	ks := avx512Kernels
	ks.name = "avx512vnni"
	ks.gemvQ4I8 = vnniGemv{4, [3]vnniAsm{gemvQ4SF32VNNI, gemvQ4SBF16VNNI, gemvQ4SF16VNNI}}.gemv
	ks.gemvQ8I8 = vnniGemv{8, [3]vnniAsm{gemvQ8SF32VNNI, gemvQ8SBF16VNNI, gemvQ8SF16VNNI}}.gemv
	ks.quantI8 = quantI8
	return ks
}()

// vnniAsm is an int8 affine gemv kernel for one dtype of scales and biases.
type vnniAsm func(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift int)

// vnniGemv holds an int8 affine gemv kernel's assembly for each dtype of
// scales and biases (halfKind).
type vnniGemv struct {
	bits int
	asm  [3]vnniAsm
}

// vnniIndex[bits/8][log2(group)-5] are the VPERMPS index vectors of a
// kernel: the group of each of sixteen chunks relative to the first, then
// the chunk of each int32 lane of a 128-weight block (q4 lanes hold chunk
// lane/4; q8 has two vectors, for the first and second 64 weights, four
// weights a lane).
var vnniIndex = func() (t [2][3][48]int32) {
	for gs := range 3 {
		group := int32(32 << gs)
		for l := range int32(16) {
			t[0][gs][l], t[1][gs][l] = l*32/group, l*32/group
			t[0][gs][16+l] = l / 4
			t[1][gs][16+l], t[1][gs][32+l] = l/8, 2+l/8
		}
	}
	return t
}()

func (a vnniGemv) gemv(out []float32, w []uint32, scales, biases halfVec, xq []int8, dx, xsum, f []float32, group int) {
	rows, cols := len(out), len(xq)
	if rows == 0 {
		return
	}
	groups, chunks := cols/max(group, 1), cols/int8Block
	if group&(group-1) != 0 || group < 32 || group > 128 || cols == 0 || cols%group != 0 ||
		len(w) < rows*cols*a.bits/32 || scales.len() < rows*groups || biases.len() < rows*groups ||
		len(dx) < chunks || len(xsum) < chunks || len(f) < chunks+16 {
		panic("cpu: int8 affine gemv operands do not match")
	}
	k := halfKind(scales)
	if halfKind(biases) != k {
		gemvI8Go(out, w, scales, biases, xq, dx, xsum, group, a.bits)
		return
	}
	gs := bits.TrailingZeros(uint(group))
	a.asm[k](&out[0], &w[0], halfPtr(scales), halfPtr(biases), &xq[0], &dx[0], &xsum[0], &f[0],
		&vnniIndex[a.bits/8][gs-5][0], rows, cols, gs)
}

func quantI8(xq []int8, dx, xsum, x []float32, q4 bool) {
	cols := len(x)
	if cols == 0 || cols%int8Block != 0 || len(xq) < cols || len(dx) < cols/int8Block || len(xsum) < cols/int8Block {
		panic("cpu: int8 quantisation operands do not match")
	}
	nibbles := 0
	if q4 {
		nibbles = 1
	}
	quantI8VNNI(&xq[0], &dx[0], &xsum[0], &x[0], cols, 5, nibbles) // 2⁵ = int8Block
}

//go:noescape
func quantI8VNNI(xq *int8, dx, xsum, x *float32, cols, gshift, q4 int)

//go:noescape
func gemvQ4SF32VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift int)

//go:noescape
func gemvQ4SBF16VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift int)

//go:noescape
func gemvQ4SF16VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift int)

//go:noescape
func gemvQ8SF32VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift int)

//go:noescape
func gemvQ8SBF16VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift int)

//go:noescape
func gemvQ8SF16VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift int)
