package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// archKernels returns the AVX2 set when the CPU has AVX2, FMA and F16C,
// and after it the AVX-512 set when it also has AVX-512 F, BW, VL and DQ.
func archKernels() []kernelSet {
	x := &cpu.X86
	if !x.HasAVX2 || !x.HasFMA || !x.HasF16C {
		return nil
	}
	sets := []kernelSet{avx2Kernels}
	if x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512DQ {
		sets = append(sets, avx512Kernels)
	}
	return sets
}

// The wrappers below check the slice lengths that the assembly trusts.

var avx2Kernels = kernelSet{
	name: "avx2",
	dot: func(a, b []float32) float32 {
		var s float32
		if len(a) > 0 {
			_ = b[len(a)-1]
			gemvF32AVX2(&s, &a[0], &b[0], 1, len(a))
		}
		return s
	},
	axpy: func(dst []float32, a float32, x []float32) {
		if len(dst) > 0 {
			_ = x[len(dst)-1]
			axpyAVX2(&dst[0], &x[0], a, len(dst))
		}
	},
	gemvF32: func(out, w, x []float32) {
		if checkGemv(out, len(w), x) {
			gemvF32AVX2(&out[0], &w[0], &x[0], len(out), len(x))
		}
	},
	gemvT: func(out, w, a []float32) {
		if len(a) == 0 {
			clear(out)
			return
		}
		if len(out) > 0 {
			_ = w[len(a)*len(out)-1]
			gemvTAVX2(&out[0], &w[0], &a[0], len(a), len(out))
		}
	},
	gemvBF16: func(out []float32, w []uint16, x []float32) {
		if checkGemv(out, len(w), x) {
			gemvBF16AVX2(&out[0], &w[0], &x[0], len(out), len(x))
		}
	},
	gemvF16: func(out []float32, w []uint16, x []float32) {
		if checkGemv(out, len(w), x) {
			gemvF16AVX2(&out[0], &w[0], &x[0], len(out), len(x))
		}
	},
	gemvQ4: affineAVX2[0].gemv,
	gemvQ8: affineAVX2[1].gemv,
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
	widenBF16: func(dst []float32, src []uint16) {
		if len(src) > 0 {
			_ = dst[len(src)-1]
			widenBF16AVX2(&dst[0], &src[0], len(src))
		}
	},
	widenF16: func(dst []float32, src []uint16) {
		if len(src) > 0 {
			_ = dst[len(src)-1]
			widenF16AVX2(&dst[0], &src[0], len(src))
		}
	},
	dequantQ4: func(dst []float32, w []uint32, scales, biases []float32, group int) {
		if checkDequant(len(dst), len(w), len(scales), len(biases), group, 4) {
			dequantQ4AVX2(&dst[0], &w[0], &scales[0], &biases[0], len(scales), group)
		}
	},
	dequantQ8: func(dst []float32, w []uint32, scales, biases []float32, group int) {
		if checkDequant(len(dst), len(w), len(scales), len(biases), group, 8) {
			dequantQ8AVX2(&dst[0], &w[0], &scales[0], &biases[0], len(scales), group)
		}
	},
	gemm4: asmGemm4(gemm4AVX2),
}

// checkGemv reports whether there is work, and panics unless w holds
// len(out) rows of len(x) weights.
func checkGemv(out []float32, nw int, x []float32) bool {
	if len(out) == 0 {
		return false
	}
	if len(x) == 0 {
		clear(out)
		return false
	}
	if nw < len(out)*len(x) {
		panic("cpu: gemv weights shorter than rows×cols")
	}
	return true
}

// affineGemv is the assembly of an affine gemv kernel, one function per
// scale dtype: f32, bf16, f16.
type affineGemv struct {
	bits int
	asm  [3]func(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)
}

