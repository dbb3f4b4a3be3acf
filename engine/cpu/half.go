package cpu

import (
	"math"
	"sync"
)

// bf16 widens a bfloat16 (the top half of a float32) to float32.
func bf16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f16Table maps every IEEE half-precision bit pattern to its float32 value.
// A 256 KiB table lookup is faster than the branchy conversion on the hot
// path; it is built once, on first use, and never changes.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = f16ToF32(uint16(i))
	}
	return &t
})

// f16ToF32 converts one IEEE 754 half-precision value exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf, NaN
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	case frac == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal: value = frac * 2^-24.
	v := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		return -v
	}
	return v
}

// F32ToF16 rounds a float32 to the nearest half (ties to even), for
// writing f16 test models.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	frac := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 0x1f: // overflow to Inf
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero
		if exp < -10 {
			return sign
		}
		frac |= 0x800000
		shift := uint32(14 - exp)
		half := uint32(1) << (shift - 1)
		v := frac >> shift
		if rem := frac & (1<<shift - 1); rem > half || (rem == half && v&1 == 1) {
			v++
		}
		return sign | uint16(v)
	}
	v := uint32(exp)<<10 | frac>>13
	if rem := frac & 0x1fff; rem > 0x1000 || (rem == 0x1000 && v&1 == 1) {
		v++ // may carry into the exponent, which is still correct rounding
	}
	return sign | uint16(v)
}

// F32ToBF16 rounds a float32 to bfloat16 (ties to even).
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
