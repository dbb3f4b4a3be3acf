// Package half converts between float32 and the 16-bit floats that model
// files and KV caches store: IEEE 754 half precision (f16) and bfloat16
// (bf16), rounding to nearest, ties to even, as ggml and MLX do.
package half

import "math"

// F16ToF32 widens an IEEE 754 half to float32 exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf, NaN (its payload kept)
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	}
	// Zero or subnormal: frac·2⁻²⁴, exact in float32.
	return math.Float32frombits(sign | math.Float32bits(float32(frac)*(1.0/(1<<24))))
}

// F32ToF16 rounds to the nearest half, ties to even, as ggml's
// GGML_FP32_TO_FP16 does; beyond the largest half it gives ±Inf, and a
// NaN becomes ggml's quiet NaN, 0x7e00 with its sign.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	frac := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000:
		return sign | 0x7e00
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign // below half the smallest subnormal
		}
		frac |= 0x800000
		shift := uint32(14 - exp)
		v := frac >> shift
		half := uint32(1) << (shift - 1)
		if rem := frac & (1<<shift - 1); rem > half || (rem == half && v&1 == 1) {
			v++
		}
		return sign | uint16(v)
	}
	v := uint32(exp)<<10 | frac>>13
	if rem := frac & 0x1fff; rem > 0x1000 || (rem == 0x1000 && v&1 == 1) {
		v++ // may carry into the exponent, which is still the right rounding
	}
	return sign | uint16(v)
}

// BF16ToF32 widens a bfloat16, the top half of a float32.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds to the nearest bfloat16, ties to even, as ggml's
// ggml_compute_fp32_to_bf16: a NaN is made quiet.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((uint64(b) + 0x7fff + uint64(b>>16&1)) >> 16)
}
