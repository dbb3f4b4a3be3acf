package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// archKernels returns the NEON set (every arm64 CPU has NEON), then the
// NEON dot-product set when the CPU has the ARMv8.2 dot product (SDOT).
func archKernels() []kernelSet {
	if !cpu.ARM64.HasASIMDDP {
		return []kernelSet{neonKernels}
	}
	return []kernelSet{neonKernels, neonDotKernels}
}

// neonKernels is the portable set with the dense gemv in NEON
// (dense_arm64.s).
var neonKernels = func() kernelSet {
	ks := goKernels
	ks.name = "neon"
	ks.gemvF32 = asmGemv(gemvF32NEON)
	ks.gemvBF16 = asmGemv(gemvBF16NEON)
	ks.gemvF16 = asmGemv(gemvF16NEON)
	return ks
}()

// prefetch is a hint that the arm64 kernels do without.
func prefetch(unsafe.Pointer, int) {}

//go:noescape
func gemvF32NEON(out, w, x *float32, rows, cols int)

//go:noescape
func gemvBF16NEON(out *float32, w *uint16, x *float32, rows, cols int)

//go:noescape
func gemvF16NEON(out *float32, w *uint16, x *float32, rows, cols int)
