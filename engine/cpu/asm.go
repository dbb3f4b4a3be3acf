//go:build amd64 || arm64

package cpu

import "unsafe"

// The helpers below serve the assembly kernels of both architectures.

// asmGemv wraps a gemv kernel, checking the slice lengths that the
// assembly trusts.
func asmGemv[T float32 | uint16](f func(out *float32, w *T, x *float32, rows, cols int)) func([]float32, []T, []float32) {
	return func(out []float32, w []T, x []float32) {
		if len(out) == 0 {
			return
		}
		if len(x) == 0 {
			clear(out)
			return
		}
		if len(w) < len(out)*len(x) {
			panic("cpu: gemv weights shorter than rows×cols")
		}
		f(&out[0], &w[0], &x[0], len(out), len(x))
	}
}

// halfKind numbers a halfVec's dtype as the affine kernels' arrays of
// assembly do: f32, bf16, f16.
func halfKind(h halfVec) int {
	switch {
	case h.f32 != nil:
		return 0
	case h.f16:
		return 2
	}
	return 1
}

// halfPtr is the address of a halfVec's first element.
func halfPtr(h halfVec) unsafe.Pointer {
	if h.f32 != nil {
		return unsafe.Pointer(&h.f32[0])
	}
	return unsafe.Pointer(&h.u16[0])
}
