package ggufconv

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// group is the folder's quantisation group: a Q4_0, Q4_1 or Q8_0 block.
const group = 32

// convert is the folder's tensors for w (the weight, or the weight with
// its scales and biases) under a quantisation of bits (0: none), and how
// they hold it. A kept tensor's data may be the file's mapping, valid
// until the model is closed.
func (w weight) convert(bits int) ([]safetensors.Tensor, Form, error) {
	t := w.t
	rows, cols := t.Shape[0], 1
	if len(t.Shape) == 2 {
		cols = t.Shape[1]
	}
	src := func(r int) []byte { // row r in Hugging Face's order
		n := len(t.Data) / rows
		if w.headDim > 0 {
			r = ggufRow(r, w.headDim)
		}
		return t.Data[r*n : (r+1)*n]
	}
	switch {
	case !t.BlockQuantized():
		out := t.Data // in place in the file's mapping, unless reordered
		if w.headDim > 0 {
			out = make([]byte, 0, len(t.Data))
			for r := range rows {
				out = append(out, src(r)...)
			}
		}
		return []safetensors.Tensor{{Name: w.name, DType: t.DType, Shape: t.Shape, Data: out}}, Kept, nil
	case bits == 4 && (t.Blocks == gguf.Q4_0 || t.Blocks == gguf.Q4_1), bits == 8 && t.Blocks == gguf.Q8_0:
		ts, err := affine(strings.TrimSuffix(w.name, ".weight"), t.Blocks, rows, cols, src)
		return ts, Affine, err
	}
	out := make([]byte, 0, 4*rows*cols)
	vals := make([]float32, cols)
	for r := range rows {
		if err := gguf.Dequantize(t.Blocks, vals, src(r)); err != nil {
			return nil, "", err
		}
		for _, v := range vals {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return []safetensors.Tensor{{Name: w.name, DType: safetensors.F32, Shape: t.Shape, Data: out}}, Dequantised, nil
}

// ggufRow is the row of llama.cpp's order that holds row s of a query or
// key projection in Hugging Face's order: llama.cpp's converter puts row
// j·headDim/2+i of each head at 2i+j (bench/ggufgen's srcRow), for RoPE
// on adjacent pairs rather than on the two halves of a head.
func ggufRow(s, headDim int) int {
	half := headDim / 2
	h, k := s/headDim, s%headDim
	return h*headDim + 2*(k%half) + k/half
}

// affine turns rows of Q4_0, Q4_1 or Q8_0 blocks into MLX's affine
// quantisation in groups of 32 (prefix.weight, .scales, .biases), where
// weight = scale·code + bias:
//
//   - Q4_1 (w = d·q + m): the codes q, scale d, bias m;
//   - Q4_0 (w = d·(q−8)): the codes q, scale d, bias −8d;
//   - Q8_0 (w = d·q, q an int8): the codes q+128, scale d, bias −128d.
//
// So scale·code + bias in float32 is the blocks' value exactly: for Q4_1
// the same two roundings as ggml's d·q + m; for Q4_0 and Q8_0 nothing
// rounds, as d is an f16 (11 significant bits) and d·code, −8d, −128d
// and their sums d·(q−8) and d·q need at most 19 (a zero weight is +0
// where ggml's d·0 is −0 for a negative d, the same number). The scales
// and biases are F16 when every one is an f16 (always for Q4_1; −8d and
// −128d are unless they overflow, which needs |d| ≥ 8192 or 512) and F32
// otherwise, which holds them all.
func affine(prefix string, typ gguf.Type, rows, cols int, src func(int) []byte) ([]safetensors.Tensor, error) {
	bits, groups, bb := 4, cols/group, typ.BlockBytes()
	if typ == gguf.Q8_0 {
		bits = 8
	}
	codes := make([]byte, 0, rows*cols*bits/8)
	scales, biases := make([]float32, rows*groups), make([]float32, rows*groups)
	halves := make([]byte, 2*groups) // a row's d, then its m
	for r := range rows {
		row := src(r)
		for g := range groups {
			b := row[g*bb : (g+1)*bb]
			copy(halves[2*g:], b[:2])
			switch typ {
			case gguf.Q4_0:
				codes = appendNibbles(codes, b[2:18])
			case gguf.Q4_1:
				codes = appendNibbles(codes, b[4:20])
			case gguf.Q8_0:
				for _, q := range b[2:34] {
					codes = append(codes, q^0x80) // int8 q as the byte q+128
				}
			}
		}
		d, m := scales[r*groups:(r+1)*groups], biases[r*groups:(r+1)*groups]
		if err := gguf.Dequantize(gguf.F16, d, halves); err != nil {
			return nil, err
		}
		switch typ {
		case gguf.Q4_0:
			for g := range m {
				m[g] = -8 * d[g]
			}
		case gguf.Q4_1:
			for g := range groups {
				copy(halves[2*g:], row[g*bb+2:g*bb+4])
			}
			if err := gguf.Dequantize(gguf.F16, m, halves); err != nil {
				return nil, err
			}
		case gguf.Q8_0:
			for g := range m {
				m[g] = -128 * d[g]
			}
		}
	}
	dtype, sData, bData := steps(scales, biases)
	shape := []int{rows, groups}
	return []safetensors.Tensor{
		{Name: prefix + ".weight", DType: safetensors.U32, Shape: []int{rows, cols * bits / 32}, Data: codes},
		{Name: prefix + ".scales", DType: dtype, Shape: shape, Data: sData},
		{Name: prefix + ".biases", DType: dtype, Shape: shape, Data: bData},
	}, nil
}

// appendNibbles appends a block's 32 4-bit codes in MLX's order — code i
// in bits 4i..4i+3 of little-endian words, so byte k holds codes 2k (low
// nibble) and 2k+1 — from GGUF's, where the low nibbles of the 16 bytes
// are codes 0–15 and the high ones 16–31.
func appendNibbles(dst, qs []byte) []byte {
	code := func(i int) byte {
		if i < 16 {
			return qs[i] & 15
		}
		return qs[i-16] >> 4
	}
	for k := range 16 {
		dst = append(dst, code(2*k)|code(2*k+1)<<4)
	}
	return dst
}

// steps encodes scales and biases in one dtype, F16 when every value
// is an f16 (the CPU backend's kernels want both in one dtype), F32
// otherwise.
func steps(scales, biases []float32) (safetensors.DType, []byte, []byte) {
	s, okS := halves(scales)
	b, okB := halves(biases)
	if okS && okB {
		return safetensors.F16, s, b
	}
	return safetensors.F32, f32Bytes(scales), f32Bytes(biases)
}

// halves encodes v as f16 and reports whether that holds every value
// exactly.
func halves(v []float32) ([]byte, bool) {
	enc, err := gguf.Quantize(gguf.F16, nil, v)
	if err != nil {
		return nil, false
	}
	back := make([]float32, len(v))
	if err := gguf.Dequantize(gguf.F16, back, enc); err != nil {
		return nil, false
	}
	for i := range v {
		if math.Float32bits(back[i]) != math.Float32bits(v[i]) {
			return nil, false
		}
	}
	return enc, true
}

// f32Bytes is v as little-endian float32s.
func f32Bytes(v []float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
	}
	return out
}
