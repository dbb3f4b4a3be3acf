package cpu

import (
	"fmt"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// affineMatrix is an MLX affine-quantised matrix: each group of GroupSize
// consecutive weights of a row shares a scale and a bias, and
// w = scale·q + bias for the B-bit code q. Codes are packed into
// little-endian uint32 words, element k of a word in bits [B·k, B·k+B).
type affineMatrix struct {
	dense
	bits, group int
	packed      []uint32 // (rows, cols·bits/32)
	scales      halfVec  // (rows, cols/group)
	biases      halfVec
}

// halfVec reads scales and biases in their stored dtype.
type halfVec struct {
	f32 []float32
	u16 []uint16
	tab *[1 << 16]float32 // f16 lookup; nil for bf16
}

func newHalfVec(t *engine.Tensor) halfVec {
	switch t.DType {
	case safetensors.F32:
		return halfVec{f32: asF32(t.Data)}
	case safetensors.F16:
		return halfVec{u16: asU16(t.Data), tab: f16Table()}
	}
	return halfVec{u16: asU16(t.Data)}
}

func (h *halfVec) at(i int) float32 {
	switch {
	case h.f32 != nil:
		return h.f32[i]
	case h.tab != nil:
		return h.tab[h.u16[i]]
	}
	return bf16(h.u16[i])
}

func newAffine(t *engine.Tensor) (*affineMatrix, error) {
	if t.Bits != 4 && t.Bits != 8 {
		return nil, fmt.Errorf("%s: tensor %s: %d-bit weights have no CPU kernel", t.File, t.Name, t.Bits)
	}
	return &affineMatrix{
		dense:  dense{rows: t.Shape[0], cols: t.Shape[1]},
		bits:   t.Bits,
		group:  t.GroupSize,
		packed: asU32(t.Data),
		scales: newHalfVec(t.Scales),
		biases: newHalfVec(t.Biases),
	}, nil
}

func (m *affineMatrix) mul(out, x []float32, n, lo, hi int, scratch []float32) {
	for r := lo; r < hi; r++ {
		if n == 1 {
			out[r] = m.dotRow(r, x[:m.cols])
			continue
		}
		m.row(scratch, r)
		rowMul(out, x, scratch[:m.cols], n, m.rows, r)
	}
}

// dotRow is row r · x without dequantising the row: per group,
// Σ(s·q+b)·x = s·Σq·x + b·Σx.
func (m *affineMatrix) dotRow(r int, x []float32) float32 {
	groups := m.cols / m.group
	perWord := 32 / m.bits
	words := m.packed[r*m.cols/perWord : (r+1)*m.cols/perWord]
	wpg := m.group / perWord // words per group
	var sum float32
	for g := 0; g < groups; g++ {
		xs := x[g*m.group : (g+1)*m.group]
		gw := words[g*wpg : (g+1)*wpg]
		var qx, xsum float32
		if m.bits == 4 {
			for i, w := range gw {
				xx := xs[i*8 : i*8+8]
				qx += float32(w&15)*xx[0] + float32(w>>4&15)*xx[1] +
					float32(w>>8&15)*xx[2] + float32(w>>12&15)*xx[3] +
					float32(w>>16&15)*xx[4] + float32(w>>20&15)*xx[5] +
					float32(w>>24&15)*xx[6] + float32(w>>28)*xx[7]
				xsum += ((xx[0] + xx[1]) + (xx[2] + xx[3])) + ((xx[4] + xx[5]) + (xx[6] + xx[7]))
			}
		} else {
			for i, w := range gw {
				xx := xs[i*4 : i*4+4]
				qx += float32(w&255)*xx[0] + float32(w>>8&255)*xx[1] +
					float32(w>>16&255)*xx[2] + float32(w>>24)*xx[3]
				xsum += (xx[0] + xx[1]) + (xx[2] + xx[3])
			}
		}
		gi := r*groups + g
		sum += m.scales.at(gi)*qx + m.biases.at(gi)*xsum
	}
	return sum
}

func (m *affineMatrix) row(dst []float32, r int) {
	groups := m.cols / m.group
	perWord := 32 / m.bits
	mask := uint32(1)<<m.bits - 1
	words := m.packed[r*m.cols/perWord : (r+1)*m.cols/perWord]
	dst = dst[:m.cols]
	for g := 0; g < groups; g++ {
		s, b := m.scales.at(r*groups+g), m.biases.at(r*groups+g)
		out := dst[g*m.group : (g+1)*m.group]
		for i, w := range words[g*m.group/perWord : (g+1)*m.group/perWord] {
			o := out[i*perWord : (i+1)*perWord]
			for k := range o {
				o[k] = s*float32(w&mask) + b
				w >>= m.bits
			}
		}
	}
}
