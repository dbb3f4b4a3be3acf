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
// (fused or not).
//
// Q6_K is not MLX affine: sixteen weights share a scale, and MLX's
// smallest group is 32. But it is the sum of two 6-bit affine matrices
// (Split): one holds the first sixteen weights of every group of 32 and
// zeros (code 32, bias −32·step) in the second, the other the reverse,
// each weight d·sc·(q−32) as step d·sc, code q, bias −32·d·sc, exact in
// float32 (d·sc·q needs 24 bits).
package ggufaffine

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/internal/half"
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
// blocks, into MLX's affine quantisation. The rows are converted in
// parallel: src must be safe to call from several goroutines.
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
	groups, codeBytes := cols/Group, cols*bits/8
	m := &Matrix{
		Codes:  make([]byte, rows*codeBytes),
		Scales: make([]float32, rows*groups),
		Biases: make([]float32, rows*groups),
		Bits:   bits,
	}
	bs, bb := typ.BlockSize(), typ.BlockBytes()
	err = eachRows(rows, func(lo, hi int) error {
		var codes [256]byte
		var scales, biases [8]float32
		for r := lo; r < hi; r++ {
			row := src(r)
			if len(row) != rowBytes {
				return fmt.Errorf("row %d of %s: %d bytes, want %d", r, typ, len(row), rowBytes)
			}
			out, g := m.Codes[r*codeBytes:r*codeBytes], r*groups
			for b := 0; b < len(row); b += bb {
				n := unpack(typ, row[b:b+bb], codes[:bs], scales[:], biases[:])
				out = pack(out, codes[:bs], bits)
				copy(m.Scales[g:], scales[:n])
				copy(m.Biases[g:], biases[:n])
				g += n
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Split converts rows of cols Q6_K weights, src(r) returning row r's
// blocks, into two 6-bit affine matrices whose sum is the matrix exactly
// (see the package comment), in parallel as Repack does.
//
// # Errors
//
// typ not Q6_K, or a row of the wrong size.
func Split(typ gguf.Type, rows, cols int, src func(int) []byte) (first, second *Matrix, err error) {
	if typ != gguf.Q6_K {
		return nil, nil, fmt.Errorf("%s blocks are not split, only Q6_K's", typ)
	}
	rowBytes, err := typ.RowBytes(cols)
	if err != nil {
		return nil, nil, err
	}
	const bits = 6
	groups, codeBytes, bb := cols/Group, cols*bits/8, typ.BlockBytes()
	halves := [2]*Matrix{}
	for i := range halves {
		halves[i] = &Matrix{
			Codes:  make([]byte, rows*codeBytes),
			Scales: make([]float32, rows*groups),
			Biases: make([]float32, rows*groups),
			Bits:   bits,
		}
	}
	err = eachRows(rows, func(lo, hi int) error {
		var codes [256]byte
		var steps [16]float32
		var part [Group]byte
		for r := lo; r < hi; r++ {
			row := src(r)
			if len(row) != rowBytes {
				return fmt.Errorf("row %d of %s: %d bytes, want %d", r, typ, len(row), rowBytes)
			}
			out := [2][]byte{halves[0].Codes[r*codeBytes : r*codeBytes], halves[1].Codes[r*codeBytes : r*codeBytes]}
			g := r * groups
			for b := 0; b < len(row); b += bb {
				unpackQ6K(row[b:b+bb], &codes, &steps)
				for k := range 8 { // groups of 32 in the block
					for h, m := range halves {
						for j := range part {
							part[j] = 32 // zero
						}
						copy(part[16*h:16*h+16], codes[32*k+16*h:])
						out[h] = pack(out[h], part[:], bits)
						step := steps[2*k+h]
						m.Scales[g], m.Biases[g] = step, -32*step
					}
					g++
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return halves[0], halves[1], nil
}

// unpackQ6K reads one Q6_K block (as gguf's dequantQ6_K): its 256 codes
// q (w = step·(q−32)) and the step d·sc of each sixteen weights.
func unpackQ6K(b []byte, codes *[256]byte, steps *[16]float32) {
	d := half.F16ToF32(binary.LittleEndian.Uint16(b[208:]))
	for i, sc := range b[192:208] {
		steps[i] = d * float32(int8(sc))
	}
	for h := range 2 {
		ql, qh := b[64*h:64*h+64], b[128+32*h:128+32*h+32]
		c := codes[128*h : 128*h+128]
		for l := range 32 {
			c[l] = ql[l]&15 | qh[l]&3<<4
			c[l+32] = ql[l+32]&15 | qh[l]>>2&3<<4
			c[l+64] = ql[l]>>4 | qh[l]>>4&3<<4
			c[l+96] = ql[l+32]>>4 | qh[l]>>6&3<<4
		}
	}
}

// eachRows runs f over ranges of rows [lo, hi) on up to GOMAXPROCS
// goroutines and returns the error of the lowest range that failed.
func eachRows(rows int, f func(lo, hi int) error) error {
	workers := min(runtime.GOMAXPROCS(0), (rows+63)/64)
	if workers <= 1 {
		return f(0, rows)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { errs[w] = f(rows*w/workers, rows*(w+1)/workers) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// unpack reads one block: its codes, and the scale and bias of each of
// its groups of 32, whose number it returns.
func unpack(typ gguf.Type, b []byte, codes []byte, scales, biases []float32) int {
	d := half.F16ToF32(binary.LittleEndian.Uint16(b))
	switch typ {
	case gguf.Q4_0, gguf.Q4_1:
		qs := b[2:18]
		scales[0], biases[0] = d, -8*d
		if typ == gguf.Q4_1 {
			qs = b[4:20]
			biases[0] = half.F16ToF32(binary.LittleEndian.Uint16(b[2:]))
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
	dmin := half.F16ToF32(binary.LittleEndian.Uint16(b[2:]))
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
	switch bits { // whole bytes: no stream needed
	case 8:
		return append(dst, codes...)
	case 4:
		for k := 0; k < len(codes); k += 2 {
			dst = append(dst, codes[k]|codes[k+1]<<4)
		}
		return dst
	}
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
