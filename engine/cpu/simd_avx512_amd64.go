package cpu

import "unsafe"

// avx512Kernels is the AVX2 set with AVX-512 forms of the kernels that are
// bound by arithmetic rather than memory: the affine ones, gemm4 and
// attention's value products (affine_avx512_amd64.s, gemm_avx512_amd64.s,
// kv_avx512_amd64.s).
var avx512Kernels = func() kernelSet {
	ks := avx2Kernels
	ks.name = "avx512"
	ks.gemvQ4 = affineGemv{4, [3]affineAsm{gemvQ4SF32AVX512, gemvQ4SBF16AVX512, gemvQ4SF16AVX512}}.gemv
	ks.gemvQ8 = affineGemv{8, [3]affineAsm{gemvQ8SF32AVX512, gemvQ8SBF16AVX512, gemvQ8SF16AVX512}}.gemv
	ks.dequantQ4 = affineDequant{4, [3]dequantAsm{dequantQ4SF32AVX512, dequantQ4SBF16AVX512, dequantQ4SF16AVX512}}.dequant
	ks.dequantQ8 = affineDequant{8, [3]dequantAsm{dequantQ8SF32AVX512, dequantQ8SBF16AVX512, dequantQ8SF16AVX512}}.dequant
	ks.gemm4 = asmGemm4(gemm4AVX512)
	ks.values4 = [2]func(*float32, *uint16, *float32, int, int, int){
		values4X(attnValues4F16AVX512, attnValues4F16AVX2), values4X(attnValues4BF16AVX512, attnValues4BF16AVX2)}
	return ks
}()

//go:noescape
func gemvQ4SF32AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func gemvQ4SBF16AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func gemvQ4SF16AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func gemvQ8SF32AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func gemvQ8SBF16AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func gemvQ8SF16AVX512(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func dequantQ4SF32AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func dequantQ4SBF16AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func dequantQ4SF16AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func dequantQ8SF32AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func dequantQ8SBF16AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func dequantQ8SF16AVX512(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func gemm4AVX512(out *float32, ldo, n int, w *float32, stride int, xT *float32, np, k int)
