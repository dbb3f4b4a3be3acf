package cpu

import (
	"fmt"
	"os"
)

// Activations (Options.Activations) says how an int8 kernel set takes
// its inputs: "int8", rounded to int8 in blocks of 32 as llama.cpp does,
// or "int8x2", which adds a second pass over the same weights with the
// rounding error of the first, itself rounded to int8 in blocks of 32.
// The two passes' sum is the product with x rounded to about 15 bits:
// on SmolLM2-135M-Instruct the next-token distribution moves from the
// float path's by a mean KLD of 5e-7 instead of 0.0024–0.0037, with the
// same top token (docs/speed.md). Every kernel, set and weight type
// takes it unchanged: the second pass is the same integer kernel on
// another input (docs/RATIONALE.md, "Integer activations, twice").
const (
	ActivationsInt8   = "int8"
	ActivationsInt8x2 = "int8x2"
)

// chooseActivations returns whether Options.Activations (or, when it is
// "", DRIFTWOOD_ACTIVATIONS) asks for the residual pass on ks, refusing
// a name it does not know. A float set takes either as it is: its
// products are more exact than both.
func chooseActivations(name string, ks *kernelSet) (bool, error) {
	from := "activations"
	if name == "" {
		name, from = os.Getenv("DRIFTWOOD_ACTIVATIONS"), "DRIFTWOOD_ACTIVATIONS"
	}
	switch name {
	case "", ActivationsInt8:
		return false, nil
	case ActivationsInt8x2:
		return ks.int8(), nil
	}
	return false, fmt.Errorf("%s %q: want %s or %s", from, name, ActivationsInt8, ActivationsInt8x2)
}

// DefaultActivations is Backend.Activations of a backend with
// Options.Kernels and Options.Activations "".
func DefaultActivations() (string, error) {
	ks, err := chooseKernels("")
	if err != nil {
		return "", err
	}
	residual, err := chooseActivations("", ks)
	if err != nil {
		return "", err
	}
	return activationsName(ks, residual), nil
}

func activationsName(ks *kernelSet, residual bool) string {
	switch {
	case !ks.int8():
		return "float"
	case residual:
		return ActivationsInt8x2
	}
	return ActivationsInt8
}

// roundingError sets r[k] to x[k] less its int8 value, dx·xq, with xq in
// order as quantI8 wrote it.
func roundingError(r, x []float32, xq []int8, dx []float32, order i8Order) {
	for k, v := range x {
		r[k] = v - dx[k/int8Block]*float32(xq[order.pos(k, len(x))])
	}
}

// gemvTwice is p.m.gemv of in plus that of its residual, sixteen rows
// at a time, so that the second pass reads the weights from the cache
// the first brought them to.
func gemvTwice(p part, in *input, lo, hi int, s *scratch) {
	for r0 := lo; r0 < hi; r0 += 16 {
		r1 := min(r0+16, hi)
		p.m.gemv(p.out, in, r0, r1, s)
		p.m.gemv(s.res, in.res, r0, r1, s)
		add(p.out[r0:r1], s.res[r0:r1])
	}
}
