package engine

import (
	"fmt"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// KVType is the element type a KV cache keeps its keys and values in.
type KVType string

// The KV cache types. KVF32 is the reference; KVF16 halves the memory
// and is the default (docs/RATIONALE.md says why f16 over bf16); KVQ8
// quarters it, llama.cpp's q8_0: blocks of 32 values of one head, each
// an int8 times one scale.
const (
	KVF32  KVType = "f32"
	KVF16  KVType = "f16"
	KVBF16 KVType = "bf16"
	KVQ8   KVType = "q8_0"
)

// KVTypeOf is the cache type of b's caches, when b says (both backends
// do); "" otherwise.
func KVTypeOf(b Backend) KVType {
	if t, ok := b.(interface{ KVType() KVType }); ok {
		return t.KVType()
	}
	return ""
}

// DefaultKVType is the cache type when none is asked for.
const DefaultKVType = KVF16

// KVTypes lists every cache type, the default first.
var KVTypes = []KVType{KVF16, KVBF16, KVQ8, KVF32}

// ParseKVType reads a cache type's name ("" is the default).
func ParseKVType(s string) (KVType, error) {
	if s == "" {
		return DefaultKVType, nil
	}
	for _, t := range KVTypes {
		if string(t) == strings.ToLower(s) {
			return t, nil
		}
	}
	names := make([]string, len(KVTypes))
	for i, t := range KVTypes {
		names[i] = string(t)
	}
	return "", fmt.Errorf("KV cache type %q: want one of %s", s, strings.Join(names, ", "))
}

// BytesPerToken is the cache memory one position takes for a model of
// layers layers and kvDim = kv_heads·head_dim (0 for an unknown type).
func (t KVType) BytesPerToken(layers, kvDim int) int {
	per := 0
	switch t {
	case KVF32:
		per = 4 * kvDim
	case KVF16, KVBF16:
		per = 2 * kvDim
	case KVQ8:
		// 4 bytes per block of 32 beside the codes: the CPU backend's
		// float32 scale, MLX's f16 scale and bias (llama.cpp keeps 2).
		per = kvDim + kvDim/Q8Block*4
	}
	return 2 * layers * per
}

// DType is the tensor dtype of a 16- or 32-bit type's elements; "" for
// KVQ8, whose state is quantised (KVQuant).
func (t KVType) DType() safetensors.DType {
	switch t {
	case KVF32:
		return safetensors.F32
	case KVF16:
		return safetensors.F16
	case KVBF16:
		return safetensors.BF16
	}
	return ""
}
