package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/driftwoodlabs/driftwood/internal/half"
)

// Quantize appends the encoding of src as type t to dst and returns the
// extended slice; len(src) must be a multiple of t's block size.
//
// F32, F16, BF16, Q4_0, Q4_1 and Q8_0 are encoded as ggml's reference
// quantisers (quantize_row_*_ref, ggml_compute_fp32_to_*) encode them,
// byte for byte: the tests check gguf-py's output, which matches them.
//
// The k-quants are encoded more simply than ggml's quantize_row_q*_K_ref,
// which searches each sub-block's scale and min to minimise a weighted
// error: each sub-block here takes the smallest range that holds its
// weights (for Q4_K and Q5_K, its minimum, if negative, to its maximum;
// for Q6_K, symmetric about zero), the 6-bit (8-bit for Q6_K) sub-block
// scales and mins are rounded up so that the range still fits, and each
// weight is rounded to the nearest code. Every weight decodes within
// half a step of its sub-block; the error is larger than ggml's by a few
// per cent, and the bytes differ from llama-quantize's. Weights past
// what f16 scales reach (about 10⁹) are clipped.
//
// # Errors
//
// A type Driftwood does not read, len(src) not a multiple of the block
// size, or a NaN or infinite weight for a block type (its scale would
// carry it into every weight of the block).
func Quantize(t Type, dst []byte, src []float32) ([]byte, error) {
	if !t.Supported() {
		return dst, notRead("quantize", t)
	}
	n, err := t.RowBytes(len(src))
	if err != nil {
		return dst, fmt.Errorf("quantize %d weights: %w", len(src), err)
	}
	bs, bb := t.BlockSize(), t.BlockBytes()
	if bs > 1 {
		for i, v := range src {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return dst, fmt.Errorf("quantize: weight %d is %v, which %s cannot encode", i, v, t)
			}
		}
	}
	dst = grow(dst, n)
	out := dst[len(dst)-n:]
	switch t { // the element types in a loop of their own: whole matrices go through here
	case F16:
		for i, x := range src {
			binary.LittleEndian.PutUint16(out[2*i:], half.F32ToF16(x))
		}
		return dst, nil
	case BF16:
		for i, x := range src {
			binary.LittleEndian.PutUint16(out[2*i:], half.F32ToBF16(x))
		}
		return dst, nil
	}
	for i := 0; i < len(src); i += bs {
		x, b := src[i:i+bs], out[i/bs*bb:][:bb]
		switch t {
		case F32:
			binary.LittleEndian.PutUint32(b, math.Float32bits(x[0]))
		case Q4_0:
			quantQ4_0(b, x)
		case Q4_1:
			quantQ4_1(b, x)
		case Q8_0:
			quantQ8_0(b, x)
		case Q4_K:
			quantKAffine(b, x, 15)
		case Q5_K:
			quantKAffine(b, x, 31)
		case Q6_K:
			quantQ6_K(b, x)
		}
	}
	return dst, nil
}

// grow extends b by n bytes.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// inverse is 1/d, or 0 for d = 0, as the reference quantisers take it.
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// truncCode is C's (int8_t) conversion of v to a code of 0 to hi: v is
// already at least 0 but for NaN, which gives 0 here.
func truncCode(v float32, hi int) byte {
	if !(v >= 0) {
		return 0
	}
	return byte(min(float32(hi), float32(math.Trunc(float64(v)))))
}

// quantQ4_0 is quantize_row_q4_0_ref: the weight of largest magnitude,
// with its sign, maps to code 0 (−8·d), the others truncate x/d + 8.5.
func quantQ4_0(b []byte, x []float32) {
	var amax, vmax float32
	for _, v := range x {
		if a := abs(v); a > amax {
			amax, vmax = a, v
		}
	}
	d := vmax / -8
	id := inverse(d)
	binary.LittleEndian.PutUint16(b, half.F32ToF16(d))
	for j := range 16 {
		q0 := truncCode(float32(x[j]*id)+8.5, 15)
		q1 := truncCode(float32(x[j+16]*id)+8.5, 15)
		b[2+j] = q0 | q1<<4
	}
}

// quantQ4_1 is quantize_row_q4_1_ref: d = (max−min)/15, m = min, codes
// truncate (x−min)/d + 0.5.
func quantQ4_1(b []byte, x []float32) {
	lo, hi := x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	d := (hi - lo) / 15
	id := inverse(d)
	binary.LittleEndian.PutUint16(b, half.F32ToF16(d))
	binary.LittleEndian.PutUint16(b[2:], half.F32ToF16(lo))
	for j := range 16 {
		q0 := truncCode(float32((x[j]-lo)*id)+0.5, 15)
		q1 := truncCode(float32((x[j+16]-lo)*id)+0.5, 15)
		b[4+j] = q0 | q1<<4
	}
}

