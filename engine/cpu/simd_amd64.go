package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// archKernels returns the sets this CPU runs: the float ones, the AVX2
// set when the CPU has AVX2, FMA and F16C and the AVX-512 one when it also
// has AVX-512 F, BW, VL and DQ; then the int8 ones (faster on q4/q8
// weights, int8.go): AVX2 alone, AVX-VNNI, AVX-512 VNNI. The last is the
// default.
func archKernels() []kernelSet {
	x := &cpu.X86
	if !x.HasAVX2 || !x.HasFMA || !x.HasF16C {
		return nil
	}
	avx512 := x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512DQ
	sets := []kernelSet{avx2Kernels}
	if avx512 {
		sets = append(sets, avx512Kernels)
	}
	sets = append(sets, avx2I8Kernels)
	if x.HasAVXVNNI {
		sets = append(sets, avxVNNIKernels)
	}
	if avx512 && x.HasAVX512VNNI {
		sets = append(sets, avx512VNNIKernels)
		if amxGranted() {
			sets = append(sets, amxKernels)
		}
	}
	return sets
}

var avx2Kernels = kernelSet{
	name:     "avx2",
	gemvF32:  asmGemv(gemvF32AVX2),
	gemvBF16: asmGemv(gemvBF16AVX2),
	gemvF16:  asmGemv(gemvF16AVX2),
	gemvT: func(out, w, a []float32) {
		if len(a) > 0 && len(out) > 0 {
			_ = w[len(a)*len(out)-1]
			gemvTAVX2(&out[0], &w[0], &a[0], len(a), len(out))
		}
	},
	gemvTF16:  asmGemvT(gemvTF16AVX2),
	gemvTBF16: asmGemvT(gemvTBF16AVX2),
	gemvQ8_0:  asmQ8(gemvQ8_0AVX2, false, gemvQ8_0Go),
	gemvTQ8_0: asmQ8(gemvTQ8_0AVX2, true, gemvTQ8_0Go),
	scores4:   [2]func(*float32, int, *uint16, *float32, int, int){attnScores4F16AVX2, attnScores4BF16AVX2},
	scores4Q8: attnScores4Q8AVX2,
	values4:   [2]func(*float32, *uint16, *float32, int, int, int){attnValues4F16AVX2, attnValues4BF16AVX2},
	values4Q8: attnValues4Q8AVX2,
	gemvQ4:    affineGemv{4, [3]affineAsm{gemvQ4SF32AVX2, gemvQ4SBF16AVX2, gemvQ4SF16AVX2}}.gemv,
	gemvQ8:    affineGemv{8, [3]affineAsm{gemvQ8SF32AVX2, gemvQ8SBF16AVX2, gemvQ8SF16AVX2}}.gemv,
	swiglu: func(gate, up []float32) {
		n := len(gate) &^ 7
		if n > 0 {
			_ = up[len(gate)-1]
			swigluAVX2(&gate[0], &up[0], n)
		}
		swigluGo(gate[n:], up[n:])
	},
	expSum: func(x []float32, m float32) float32 {
		n := len(x) &^ 7
		var sum float32
		if n > 0 {
			sum = expSumAVX2(&x[0], n, m)
		}
		return sum + expSumGo(x[n:], m)
	},
	maxF32: func(x []float32) float32 {
		n := len(x) &^ 7
		if n == 0 {
			return maxGo(x)
		}
		m := maxAVX2(&x[0], n)
		if n < len(x) {
			m = max(m, maxGo(x[n:]))
		}
		return m
	},
	widenBF16: asmWiden(widenBF16AVX2),
	widenF16:  asmWiden(widenF16AVX2),
	narrowF16: func(dst []uint16, src []float32) {
		if len(src) > 0 {
			_ = dst[len(src)-1]
			narrowF16AVX2(&dst[0], &src[0], len(src))
		}
	},
	dequantQ4: affineDequant{4, [3]dequantAsm{dequantQ4SF32AVX2, dequantQ4SBF16AVX2, dequantQ4SF16AVX2}}.dequant,
	dequantQ8: affineDequant{8, [3]dequantAsm{dequantQ8SF32AVX2, dequantQ8SBF16AVX2, dequantQ8SF16AVX2}}.dequant,
	gemm4:     asmGemm4(gemm4AVX2),
	dequantQ6K: func(dst []float32, src []byte) {
		n := len(src) / 210
		if n > 0 {
			_, _ = dst[256*n-1], src[210*n-1]
			dequantQ6_KAVX2(&dst[0], &src[0], n)
		}
	},
}

// The asm constructors below wrap assembly kernels, checking the slice
// lengths that the assembly trusts.

func asmWiden(f func(dst *float32, src *uint16, n int)) func([]float32, []uint16) {
	return func(dst []float32, src []uint16) {
		if len(src) > 0 {
			_ = dst[len(src)-1]
			f(&dst[0], &src[0], len(src))
		}
	}
}

