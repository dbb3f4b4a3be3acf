package cpu

import (
	"fmt"
	"os"
	"strings"
)

// Integer activations (docs/RATIONALE.md, "Integer activations"): for a
// single input, an affine matrix's kernels may take x quantised to int8 in
// blocks of int8Block, one step dx per block, instead of floats. Row r
// times x is then
//
//	Σ_c scale[r,g(c)]·dx[c]·Σ_{k∈c} q[r,k]·xq[k] + bias[r,g(c)]·xsum[c]
//
// over the blocks c (g(c) the weight group that holds c), where the inner
// sum is exact in int32 and xsum, the float sum of the block of x, keeps
// the bias term exact. This is llama.cpp's scheme (Q8_0 activations, also
// blocks of 32); the float kernels stay as the reference, chosen with
// DRIFTWOOD_KERNELS (see kernelByName).

// int8Block is how many activations share one int8 step: the smallest MLX
// group, so a block never straddles two groups.
const int8Block = 32

// int8Enabled reports whether the kernel set in use multiplies quantised
// weights with int8 activations.
func int8Enabled() bool { return kern.gemvQ4I8 != nil }

// q4I8Index is the position of element k of a row of cols in the int8 q4
// order: blocks of 128 hold the even elements of their four 32-element
// chunks, then the odd ones (how the low and high nibbles of 64 code bytes
// come out); chunks past the last whole block are in nibble order.
func q4I8Index(k, cols int) int {
	if k >= cols&^127 {
		return q4Index(k)
	}
	return k&^127 + k&1*64 + k>>5&3*16 + k&31>>1
}

// kernelByName returns the kernel set named by DRIFTWOOD_KERNELS (see
// SelectKernels), or the fastest set when it is unset or names none this
// CPU runs; DRIFTWOOD_NOSIMD=1 means the portable set.
func kernelByName() kernelSet {
	name := os.Getenv("DRIFTWOOD_KERNELS")
	if os.Getenv("DRIFTWOOD_NOSIMD") == "1" {
		name = goKernels.name
	}
	if ks, ok := lookupKernels(name); ok {
		return ks
	}
	return kernelSets[len(kernelSets)-1]
}

// lookupKernels finds a kernel set this CPU runs by name; "float" is the
// fastest one that multiplies quantised weights in float.
func lookupKernels(name string) (kernelSet, bool) {
	for i := len(kernelSets) - 1; i >= 0; i-- {
		ks := kernelSets[i]
		if ks.name == name || name == "float" && ks.gemvQ4I8 == nil {
			return ks, true
		}
	}
	return kernelSet{}, false
}

// SelectKernels makes the named kernel set the one in use: one of those
// this CPU runs (go, avx2, avx512, avx512vnni) or "float", the fastest one
// that keeps quantised weights' products in float, the reference the
// golden data was made with. It must not be called while a Forward runs.
func SelectKernels(name string) error {
	ks, ok := lookupKernels(name)
	if !ok {
		names := make([]string, len(kernelSets))
		for i, ks := range kernelSets {
			names[i] = ks.name
		}
		return fmt.Errorf("no kernel set %q on this CPU (it runs %s, or float)", name, strings.Join(names, ", "))
	}
	kern = ks
	return nil
}

// gemvI8Go is the integer maths of the int8 kernels in scalar Go: their
// reference in the tests and the kernel for scales and biases of different
// dtypes (no checkpoint seen has them).
func gemvI8Go(out []float32, w []uint32, scales, biases halfVec, xq []int8, dx, xsum []float32, group, bits int) {
	cols := len(xq)
	wpr, groups, mask := cols*bits/32, cols/group, uint32(1)<<bits-1
	for r := range out {
		words := w[r*wpr : (r+1)*wpr]
		var sum float32
		for c := range cols / int8Block {
			var acc int32
			for k := c * int8Block; k < (c+1)*int8Block; k++ {
				q := int32(words[k*bits/32] >> (k * bits % 32) & mask)
				i := k
				if bits == 4 {
					i = q4I8Index(k, cols)
				}
				acc += q * int32(xq[i])
			}
			j := r*groups + c*int8Block/group
			sum += scales.at(j)*dx[c]*float32(acc) + biases.at(j)*xsum[c]
		}
		out[r] = sum
	}
}
