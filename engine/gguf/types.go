package gguf

import (
	"fmt"
	"math"
	"strings"
)

// Type is a tensor's element type: a ggml_type value (ggml.h).
type Type uint32

// The ggml types. Driftwood reads the nine that Supported names; the
// others are named so that a message can say what a file holds, and
// sized so that a file holding them can still be opened and checked.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q4_2    Type = 4 // removed from ggml in 2023
	Q4_3    Type = 5 // removed from ggml in 2023
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	// Q4_0_4_4 to IQ4_NL_8_8 were repacked layouts that ggml removed from
	// GGUF files in 2024 (it now repacks Q4_0 and IQ4_NL when loading).
	Q4_0_4_4   Type = 31
	Q4_0_4_8   Type = 32
	Q4_0_8_8   Type = 33
	TQ1_0      Type = 34
	TQ2_0      Type = 35
	IQ4_NL_4_4 Type = 36
	IQ4_NL_4_8 Type = 37
	IQ4_NL_8_8 Type = 38
	MXFP4      Type = 39
	NVFP4      Type = 40
	Q1_0       Type = 41
)

// typeInfo is a type's name and its block: weights per block and bytes
// per block, 0 for the removed types, which no reader can size.
type typeInfo struct {
	name         string
	block, bytes int
}

// types holds what ggml (ggml.c's type_traits) and gguf-py
// (GGML_QUANT_SIZES) say of each type.
var types = [...]typeInfo{
	F32:        {"F32", 1, 4},
	F16:        {"F16", 1, 2},
	Q4_0:       {"Q4_0", 32, 18},
	Q4_1:       {"Q4_1", 32, 20},
	Q4_2:       {"Q4_2", 0, 0},
	Q4_3:       {"Q4_3", 0, 0},
	Q5_0:       {"Q5_0", 32, 22},
	Q5_1:       {"Q5_1", 32, 24},
	Q8_0:       {"Q8_0", 32, 34},
	Q8_1:       {"Q8_1", 32, 36},
	Q2_K:       {"Q2_K", 256, 84},
	Q3_K:       {"Q3_K", 256, 110},
	Q4_K:       {"Q4_K", 256, 144},
	Q5_K:       {"Q5_K", 256, 176},
	Q6_K:       {"Q6_K", 256, 210},
	Q8_K:       {"Q8_K", 256, 292},
	IQ2_XXS:    {"IQ2_XXS", 256, 66},
	IQ2_XS:     {"IQ2_XS", 256, 74},
	IQ3_XXS:    {"IQ3_XXS", 256, 98},
	IQ1_S:      {"IQ1_S", 256, 50},
	IQ4_NL:     {"IQ4_NL", 32, 18},
	IQ3_S:      {"IQ3_S", 256, 110},
	IQ2_S:      {"IQ2_S", 256, 82},
	IQ4_XS:     {"IQ4_XS", 256, 136},
	I8:         {"I8", 1, 1},
	I16:        {"I16", 1, 2},
	I32:        {"I32", 1, 4},
	I64:        {"I64", 1, 8},
	F64:        {"F64", 1, 8},
	IQ1_M:      {"IQ1_M", 256, 56},
	BF16:       {"BF16", 1, 2},
	Q4_0_4_4:   {"Q4_0_4_4", 0, 0},
	Q4_0_4_8:   {"Q4_0_4_8", 0, 0},
	Q4_0_8_8:   {"Q4_0_8_8", 0, 0},
	TQ1_0:      {"TQ1_0", 256, 54},
	TQ2_0:      {"TQ2_0", 256, 66},
	IQ4_NL_4_4: {"IQ4_NL_4_4", 0, 0},
	IQ4_NL_4_8: {"IQ4_NL_4_8", 0, 0},
	IQ4_NL_8_8: {"IQ4_NL_8_8", 0, 0},
	MXFP4:      {"MXFP4", 32, 17},
	NVFP4:      {"NVFP4", 64, 36},
	Q1_0:       {"Q1_0", 128, 18},
}

// supported are the types Driftwood reads, in the order messages list
// them.
var supported = []Type{F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K}

func (t Type) info() typeInfo {
	if int(t) < len(types) {
		return types[t]
	}
	return typeInfo{}
}

// named reports whether ggml defines (or once defined) t.
func (t Type) named() bool { return t.info().name != "" }

// String is ggml's name for t ("Q4_K", "IQ2_XXS"), or "type 99" for a
// value ggml does not define.
func (t Type) String() string {
	if t.named() {
		return t.info().name
	}
	return fmt.Sprintf("type %d", uint32(t))
}

// Supported reports whether Driftwood reads tensors of type t: F32, F16,
// BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K and Q6_K.
func (t Type) Supported() bool {
	for _, s := range supported {
		if t == s {
			return true
		}
	}
	return false
}

// BlockSize is the number of weights in one block of t: 1 for the plain
// types (F32, F16, BF16, the integers), 32 for Q4_0 and its kin, 256 for
// the k-quants. It is 0 for a type that cannot be sized: one ggml removed,
// or a value it does not define.
func (t Type) BlockSize() int { return t.info().block }

// BlockBytes is the size in bytes of one block of t, 0 where BlockSize
// is 0.
func (t Type) BlockBytes() int { return t.info().bytes }

// RowBytes is the size in bytes of n weights of type t.
//
// # Errors
//
// n negative or not a multiple of the block size, a type that cannot be
// sized, or a size past the largest int.
func (t Type) RowBytes(n int) (int, error) {
	bs, bb := t.BlockSize(), t.BlockBytes()
	switch {
	case bs == 0:
		return 0, fmt.Errorf("%s has no known size", t)
	case n < 0 || n%bs != 0:
		return 0, fmt.Errorf("%s holds weights in blocks of %d, and %d is not a multiple of %d", t, bs, n, bs)
	case n/bs > math.MaxInt/bb:
		return 0, fmt.Errorf("%d weights of %s take more bytes than an int holds", n, t)
	}
	return n / bs * bb, nil
}

// supportedList is "F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K".
func supportedList() string {
	names := make([]string, len(supported))
	for i, s := range supported {
		names[i] = s.String()
	}
	return strings.Join(names, ", ")
}

// notRead is the error for a type Driftwood does not read, for verb
// ("dequantize", "quantize").
func notRead(verb string, t Type) error {
	return fmt.Errorf("cannot %s %s: Driftwood reads only %s", verb, t, supportedList())
}