var affineAVX2 = [2]affineGemv{
	{4, [3]func(*float32, *uint32, unsafe.Pointer, *float32, int, int, int){gemvQ4SF32AVX2, gemvQ4SBF16AVX2, gemvQ4SF16AVX2}},
	{8, [3]func(*float32, *uint32, unsafe.Pointer, *float32, int, int, int){gemvQ8SF32AVX2, gemvQ8SBF16AVX2, gemvQ8SF16AVX2}},
}

func (a *affineGemv) gemv(out []float32, w []uint32, scales halfVec, x []float32, group int) {
	rows, cols := len(out), len(x)
	if rows == 0 || cols == 0 {
		return
	}
	if group <= 0 || group%32 != 0 || cols%group != 0 || len(w) < rows*cols*a.bits/32 || scales.len() < rows*cols/group {
		panic("cpu: affine gemv operands do not match")
	}
	switch {
	case scales.f32 != nil:
		a.asm[0](&out[0], &w[0], unsafe.Pointer(&scales.f32[0]), &x[0], rows, cols, group)
	case scales.f16:
		a.asm[2](&out[0], &w[0], unsafe.Pointer(&scales.u16[0]), &x[0], rows, cols, group)
	default:
		a.asm[1](&out[0], &w[0], unsafe.Pointer(&scales.u16[0]), &x[0], rows, cols, group)
	}
}

// checkDequant is checkAffine for dequantising len(scales) groups.
func checkDequant(dst, words, scales, biases, group, bits int) bool {
	if scales == 0 {
		return false
	}
	if group <= 0 || group%32 != 0 || biases < scales || dst < scales*group || words < scales*group*bits/32 {
		panic("cpu: affine dequantisation operands do not match")
	}
	return true
}

// asmGemm4 wraps a gemm4 assembly function, checking the operands it
// trusts.
func asmGemm4(f func(out *float32, ldo, n, acc int, w *float32, stride int, xT *float32, np, k int)) func([]float32, int, int, bool, []float32, int, []float32, int) {
	return func(out []float32, ldo, n int, acc bool, w []float32, stride int, xT []float32, np int) {
		if n <= 0 {
			return
		}
		if np%16 != 0 || n > np || ldo < 4 || len(xT)%np != 0 || len(out) < (n-1)*ldo+4 {
			panic("cpu: gemm4 operands do not match")
		}
		k := len(xT) / np
		if k == 0 {
			if !acc {
				for t := 0; t < n; t++ {
					clear(out[t*ldo : t*ldo+4])
				}
			}
			return
		}
		if stride < k || len(w) < 3*stride+k {
			panic("cpu: gemm4 weights too short")
		}
		a := 0
		if acc {
			a = 1
		}
		f(&out[0], ldo, n, a, &w[0], stride, &xT[0], np, k)
	}
}

// prefetch asks for the n bytes at p to be brought into the cache: the
// rows that gemm dequantises next, which the hardware prefetcher does not
// see coming while gemm4 is busy with the current ones.
//
//go:noescape
func prefetch(p unsafe.Pointer, n int)

//go:noescape
func gemvF32AVX2(out, w, x *float32, rows, cols int)

//go:noescape
func gemvTAVX2(out, w, a *float32, rows, cols int)

//go:noescape
func axpyAVX2(dst, x *float32, a float32, n int)

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
func gemvQ4SF32AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func gemvQ4SBF16AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func gemvQ4SF16AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func gemvQ8SF32AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func gemvQ8SBF16AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func gemvQ8SF16AVX2(out *float32, w *uint32, scales unsafe.Pointer, x *float32, rows, cols, group int)

//go:noescape
func dequantQ4AVX2(dst *float32, w *uint32, scales, biases *float32, n, group int)

//go:noescape
func dequantQ8AVX2(dst *float32, w *uint32, scales, biases *float32, n, group int)

//go:noescape
func gemm4AVX2(out *float32, ldo, n, acc int, w *float32, stride int, xT *float32, np, k int)
