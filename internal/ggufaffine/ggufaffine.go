// Package ggufaffine turns GGUF weight blocks into MLX's affine
// quantisation — codes of Bits bits packed from the low bits up into
// little-endian 32-bit words, groups of 32 weights, each weight
// scale·code + bias — where the two formats hold the same numbers:
//
//   - Q4_1 (w = d·q + m): the codes q, scale d, bias m;
//   - Q4_0 (w = d·(q−8)): the codes q, scale d, bias −8d;
//   - Q8_0 (w = d·q, q an int8): the codes q+128, scale d, bias −128d;
//   - Q4_K and Q5_K (w = d·sc·q − dmin·m in sub-blocks of 32): the 4- or
//     5-bit codes q, scale d·sc, bias −dmin·m.
//
// With float32 scales and biases, scale·code + bias is then the value
// gguf.Dequantize gives, bit for bit: d is an f16 (11 significant bits)
// and sc, m 6-bit integers, so d·sc, dmin·m, d·sc·q, −8d and −128d are
// exact in float32 and only the final sum rounds, as it does in ggml
// (fused or not). Q6_K is not MLX affine: sixteen weights share a scale,
// and MLX's smallest group is 32.
package ggufaffine

import (
	"encoding/binary"
	"fmt"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

// Group is the quantisation group: 32 weights.
const Group = 32

// Bits is the width of typ's codes as MLX affine codes, or 0 where typ's
// blocks are not MLX affine.
func Bits(typ gguf.Type) int {
	switch typ {
	case gguf.Q4_0, gguf.Q4_1, gguf.Q4_K:
		return 4
	case gguf.Q5_K:
		return 5
	case gguf.Q8_0:
		return 8
	}
	return 0
}

// Matrix is a matrix in MLX's affine quantisation.
type Matrix struct {
	// Codes holds each row's cols·Bits/8 bytes, the codes from the low
	// bits of each byte up (MLX's uint32 words, little-endian).
	Codes []byte
	// Scales and Biases hold cols/Group values per row.
	Scales, Biases []float32
	Bits           int
}

// Repack converts rows of cols weights of typ, src(r) returning row r's
// blocks, into MLX's affine quantisation.
//
// # Errors
//
// typ not MLX affine (see Bits), or a row of the wrong size.
func Repack(typ gguf.Type, rows, cols int, src func(int) []byte) (*Matrix, error) {
	bits := Bits(typ)
	if bits == 0 {
		return nil, fmt.Errorf("%s blocks are not MLX affine quantisation", typ)
	}
	rowBytes, err := typ.RowBytes(cols)
	if err != nil {
		return nil, err
	}
	groups := cols / Group
	m := &Matrix{
		Codes:  make([]byte, 0, rows*cols*bits/8),
		Scales: make([]float32, 0, rows*groups),
		Biases: make([]float32, 0, rows*groups),
		Bits:   bits,
	}
	var codes [256]byte
	var scales, biases [8]float32
	bs, bb := typ.BlockSize(), typ.BlockBytes()
	for r := range rows {
		row := src(r)
		if len(row) != rowBytes {
			return nil, fmt.Errorf("row %d of %s: %d bytes, want %d", r, typ, len(row), rowBytes)
		}
		for b := 0; b < len(row); b += bb {
			n := unpack(typ, row[b:b+bb], codes[:bs], scales[:], biases[:])
			m.Codes = pack(m.Codes, codes[:bs], bits)
			m.Scales = append(m.Scales, scales[:n]...)
			m.Biases = append(m.Biases, biases[:n]...)
		}
	}
	return m, nil
}

// unpack reads one block: its codes, and the scale and bias of each of
// its groups of 32, whose number it returns.
func unpack(typ gguf.Type, b []byte, codes []byte, scales, biases []float32) int {
	d := gguf.Half(binary.LittleEndian.Uint16(b))
	switch typ {
	case gguf.Q4_0, gguf.Q4_1:
		qs := b[2:18]
		scales[0], biases[0] = d, -8*d
		if typ == gguf.Q4_1 {
			qs = b[4:20]
			biases[0] = gguf.Half(binary.LittleEndian.Uint16(b[2:]))
		}
		for j, q := range qs {
			codes[j], codes[j+16] = q&15, q>>4
		}
		return 1
	case gguf.Q8_0:
		for j, q := range b[2:34] {
			codes[j] = q ^ 0x80 // the int8 q as the byte q+128
		}
		scales[0], biases[0] = d, -128*d
		return 1
	}
	// Q4_K, Q5_K: eight sub-blocks of 32; each 32 bytes of low nibbles
	// hold two, the first in the low nibbles, and Q5_K's qh[l] holds the
	// fifth bit of weight l of sub-block j at bit j.
	dmin := gguf.Half(binary.LittleEndian.Uint16(b[2:]))
	sc, qs := b[4:16], b[16:144]
	var qh []byte
	if typ == gguf.Q5_K {
		qh, qs = b[16:48], b[48:176]
	}
	for j := range 8 {
		s, mn := gguf.ScaleMinK4(j, sc)
		scales[j], biases[j] = d*float32(s), -(dmin * float32(mn))
		half := qs[32*(j/2):][:32]
		for l, q := range half {
			c := q & 15
			if j%2 == 1 {
				c = q >> 4
			}
			if qh != nil {
				c |= (qh[l] >> j & 1) << 4
			}
			codes[32*j+l] = c
		}
	}
	return 8
}

// pack appends codes of bits bits each to dst as one stream, code i at
// bits [i·bits, (i+1)·bits) counted from the low bit of the first byte.
func pack(dst, codes []byte, bits int) []byte {
	var acc uint32
	n := 0
	for _, c := range codes {
		acc |= uint32(c) << n
		n += bits
		for n >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			n -= 8
		}
	}
	return dst
}
