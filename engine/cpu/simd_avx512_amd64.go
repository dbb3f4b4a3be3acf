package cpu

import "unsafe"

// avx512Kernels replaces the AVX2 kernels whose loops are bound by
// arithmetic: the affine ones and gemm4.
var avx512Kernels = func() kernelSet {
	ks := avx2Kernels
	ks.name = "avx512"
	ks.gemvQ4 = affineAVX512[0].gemv
	ks.gemvQ8 = affineAVX512[1].gemv
	ks.dequantQ4 = func(dst []float32, w []uint32, scales, biases []float32, group int) {
		if checkDequant(len(dst), len(w), len(scales), len(biases), group, 4) {
			dequantQ4AVX512(&dst[0], &w[0], &scales[0], &biases[0], len(scales), group)
		}
	}
	ks.dequantQ8 = func(dst []float32, w []uint32, scales, biases []float32, group int) {
		if checkDequant(len(dst), len(w), len(scales), len(biases), group, 8) {
			dequantQ8AVX512(&dst[0], &w[0], &scales[0], &biases[0], len(scales), group)
		}
	}
	ks.gemm4 = asmGemm4(gemm4AVX512)
	return ks
}()

var affineAVX512 = [2]affineGemv{
	{4, [3]func(*float32, *uint32, unsafe.Pointer, *float32, int, int, int){gemvQ4SF32AVX512, gemvQ4SBF16AVX512, gemvQ4SF16AVX512}},
	{8, [3]func(*float32, *uint32, unsafe.Pointer, *float32, int, int, int){gemvQ8SF32AVX512, gemvQ8SBF16AVX512, gemvQ8SF16AVX512}},
}

//go:noescape
func gemvQ4SF32AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func gemvQ4SBF16AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func gemvQ4SF16AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func gemvQ8SF32AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func gemvQ8SBF16AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func gemvQ8SF16AVX512(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func dequantQ4AVX512(dst *float32, w *uint32, scales, biases *float32, n, group int)

//go:noescape
func dequantQ8AVX512(dst *float32, w *uint32, scales, biases *float32, n, group int)

//go:noescape
func gemm4AVX512(out *float32, ldo, n, acc int, w *float32, stride int, xT *float32, np, k int)
