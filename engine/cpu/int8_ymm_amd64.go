package cpu

import "unsafe"

// The 256-bit int8 sets (int8_ymm_amd64.s, generated with
// int8_vnni_amd64.s): the AVX2 set with the affine kernels over int8
// activations, for CPUs without AVX-512. avxVNNIKernels multiplies bytes
// with AVX-VNNI's VPDPBUSD (Intel cores since Alder Lake), avx2I8Kernels
// with AVX2's VPMADDUBSW and VPMADDWD (AMD Zen 2 and 3, older Intel).
var (
	avxVNNIKernels = ymmI8Kernels("avxvnni",
		[2][3]i8GemvAsm{
			{gemvQ4SF32AVXVNNI, gemvQ4SBF16AVXVNNI, gemvQ4SF16AVXVNNI},
			{gemvQ8SF32AVXVNNI, gemvQ8SBF16AVXVNNI, gemvQ8SF16AVXVNNI}},
		[2]gemmI8Asm{gemmI8AVXVNNI, gemmI8AVXVNNI}, gemmQ6KAVXVNNI)
	avx2I8Kernels = ymmI8Kernels("avx2i8",
		[2][3]i8GemvAsm{
			{gemvQ4SF32MADD, gemvQ4SBF16MADD, gemvQ4SF16MADD},
			{gemvQ8SF32MADD, gemvQ8SBF16MADD, gemvQ8SF16MADD}},
		[2]gemmI8Asm{gemmQ4I8MADD, gemmQ8I8MADD}, gemmQ6KMADD)
)

func ymmI8Kernels(name string, gemv [2][3]i8GemvAsm, gemm [2]gemmI8Asm, q6k gemmQ6KAsm) kernelSet {
	ks := avx2Kernels
	ks.name = name
	ks.gemvQ4I8 = i8Gemv{4, gemv[0], &ymmIndex}.gemv
	ks.gemvQ8I8 = i8Gemv{8, gemv[1], &ymmIndex}.gemv
	ks.quantI8 = quantI8YMM
	ks.gemvBlocksI8 = blocksI8AVX2
	ks.prefetches = true
	ks.panelBlocksI8 = blockPanelsAVX2
	ks.panelI8 = [2]panelI8{
		i8PanelKernel{4, [3]panelAsm{panelQ4SF32AVX2, panelQ4SBF16AVX2, panelQ4SF16AVX2}, true, false}.panel,
		i8PanelKernel{8, [3]panelAsm{panelQ8SF32AVX2, panelQ8SBF16AVX2, panelQ8SF16AVX2}, true, false}.panel,
	}
	ks.gemmI8 = [2]gemmI8{i8Gemm(gemm[0]), i8Gemm(gemm[1])}
	ks.gemmQ6K = func(tile []float32, p *i8Panel, xq []int8, dx, xs []float32, hs []int32, np, nt int) {
		chunks := checkGemmQ6K(tile, p, xq, dx, xs, hs, np, nt, 4)
		q6k(&tile[0], &p.w[0], &p.s[0], &p.b[0], &xq[0], &dx[0], &hs[0], np, nt, chunks)
	}
	return ks
}

// i8Gemm is a 256-bit batch kernel as a gemmI8; they take four inputs a
// pass.
func i8Gemm(f gemmI8Asm) gemmI8 { return asmGemm(f, 4) }

// gemmQ6KAsm is a 256-bit Q6_K batch kernel (gemmQ6K in kernelSet).
type gemmQ6KAsm func(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx *float32, hs *int32, np, nt, chunks int)

func quantI8YMM(xq []int8, dx, xsum, x []float32, order i8Order) {
	checkQuant(xq, dx, xsum, x)
	quantI8AVX2(&xq[0], &dx[0], &xsum[0], &x[0], len(x), int(order))
}

// ymmIndex[bits/8][log2(group)-5] are the VPERMPS index vectors of a
// 256-bit gemv: the chunk of each int32 lane of the two halves of a q4
// block (chunks 0 and 1, then 2 and 3), then for each eight chunks of
// eight groups the group of each chunk.
var ymmIndex = func() (t [2][3][48]int32) {
	for b := range 2 {
		for gs := range 3 {
			for l := range int32(8) {
				t[b][gs][l], t[b][gs][8+l] = l/4, 2+l/4
			}
			for c := range int32(8 << gs) {
				t[b][gs][16+c] = c >> gs
			}
		}
	}
	return t
}()

//go:noescape
func gemvQ4SF32AVXVNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ4SBF16AVXVNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ4SF16AVXVNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ8SF32AVXVNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ8SBF16AVXVNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ8SF16AVXVNNI(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ4SF32MADD(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ4SBF16MADD(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ4SF16MADD(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ8SF32MADD(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ8SBF16MADD(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemvQ8SF16MADD(out *float32, w *uint32, scales, biases unsafe.Pointer, xq *int8, dx, xsum, f *float32, idx *int32, rows, cols, gshift, ahead int)

//go:noescape
func gemmI8AVXVNNI(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx, xs *float32, np, nt, chunks int)

//go:noescape
func gemmQ4I8MADD(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx, xs *float32, np, nt, chunks int)

//go:noescape
func gemmQ8I8MADD(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx, xs *float32, np, nt, chunks int)

//go:noescape
func panelQ4SF32AVX2(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ4SBF16AVX2(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ4SF16AVX2(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ8SF32AVX2(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ8SBF16AVX2(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func panelQ8SF16AVX2(wp *uint8, sp, bp *float32, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, chunks, gshift int)

//go:noescape
func quantI8AVX2(xq *int8, dx, xsum, x *float32, cols, order int)

//go:noescape
func gemmQ6KAVXVNNI(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx *float32, hs *int32, np, nt, chunks int)

//go:noescape
func gemmQ6KMADD(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx *float32, hs *int32, np, nt, chunks int)
