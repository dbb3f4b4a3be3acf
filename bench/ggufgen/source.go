package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// source reads one MLX tensor's rows as float32: plain (f32, f16, bf16)
// or MLX's affine quantisation, w = code·scale + bias per group, the codes
// packed little-endian into uint32s, the lowest bits first.
type source struct {
	name                    string
	w, scales, biases       *safetensors.Tensor
	rows, cols, bits, group int
}

func newSource(st *safetensors.File, prefix string, c config, dims []int) (*source, error) {
	s := &source{name: prefix + ".weight", cols: dims[0], rows: 1}
	if strings.HasSuffix(prefix, ".bias") {
		s.name = prefix
	}
	for _, d := range dims[1:] {
		s.rows *= d
	}
	var ok bool
	if s.w, ok = st.Tensors[s.name]; !ok {
		return nil, fmt.Errorf("%s: no tensor %s", st.Path, s.name)
	}
	if s.w.DType != safetensors.U32 {
		if s.w.Elements() != s.rows*s.cols {
			return nil, fmt.Errorf("%s: shape %v, want %d×%d", s.name, s.w.Shape, s.rows, s.cols)
		}
		switch s.w.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16:
			return s, nil
		}
		return nil, fmt.Errorf("%s: dtype %s", s.name, s.w.DType)
	}
	if c.Quant == nil || (c.Quant.Bits != 4 && c.Quant.Bits != 8) || c.Quant.GroupSize <= 0 || s.cols%c.Quant.GroupSize != 0 {
		return nil, fmt.Errorf("%s: packed weights without a 4- or 8-bit quantization in config.json that fits", s.name)
	}
	s.bits, s.group = c.Quant.Bits, c.Quant.GroupSize
	s.scales, s.biases = st.Tensors[prefix+".scales"], st.Tensors[prefix+".biases"]
	if s.scales == nil || s.biases == nil {
		return nil, fmt.Errorf("%s: no .scales or .biases", s.name)
	}
	groups := s.rows * s.cols / s.group
	if len(s.w.Data) != s.rows*s.cols*s.bits/8 || s.scales.Elements() != groups || s.biases.Elements() != groups {
		return nil, fmt.Errorf("%s: shapes %v, %v, %v do not fit %d×%d at %d bits, groups of %d",
			s.name, s.w.Shape, s.scales.Shape, s.biases.Shape, s.rows, s.cols, s.bits, s.group)
	}
	for _, t := range []*safetensors.Tensor{s.scales, s.biases} {
		switch t.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16:
		default:
			return nil, fmt.Errorf("%s: dtype %s", t.Name, t.DType)
		}
	}
	return s, nil
}

// float reads element i of a float tensor.
func float(t *safetensors.Tensor, i int) float32 {
	switch t.DType {
	case safetensors.F32:
		return math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	case safetensors.F16:
		return f16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
	}
	return math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.Data[2*i:])) << 16)
}

// row puts row r's weights into dst (len cols).
func (s *source) row(r int, dst []float32) {
	base := r * s.cols
	if s.bits == 0 {
		for j := range dst {
			dst[j] = float(s.w, base+j)
		}
		return
	}
	mask := uint32(1)<<s.bits - 1
	per := 32 / s.bits
	for j := range dst {
		i := base + j
		word := binary.LittleEndian.Uint32(s.w.Data[4*(i/per):])
		code := word >> (uint(i%per) * uint(s.bits)) & mask
		g := i / s.group
		dst[j] = float32(code)*float(s.scales, g) + float(s.biases, g)
	}
}

// f16ToF32 widens an IEEE half exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	}
	v := float32(frac) / (1 << 24) // subnormal or zero
	if sign != 0 {
		return -v
	}
	return v
}