// affineAsm is an affine gemv kernel for one dtype of scales and biases.
type affineAsm func(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

// affineGemv holds an affine gemv kernel's assembly for each dtype of
// scales and biases (halfKind).
type affineGemv struct {
	bits int
	asm  [3]affineAsm
}

func (a affineGemv) gemv(out []float32, w []uint32, scales, biases halfVec, x, xsum []float32, group int) {
	rows, cols := len(out), len(x)
	if rows == 0 {
		return
	}
	if group <= 0 || group%32 != 0 || cols == 0 || cols%group != 0 || len(w) < rows*cols*a.bits/32 ||
		scales.len() < rows*cols/group || biases.len() < rows*cols/group || len(xsum) < cols/group {
		panic("cpu: affine gemv operands do not match")
	}
	k := halfKind(scales)
	if halfKind(biases) != k {
		// Scales and biases in different dtypes (no checkpoint seen does
		// this) take the portable kernel.
		gemv := goKernels.gemvQ4
		if a.bits == 8 {
			gemv = goKernels.gemvQ8
		}
		gemv(out, w, scales, biases, x, xsum, group)
		return
	}
	a.asm[k](&out[0], &w[0], halfPtr(scales), halfPtr(biases), &x[0], &xsum[0], rows, cols, group)
}

// dequantAsm is an affine dequantisation kernel for one dtype of scales
// and biases.
type dequantAsm func(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

// affineDequant holds an affine dequantisation kernel's assembly for each
// dtype of scales and biases (halfKind).
type affineDequant struct {
	bits int
	asm  [3]dequantAsm
}

func (a affineDequant) dequant(dst []float32, kw int, w []uint32, wstride int, scales, biases halfVec, sstride, n, group int) {
	if n <= 0 || kw <= 0 {
		return
	}
	last := (n-1)*sstride + kw/group
	if group <= 0 || group%32 != 0 || kw%group != 0 || len(dst) < n*kw || len(w) < (n-1)*wstride+kw*a.bits/32 ||
		scales.len() < last || biases.len() < last {
		panic("cpu: affine dequantisation operands do not match")
	}
	k := halfKind(scales)
	if halfKind(biases) != k {
		// Scales and biases in different dtypes (no checkpoint seen does
		// this) take the portable kernel.
		dequant := goKernels.dequantQ4
		if a.bits == 8 {
			dequant = goKernels.dequantQ8
		}
		dequant(dst, kw, w, wstride, scales, biases, sstride, n, group)
		return
	}
	a.asm[k](&dst[0], kw, &w[0], wstride, halfPtr(scales), halfPtr(biases), sstride, n, group)
}

func asmGemm4(f func(out *float32, ldo, n int, w *float32, stride int, xT *float32, np, k int)) func([]float32, int, int, []float32, int, []float32, int) {
	return func(out []float32, ldo, n int, w []float32, stride int, xT []float32, np int) {
		if n <= 0 {
			return
		}
		if np%16 != 0 || n > np || ldo < 4 || len(xT)%np != 0 || len(out) < (n-1)*ldo+4 {
			panic("cpu: gemm4 operands do not match")
		}
		k := len(xT) / np
		if k == 0 {
			for t := 0; t < n; t++ {
				clear(out[t*ldo : t*ldo+4])
			}
			return
		}
		if stride < k || len(w) < 3*stride+k {
			panic("cpu: gemm4 weights too short")
		}
		f(&out[0], ldo, n, &w[0], stride, &xT[0], np, k)
	}
}

// prefetch asks for the n bytes at p to be brought into the cache: the
// rows that gemm dequantises next, which the hardware prefetcher does not
// see coming while gemm4 is busy with the current ones.
//
//go:noescape
func prefetch(p unsafe.Pointer, n int)

// AVX2 kernels: dense_avx2_amd64.s, affine_avx2_amd64.s, exp_avx2_amd64.s,
// gemm_avx2_amd64.s. The affine ones (gemvQ4S…, dequantQ8S…) come in one
// form per dtype of scales: f32, bf16, f16.

//go:noescape
func gemvF32AVX2(out, w, x *float32, rows, cols int)

//go:noescape
func gemvTAVX2(out, w, a *float32, rows, cols int)

//go:noescape
func gemvBF16AVX2(out *float32, w *uint16, x *float32, rows, cols int)

//go:noescape
func gemvF16AVX2(out *float32, w *uint16, x *float32, rows, cols int)

//go:noescape
func swigluAVX2(gate, up *float32, n int)

//go:noescape
func expSumAVX2(x *float32, n int, m float32) float32

//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func widenF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func narrowF16AVX2(dst *uint16, src *float32, n int)

//go:noescape
func gemvQ4SF32AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func gemvQ4SBF16AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func gemvQ4SF16AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func gemvQ8SF32AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func gemvQ8SBF16AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func gemvQ8SF16AVX2(out *float32, w *uint32, scales, biases unsafe.Pointer, x, xsum *float32, rows, cols, group int)

//go:noescape
func dequantQ4SF32AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func dequantQ4SBF16AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func dequantQ4SF16AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func dequantQ8SF32AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func dequantQ8SBF16AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func dequantQ8SF16AVX2(dst *float32, kw int, w *uint32, wstride int, scales, biases unsafe.Pointer, sstride, rows, group int)

//go:noescape
func gemm4AVX2(out *float32, ldo, n int, w *float32, stride int, xT *float32, np, k int)
