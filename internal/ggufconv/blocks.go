package ggufconv

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/ggufaffine"
)

// group is the folder's quantisation group.
const group = ggufaffine.Group

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
			r = gguf.PermutedRow(r, w.headDim)
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
	case bits != 0 && ggufaffine.Bits(t.Blocks) == bits:
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

// affine writes rows of typ blocks as MLX's affine quantisation in groups
// of 32 (prefix.weight, .scales, .biases): the same numbers
// (ggufaffine). The scales and biases are F16 when every one is an f16
// (always for Q4_1; Q4_0's −8d and Q8_0's −128d are unless they overflow,
// which needs |d| ≥ 8192 or 512; Q4_K's d·sc often is not) and F32
// otherwise, which holds them all.
func affine(prefix string, typ gguf.Type, rows, cols int, src func(int) []byte) ([]safetensors.Tensor, error) {
	m, err := ggufaffine.Repack(typ, rows, cols, src)
	if err != nil {
		return nil, err
	}
	dtype, sData, bData := steps(m.Scales, m.Biases)
	shape := []int{rows, cols / group}
	return []safetensors.Tensor{
		{Name: prefix + ".weight", DType: safetensors.U32, Shape: []int{rows, cols * m.Bits / 32}, Data: m.Codes},
		{Name: prefix + ".scales", DType: dtype, Shape: shape, Data: sData},
		{Name: prefix + ".biases", DType: dtype, Shape: shape, Data: bData},
	}, nil
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
