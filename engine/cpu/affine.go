package cpu

import (
	"fmt"
	"unsafe"

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

func (h halfVec) prefetch(i, n int) {
	if h.f32 != nil {
		prefetch(unsafe.Pointer(&h.f32[i]), 4*n)
	} else {
		prefetch(unsafe.Pointer(&h.u16[i]), 2*n)
	}
}

func (h halfVec) at(i int) float32 {
	switch {
	case h.f32 != nil:
		return h.f32[i]
	case h.f16:
		return f16ToF32(h.u16[i])
	}
	return bf16(h.u16[i])
}

// span returns elements [lo, hi) as f32: a view when stored as f32,
// otherwise widened into buf.
func (h halfVec) span(buf []float32, lo, hi int) []float32 {
	switch {
	case h.f32 != nil:
		return h.f32[lo:hi]
	case h.f16:
		kern.widenF16(buf, h.u16[lo:hi])
	default:
		kern.widenBF16(buf, h.u16[lo:hi])
	}
	return buf[:hi-lo]
}

// gemv sets out[r] = h[r·len(x):(r+1)·len(x)]·x.
func (h halfVec) gemv(out, x []float32) {
	switch {
	case h.f32 != nil:
		kern.gemvF32(out, h.f32, x)
	case h.f16:
		kern.gemvF16(out, h.u16, x)
	default:
		kern.gemvBF16(out, h.u16, x)
	}
}

func newAffine(t *engine.Tensor) (*affineMatrix, error) {
	if t.Bits != 4 && t.Bits != 8 {
		return nil, fmt.Errorf("%s: tensor %s: %d-bit weights have no CPU kernel", t.File, t.Name, t.Bits)
	}
	if g := t.GroupSize; g != 32 && g != 64 && g != 128 {
		return nil, fmt.Errorf("%s: tensor %s: group size %d has no CPU kernel (want 32, 64 or 128)", t.File, t.Name, g)
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

func (m *affineMatrix) layout() layout { return layout{nibbles: m.bits == 4, group: m.group} }

// gemv uses Σ(s·q+b)·x = s·Σq·x + b·Σx per group: the bias half is the
// biases times the group sums of x (a small matrix-vector product), and
// the code kernel adds the scaled code sums.
func (m *affineMatrix) gemv(out []float32, in *input, lo, hi int, _ *scratch) {
	groups, wpr := m.cols/m.group, m.cols*m.bits/32
	o, w := out[lo:hi], m.packed[lo*wpr:hi*wpr]
	sc := m.scales.slice(lo*groups, hi*groups)
	m.biases.slice(lo*groups, hi*groups).gemv(o, in.xsum)
	if m.bits == 4 {
		kern.gemvQ4(o, w, sc, in.x, m.group)
	} else {
		kern.gemvQ8(o, w, sc, in.x, m.group)
	}
}

func (m *affineMatrix) panel(r, k0, k1 int, s *scratch) ([]float32, int) {
	kw := k1 - k0
	p := s.panel[:4*kw]
	clear(p[min(4, m.rows-r)*kw:])
	for i := r; i < min(r+4, m.rows); i++ {
		if i+4 < m.rows {
			m.prefetch(i+4, k0, k1)
		}
		m.dequant(p[(i-r)*kw:(i-r+1)*kw], i, k0, k1, s)
	}
	return p, kw
}

// prefetch asks for the codes, scales and biases of row r, columns
// [k0, k1).
func (m *affineMatrix) prefetch(r, k0, k1 int) {
	groups, wpr := m.cols/m.group, m.cols*m.bits/32
	g0, g1 := r*groups+k0/m.group, r*groups+k1/m.group
	prefetch(unsafe.Pointer(&m.packed[r*wpr+k0*m.bits/32]), (k1-k0)*m.bits/8)
	m.scales.prefetch(g0, g1-g0)
	m.biases.prefetch(g0, g1-g0)
}

// dequant expands columns [k0, k1) of row r into dst, q4 in nibble order.
func (m *affineMatrix) dequant(dst []float32, r, k0, k1 int, s *scratch) {
	groups, wpr := m.cols/m.group, m.cols*m.bits/32
	g0, g1 := r*groups+k0/m.group, r*groups+k1/m.group
	sc := m.scales.span(s.sc, g0, g1)
	bi := m.biases.span(s.bi, g0, g1)
	w := m.packed[r*wpr+k0*m.bits/32 : r*wpr+k1*m.bits/32]
	if m.bits == 4 {
		kern.dequantQ4(dst, w, sc, bi, m.group)
	} else {
		kern.dequantQ8(dst, w, sc, bi, m.group)
	}
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
