package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/driftwoodlabs/driftwood/internal/half"
)

// Dequantize decodes len(dst) weights of type t from src into dst. It is
// the portable reference: the test oracle for the kernels, and their
// fallback. Each value is computed as ggml's dequantize_row_* computes
// it, one float32 rounding per operation in the same order, so the
// results are bit for bit ggml's (and gguf-py's, which the tests check).
//
// # Errors
//
// A type Driftwood does not read, len(dst) not a multiple of the block
// size, or len(src) not exactly the bytes of len(dst) weights.
func Dequantize(t Type, dst []float32, src []byte) error {
	if !t.Supported() {
		return notRead("dequantize", t)
	}
	n, err := t.RowBytes(len(dst))
	if err != nil {
		return fmt.Errorf("dequantize %d weights: %w", len(dst), err)
	}
	if len(src) != n {
		return fmt.Errorf("dequantize %d weights of %s: %d bytes, want %d", len(dst), t, len(src), n)
	}
	bs, bb := t.BlockSize(), t.BlockBytes()
	for i := 0; i < len(dst); i += bs {
		y, b := dst[i:i+bs], src[i/bs*bb:][:bb]
		switch t {
		case F32:
			y[0] = math.Float32frombits(binary.LittleEndian.Uint32(b))
		case F16:
			y[0] = half.F16ToF32(binary.LittleEndian.Uint16(b))
		case BF16:
			y[0] = half.BF16ToF32(binary.LittleEndian.Uint16(b))
		case Q4_0:
			dequantQ4_0(y, b)
		case Q4_1:
			dequantQ4_1(y, b)
		case Q8_0:
			dequantQ8_0(y, b)
		case Q4_K:
			dequantQ4_K(y, b)
		case Q5_K:
			dequantQ5_K(y, b)
		case Q6_K:
			dequantQ6_K(y, b)
		}
	}
	return nil
}

// The block layouts (ggml-common.h). The explicit float32 conversions
// round each product before it is added: Go may otherwise fuse a·b+c
// into one rounding (it does on arm64), and the result would differ
// from ggml's in the last bit.

// dequantQ4_0: d (f16), 16 bytes of 4-bit codes, the low nibbles the
// first 16 weights; w = d·(q−8).
func dequantQ4_0(y []float32, b []byte) {
	d := half.F16ToF32(binary.LittleEndian.Uint16(b))
	for j, q := range b[2:18] {
		y[j] = float32(int(q&15)-8) * d
		y[j+16] = float32(int(q>>4)-8) * d
	}
}

// dequantQ4_1: d, m (f16), 16 bytes of codes; w = d·q + m.
func dequantQ4_1(y []float32, b []byte) {
	d := half.F16ToF32(binary.LittleEndian.Uint16(b))
	m := half.F16ToF32(binary.LittleEndian.Uint16(b[2:]))
	for j, q := range b[4:20] {
		y[j] = float32(float32(q&15)*d) + m
		y[j+16] = float32(float32(q>>4)*d) + m
	}
}

// dequantQ8_0: d (f16), 32 int8 codes; w = d·q.
func dequantQ8_0(y []float32, b []byte) {
	d := half.F16ToF32(binary.LittleEndian.Uint16(b))
	for j, q := range b[2:34] {
		y[j] = float32(int8(q)) * d
	}
}

// ScaleMinK4 unpacks the 6-bit scale and min of sub-block j (0–7) of a
// Q4_K or Q5_K block from its 12 packed bytes (get_scale_min_k4): bytes
// 0–3 hold scales 0–3 and bytes 4–7 mins 0–3 in their low 6 bits; scales
// and mins 4–7 keep their low 4 bits in bytes 8–11 and their top 2 in
// the top bits of bytes 0–3 and 4–7.
func ScaleMinK4(j int, s []byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&15 | s[j-4]>>6<<4, s[j+4]>>4 | s[j]>>6<<4
}

// dequantQ4_K: a super-block of 256 in 8 sub-blocks of 32. d, dmin
// (f16), 12 bytes of 6-bit scales and mins, 128 bytes of 4-bit codes: each
// 32 bytes hold two sub-blocks, the first in the low nibbles;
// w = d·sc·q − dmin·m.
func dequantQ4_K(y []float32, b []byte) {
	d := half.F16ToF32(binary.LittleEndian.Uint16(b))
	dmin := half.F16ToF32(binary.LittleEndian.Uint16(b[2:]))
	scales, qs := b[4:16], b[16:144]
	for c := range 4 {
		sc0, m0 := ScaleMinK4(2*c, scales)
		sc1, m1 := ScaleMinK4(2*c+1, scales)
		d0, min0 := d*float32(sc0), dmin*float32(m0)
		d1, min1 := d*float32(sc1), dmin*float32(m1)
		for l, q := range qs[32*c : 32*c+32] {
			y[64*c+l] = float32(d0*float32(q&15)) - min0
			y[64*c+32+l] = float32(d1*float32(q>>4)) - min1
		}
	}
}

// dequantQ5_K: as Q4_K with a fifth bit per code: d, dmin, 12 bytes of
// scales and mins, 32 bytes qh, 128 bytes of low nibbles; bit 2c of
// qh[l] is the high bit of weight l of sub-block 2c, bit 2c+1 that of
// sub-block 2c+1.
func dequantQ5_K(y []float32, b []byte) {
	d := half.F16ToF32(binary.LittleEndian.Uint16(b))
	dmin := half.F16ToF32(binary.LittleEndian.Uint16(b[2:]))
	scales, qh, qs := b[4:16], b[16:48], b[48:176]
	for c := range 4 {
		sc0, m0 := ScaleMinK4(2*c, scales)
		sc1, m1 := ScaleMinK4(2*c+1, scales)
		d0, min0 := d*float32(sc0), dmin*float32(m0)
		d1, min1 := d*float32(sc1), dmin*float32(m1)
		for l, q := range qs[32*c : 32*c+32] {
			h := qh[l] >> (2 * c)
			y[64*c+l] = float32(d0*float32(q&15|h&1<<4)) - min0
			y[64*c+32+l] = float32(d1*float32(q>>4|h&2<<3)) - min1
		}
	}
}

// dequantQ6_K: a super-block of 256 in 16 groups of 16, symmetric. 128
// bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales, d
// (f16) last; w = d·sc·(q−32). Each half of 128 weights takes 64 bytes
// of ql, 32 of qh and 8 scales: byte l of ql holds weights l (low nibble)
// and l+64 (high), byte l+32 weights l+32 and l+96; byte l of qh the high
// bits of l, l+32, l+64, l+96, two bits each from the bottom.
func dequantQ6_K(y []float32, b []byte) {
	d := half.F16ToF32(binary.LittleEndian.Uint16(b[208:]))
	for h := range 2 {
		ql, qh, sc := b[64*h:64*h+64], b[128+32*h:128+32*h+32], b[192+8*h:192+8*h+8]
		yh := y[128*h : 128*h+128]
		for l := range 32 {
			q := [4]int{
				int(ql[l]&15 | qh[l]&3<<4),
				int(ql[l+32]&15 | qh[l]>>2&3<<4),
				int(ql[l]>>4 | qh[l]>>4&3<<4),
				int(ql[l+32]>>4 | qh[l]>>6&3<<4),
			}
			for k, v := range q {
				s := d * float32(int8(sc[l/16+2*k]))
				yh[l+32*k] = s * float32(v-32)
			}
		}
	}
}
