package cpu

import (
	"fmt"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/half"
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

// halfVec is a vector of scales or biases in its stored dtype.
type halfVec struct {
	f32 []float32
	u16 []uint16
	f16 bool
}

func newHalfVec(t *engine.Tensor) halfVec {
	switch t.DType {
	case safetensors.F32:
		return halfVec{f32: asF32(t.Data)}
	case safetensors.F16:
		return halfVec{u16: asU16(t.Data), f16: true}
	}
	return halfVec{u16: asU16(t.Data)}
}

func (h halfVec) len() int { return len(h.f32) + len(h.u16) }

func (h halfVec) slice(lo, hi int) halfVec {
	if h.f32 != nil {
		return halfVec{f32: h.f32[lo:hi]}
	}
	return halfVec{u16: h.u16[lo:hi], f16: h.f16}
}

func (h halfVec) at(i int) float32 {
	switch {
	case h.f32 != nil:
		return h.f32[i]
	case h.f16:
		return half.F16ToF32(h.u16[i])
	}
	return half.BF16ToF32(h.u16[i])
}

func newAffine(t *engine.Tensor, ks *kernelSet) (*affineMatrix, error) {
	if t.Bits != 4 && t.Bits != 8 {
		return nil, fmt.Errorf("%s: tensor %s: %d-bit weights have no CPU kernel", t.File, t.Name, t.Bits)
	}
	if g := t.GroupSize; g != 32 && g != 64 && g != 128 {
		return nil, fmt.Errorf("%s: tensor %s: group size %d has no CPU kernel (want 32, 64 or 128)", t.File, t.Name, g)
	}
	return &affineMatrix{
		dense:  dense{rows: t.Shape[0], cols: t.Shape[1], ks: ks},
		bits:   t.Bits,
		group:  t.GroupSize,
		packed: asU32(t.Data),
		scales: newHalfVec(t.Scales),
		biases: newHalfVec(t.Biases),
	}, nil
}

func (m *affineMatrix) layout() layout {
	return layout{nibbles: m.bits == 4, group: m.group, int8: m.ks.int8()}
}

func (m *affineMatrix) gemv(out []float32, in *input, lo, hi int, s *scratch) {
	groups, wpr := m.cols/m.group, m.cols*m.bits/32
	o, w := out[lo:hi], m.packed[lo*wpr:hi*wpr]
	sc, bi := m.scales.slice(lo*groups, hi*groups), m.biases.slice(lo*groups, hi*groups)
	switch {
	case in.xq != nil && m.bits == 4:
		m.ks.gemvQ4I8(o, w, sc, bi, in.xq, in.dx, in.xsum, s.f, m.group)
	case in.xq != nil:
		m.ks.gemvQ8I8(o, w, sc, bi, in.xq, in.dx, in.xsum, s.f, m.group)
	case m.bits == 4:
		m.ks.gemvQ4(o, w, sc, bi, in.x, in.xsum, m.group)
	default:
		m.ks.gemvQ8(o, w, sc, bi, in.x, in.xsum, m.group)
	}
}

func (m *affineMatrix) panel(r, k0, k1 int, s *scratch) ([]float32, int) {
	kw, n := k1-k0, min(4, m.rows-r)
	groups, wpr := m.cols/m.group, m.cols*m.bits/32
	g0 := r*groups + k0/m.group
	w := m.packed[r*wpr+k0*m.bits/32:]
	sc, bi := m.scales.slice(g0, m.scales.len()), m.biases.slice(g0, m.biases.len())
	p := s.panel[:4*kw]
	if m.bits == 4 {
		m.ks.dequantQ4(p, kw, w, wpr, sc, bi, groups, n, m.group)
	} else {
		m.ks.dequantQ8(p, kw, w, wpr, sc, bi, groups, n, m.group)
	}
	clear(p[n*kw:])
	return p, kw
}

// row dequantises row r in natural order (the embedding lookup).
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
