package gguf

import "math"

// Conversions between float32 and the 16-bit floats of F16, BF16 and the
// quantised blocks' scales. engine/cpu has its own (a table for its hot
// path); this package sits below it and needs only these.

// Half widens an IEEE 754 half (an F16 weight, a block's scale) to
// float32 exactly.
func Half(h uint16) float32 {
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

// floatToHalf rounds to the nearest half, ties to even, as ggml's
// GGML_FP32_TO_FP16 does; a NaN becomes ggml's quiet NaN, 0x7e00 with
// its sign.
func floatToHalf(f float32) uint16 {
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

// halfUp is the smallest positive finite half not below f (f ≥ 0), or the
// largest finite half: a block scale rounded this way covers the weights
// it was computed from.
func halfUp(f float32) uint16 {
	h := floatToHalf(f)
	if h >= 0x7c00 {
		return 0x7bff
	}
	if Half(h) < f {
		h++
	}
	return min(h, 0x7bff)
}

// bf16ToFloat widens a bfloat16, the top half of a float32.
func bf16ToFloat(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// floatToBF16 rounds to the nearest bfloat16, ties to even, as ggml's
// ggml_compute_fp32_to_bf16: a NaN is made quiet.
func floatToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((uint64(b) + 0x7fff + uint64(b>>16&1)) >> 16)
}