// quantQ8_0 is quantize_row_q8_0_ref: d = max|x|/127, codes round x/d
// half away from zero.
func quantQ8_0(b []byte, x []float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs(v))
	}
	d := amax / 127
	id := inverse(d)
	binary.LittleEndian.PutUint16(b, half.F32ToF16(d))
	for j, v := range x {
		b[2+j] = byte(int8(math.Round(float64(v * id))))
	}
}

// quantKAffine encodes a Q4_K (levels 15) or Q5_K (levels 31)
// super-block as Quantize describes: per sub-block of 32 a min
// m = max(0, −min x) and a scale s = (max x + m)/levels, both stored as
// 6-bit multiples of the super-block's dmin and d (f16).
func quantKAffine(b []byte, x []float32, levels int) {
	var mins, highs [8]float32
	var maxMin float32
	for j := range 8 {
		lo, hi := float32(0), x[32*j]
		for _, v := range x[32*j : 32*j+32] {
			lo, hi = min(lo, v), max(hi, v)
		}
		mins[j], highs[j] = -lo, hi
		maxMin = max(maxMin, -lo)
	}
	dminH := halfUp(maxMin / 63)
	dmin := half.F16ToF32(dminH)
	var ms, scs [8]uint8
	var ranges [8]float32
	var maxScale float32
	for j := range 8 {
		ms[j] = sixBits(mins[j], dmin)
		// The range starts at the stored min, which may lie below the
		// true one: the scale covers from there.
		ranges[j] = (highs[j] + dmin*float32(ms[j])) / float32(levels)
		maxScale = max(maxScale, ranges[j])
	}
	dH := halfUp(maxScale / 63)
	d := half.F16ToF32(dH)
	for j := range 8 {
		scs[j] = sixBits(ranges[j], d)
	}
	binary.LittleEndian.PutUint16(b, dH)
	binary.LittleEndian.PutUint16(b[2:], dminH)
	s := b[4:16]
	for j := range 4 {
		s[j] = scs[j] | scs[j+4]>>4<<6
		s[j+4] = ms[j] | ms[j+4]>>4<<6
		s[j+8] = scs[j+4]&15 | ms[j+4]&15<<4
	}
	var codes [256]uint8
	for j := range 8 {
		step, off := d*float32(scs[j]), dmin*float32(ms[j])
		id := inverse(step)
		for l, v := range x[32*j : 32*j+32] {
			codes[32*j+l] = roundCode((v+off)*id, 0, levels)
		}
	}
	qs := b[16:144]
	if levels == 31 {
		qh := b[16:48]
		clear(qh)
		for l := range 32 {
			for j := range 8 {
				qh[l] |= codes[32*j+l] >> 4 << j
			}
		}
		qs = b[48:176]
	}
	for c := range 4 {
		for l := range 32 {
			qs[32*c+l] = codes[64*c+l]&15 | codes[64*c+32+l]&15<<4
		}
	}
}

// quantQ6_K encodes a Q6_K super-block as Quantize describes: per group
// of 16 a scale max|x|/31, stored as an 8-bit multiple of d (f16), codes
// x/scale rounded and offset by 32.
func quantQ6_K(b []byte, x []float32) {
	var scales [16]float32
	var maxScale float32
	for g := range 16 {
		var amax float32
		for _, v := range x[16*g : 16*g+16] {
			amax = max(amax, abs(v))
		}
		scales[g] = amax / 31
		maxScale = max(maxScale, scales[g])
	}
	dH := halfUp(maxScale / 127)
	d := half.F16ToF32(dH)
	var codes [256]uint8
	for g := range 16 {
		sc := uint8(0)
		if d > 0 {
			sc = uint8(min(127, math.Ceil(float64(scales[g])/float64(d))))
		}
		b[192+g] = sc
		id := inverse(d * float32(sc))
		for l, v := range x[16*g : 16*g+16] {
			codes[16*g+l] = roundCode(v*id+32, 0, 63)
		}
	}
	binary.LittleEndian.PutUint16(b[208:], dH)
	for h := range 2 {
		ql, qh, q := b[64*h:64*h+64], b[128+32*h:128+32*h+32], codes[128*h:128*h+128]
		for l := range 32 {
			ql[l] = q[l]&15 | q[l+64]&15<<4
			ql[l+32] = q[l+32]&15 | q[l+96]&15<<4
			qh[l] = q[l]>>4 | q[l+32]>>4<<2 | q[l+64]>>4<<4 | q[l+96]>>4<<6
		}
	}
}

// sixBits is v/unit rounded up to a 6-bit code (0–63), so that the code
// times unit is at least v; 0 when unit is 0.
func sixBits(v, unit float32) uint8 {
	if unit == 0 {
		return 0
	}
	return uint8(min(63, math.Ceil(float64(v)/float64(unit))))
}

// roundCode rounds v to the nearest code in [lo, hi] (NaN to lo).
func roundCode(v float32, lo, hi int) uint8 {
	r := math.Round(float64(v))
	if !(r >= float64(lo)) {
		return uint8(lo)
	}
	return uint8(min(float64(hi), r))
}

func abs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }
