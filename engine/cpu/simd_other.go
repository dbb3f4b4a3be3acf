//go:build !amd64 && !arm64

package cpu

import "unsafe"

// archKernels lists the vector kernel sets of this architecture: none, the
// portable kernels serve.
func archKernels() []kernelSet { return nil }

// prefetch is a hint that the portable code does without.
func prefetch(unsafe.Pointer, int) {}
