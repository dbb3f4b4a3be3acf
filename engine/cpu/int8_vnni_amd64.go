package cpu

import (
	"math/bits"
	"unsafe"
)

//go:generate go run ./internal/vnnigen

// avx512VNNIKernels is the AVX-512 set with the affine kernels over int8
// activations (int8_vnni_amd64.s).
var avx512VNNIKernels = func() kernelSet {
	ks := avx512Kernels
	ks.name = "avx512vnni"
	ks.gemvQ4I8 = i8Gemv{4, [3]i8GemvAsm{gemvQ4SF32VNNI, gemvQ4SBF16VNNI, gemvQ4SF16VNNI}, &vnniIndex}.gemv
	ks.gemvQ8I8 = i8Gemv{8, [3]i8GemvAsm{gemvQ8SF32VNNI, gemvQ8SBF16VNNI, gemvQ8SF16VNNI}, &vnniIndex}.gemv
	ks.quantI8 = quantI8
	ks.quantK = quantK
	ks.gemvBlocksI8 = blocksI8VNNI
	ks.prefetches = true
	ks.q4Form = q4Form
	ks.panelBlocksI8 = blockPanelsVNNI
	ks.panelI8 = [2]panelI8{
		i8PanelKernel{4, [3]panelAsm{panelQ4SF32VNNI, panelQ4SBF16VNNI, panelQ4SF16VNNI}, false, false}.panel,
		i8PanelKernel{8, [3]panelAsm{panelQ8SF32VNNI, panelQ8SBF16VNNI, panelQ8SF16VNNI}, false, false}.panel,
	}
	ks.gemmI8 = [2]gemmI8{vnniGemm, vnniGemm}
	ks.gemmQ6K = gemmQ6K
	return ks
}()

// i8GemvAsm is an int8 affine gemv kernel for one dtype of scales and
// biases; ahead is how far ahead it prefetches the rows (gemvAhead).
type i8GemvAsm func(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

// i8Gemv holds an int8 affine gemv kernel's assembly for each dtype of
// scales and biases (halfKind), and its VPERMPS index vectors.
type i8Gemv struct {
	bits  int
	asm   [3]i8GemvAsm
	index *[2][3][48]int32
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

func (a i8Gemv) gemv(out []float32, w []uint32, scales, biases halfVec, xq []int8, dx, xsum, f []float32, group int) {
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
		&a.index[a.bits/8][gs-5][0], rows, cols, gs, gemvAhead())
}

func quantI8(xq []int8, dx, xsum, x []float32, order i8Order) {
	checkQuant(xq, dx, xsum, x)
	quantI8VNNI(&xq[0], &dx[0], &xsum[0], &x[0], len(x), 5, int(order)) // 2⁵ = int8Block
}

// quantK quantises x with one step for each 256 elements (2⁸), which
// the assembly writes to dx[:len(x)/256], then gives each chunk of 32 its
// super-block's step; xsum is left to quantSums.
func quantK(xq []int8, dx, xsum, x []float32) {
	checkQuant(xq, dx, xsum, x)
	if len(x)%256 != 0 {
		panic("cpu: quantK wants whole super-blocks")
	}
	quantI8VNNI(&xq[0], &dx[0], &xsum[0], &x[0], len(x), 8, int(i8Natural))
	for c := len(x)/int8Block - 1; c >= 0; c-- {
		dx[c] = dx[c/8]
	}
}

// checkQuant checks the lengths that a quantiser's assembly trusts.
func checkQuant(xq []int8, dx, xsum, x []float32) {
	cols := len(x)
	if cols == 0 || cols%int8Block != 0 || len(xq) < cols || len(dx) < cols/int8Block || len(xsum) < cols/int8Block {
		panic("cpu: int8 quantisation operands do not match")
	}
}

//go:noescape
func quantI8VNNI(xq *int8, dx, xsum, x *float32, cols, gshift, order int)

// panelAsm is a panel kernel for one dtype of scales and biases.
type panelAsm func(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

// i8PanelKernel holds a panel kernel's assembly for each dtype of scales
// and biases (halfKind). A kernel for whole panels only leaves a partial
// one (the last rows of a matrix whose rows are not a multiple of 16, in
// none of the checkpoints seen) to panelI8Go.
type i8PanelKernel struct {
	bits  int
	asm   [3]panelAsm
	whole bool
	tiles bool // asm lays the codes out in tile order, in p.a (the amx set)
}

func (a i8PanelKernel) panel(p *i8Panel, w []uint32, scales, biases halfVec, rows, cols, group int) {
	chunks, groups := cols/int8Block, cols/max(group, 1)
	if rows == 0 {
		return
	}
	if rows > 16 || group&(group-1) != 0 || group < 32 || group > 128 || cols%group != 0 ||
		len(w) < ((rows-1)*cols+cols)*a.bits/32 || scales.len() < rows*groups || biases.len() < rows*groups ||
		len(p.w) < 16*cols || len(p.a) < 16*cols || len(p.s) < 16*chunks || len(p.b) < 16*chunks {
		panic("cpu: int8 panel operands do not match")
	}
	k := halfKind(scales)
	if halfKind(biases) != k || a.whole && rows < 16 {
		panelI8Go(p, w, scales, biases, rows, cols, group, a.bits)
		return
	}
	codes := &p.w[0]
	if a.tiles {
		codes, p.tiled = &p.a[0], true
	}
	a.asm[k](codes, &p.s[0], &p.b[0], &w[0], cols*a.bits/8, halfPtr(scales), halfPtr(biases), groups, rows, chunks,
		bits.TrailingZeros(uint(group)))
}

// vnniGemm is gemmI8VNNI as the set's gemmI8.
func vnniGemm(tile []float32, p *i8Panel, xq []int8, dx, xs []float32, _ []int32, np, nt int) {
	chunks := checkGemmI8(tile, p, xq, dx, xs, np, nt, 8)
	pf, pfn := p.prefetch()
	gemmI8VNNI(&tile[0], &p.w[0], &p.s[0], &p.b[0], &xq[0], &dx[0], &xs[0], np, nt, chunks, pf, pfn)
}

//go:noescape
func gemmI8VNNI(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx, xs *float32, np, nt, chunks int, pf *byte, pfn int)

// gemmQ6K is gemmQ6KVNNI as the set's gemmQ6K: it reads hs where the
// other batch kernels read xs.
func gemmQ6K(tile []float32, p *i8Panel, xq []int8, dx, xs []float32, hs []int32, np, nt int) {
	chunks := checkGemmQ6K(tile, p, xq, dx, xs, hs, np, nt, 8)
	pf, pfn := p.prefetch()
	gemmQ6KVNNI(&tile[0], &p.w[0], &p.s[0], &p.b[0], &xq[0], &dx[0], &hs[0], np, nt, chunks, pf, pfn)
}

// checkGemmQ6K is checkGemmI8 for a Q6_K batch kernel, which also reads
// hs, two sums a chunk of each input.
func checkGemmQ6K(tile []float32, p *i8Panel, xq []int8, dx, xs []float32, hs []int32, np, nt, step int) int {
	chunks := checkGemmI8(tile, p, xq, dx, xs, np, nt, step)
	if len(hs) < 2*chunks*np {
		panic("cpu: int8 gemm operands do not match")
	}
	return chunks
}

//go:noescape
func gemmQ6KVNNI(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx *float32, hs *int32, np, nt, chunks int, pf *byte, pfn int)

//go:noescape
func panelQ4SF32VNNI(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ4SBF16VNNI(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ4SF16VNNI(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ8SF32VNNI(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ8SBF16VNNI(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ8SF16VNNI(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func gemvQ4SF32VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ4SBF16VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ4SF16VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ8SF32VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ8SBF16VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ8SF16VNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func panelQ4SF32Tiles(a *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ4SBF16Tiles(a *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ4SF16Tiles(a *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ8SF32Tiles(a *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ8SBF16Tiles(a *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ8SF16Tiles(a *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)
