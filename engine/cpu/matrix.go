package cpu

import (
	"fmt"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// matrix is a weight matrix (rows, cols) in its stored form. y = x·Wᵀ: each
// output element is the dot product of one row with the input.
type matrix interface {
	dims() (rows, cols int)
	// layout is the form the kernels want the input in.
	layout() layout
	// gemv sets out[r] = row r · in.x for r in [lo, hi) (a single input).
	gemv(out []float32, in *input, lo, hi int, s *scratch)
	// panel returns columns [k0, k1) of rows [r, r+4) as f32 in the
	// input's order, four rows stride floats apart; rows past the
	// matrix's end are zero. It dequantises into s.panel or returns a view
	// of the weights, and prefetches the next four rows.
	panel(r, k0, k1 int, s *scratch) (w []float32, stride int)
	// row dequantises row r into dst in natural order.
	row(dst []float32, r int)
}

// The weight views below reinterpret the mapped little-endian bytes in
// place (amd64 and arm64 are little-endian and allow unaligned loads).

func asF32(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

func asU16(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

func asU32(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// newMatrix wraps a bound weight for the kernel set ks.
func newMatrix(t *engine.Tensor, ks *kernelSet) (matrix, error) {
	rows, cols := t.Shape[0], t.Shape[1]
	base := dense{rows: rows, cols: cols, ks: ks}
	if t.Quantized() {
		return newAffine(t, ks)
	}
	if t.BlockQuantized() {
		return newBlockMatrix(t, ks)
	}
	switch t.DType {
	case safetensors.F32:
		return &f32Matrix{base, asF32(t.Data)}, nil
	case safetensors.BF16:
		return &halfMatrix{base, asU16(t.Data), false}, nil
	case safetensors.F16:
		return &halfMatrix{base, asU16(t.Data), true}, nil
	}
	return nil, fmt.Errorf("%s: tensor %s: dtype %s has no CPU kernel", t.File, t.Name, t.DType)
}

// dense is what every matrix has: its shape, and the kernel set that
// multiplies it (its backend's).
type dense struct {
	rows, cols int
	ks         *kernelSet
}

func (d dense) dims() (int, int) { return d.rows, d.cols }
func (d dense) layout() layout   { return layout{} }

type f32Matrix struct {
	dense
	w []float32 // (rows, cols)
}

func (m *f32Matrix) gemv(out []float32, in *input, lo, hi int, _ *scratch) {
	m.ks.gemvF32(out[lo:hi], m.w[lo*m.cols:hi*m.cols], in.x)
}

func (m *f32Matrix) panel(r, k0, k1 int, s *scratch) ([]float32, int) {
	if r+8 <= m.rows {
		for i := r + 4; i < r+8; i++ {
			prefetch(unsafe.Pointer(&m.w[i*m.cols+k0]), 4*(k1-k0))
		}
	}
	if r+4 <= m.rows {
		return m.w[r*m.cols+k0 : (r+3)*m.cols+k1], m.cols
	}
	kw := k1 - k0
	p := s.panel[:4*kw]
	clear(p)
	for i := r; i < m.rows; i++ {
		copy(p[(i-r)*kw:], m.w[i*m.cols+k0:i*m.cols+k1])
	}
	return p, kw
}

func (m *f32Matrix) row(dst []float32, r int) { copy(dst, m.w[r*m.cols:(r+1)*m.cols]) }

// halfMatrix holds bfloat16 or IEEE half weights.
type halfMatrix struct {
	dense
	w   []uint16 // (rows, cols)
	f16 bool
}

func (m *halfMatrix) widen(dst []float32, src []uint16) {
	if m.f16 {
		m.ks.widenF16(dst, src)
	} else {
		m.ks.widenBF16(dst, src)
	}
}

func (m *halfMatrix) gemv(out []float32, in *input, lo, hi int, _ *scratch) {
	w := m.w[lo*m.cols : hi*m.cols]
	if m.f16 {
		m.ks.gemvF16(out[lo:hi], w, in.x)
	} else {
		m.ks.gemvBF16(out[lo:hi], w, in.x)
	}
}

func (m *halfMatrix) panel(r, k0, k1 int, s *scratch) ([]float32, int) {
	kw := k1 - k0
	p := s.panel[:4*kw]
	clear(p[min(4, m.rows-r)*kw:])
	for i := r; i < min(r+4, m.rows); i++ {
		if i+4 < m.rows {
			prefetch(unsafe.Pointer(&m.w[(i+4)*m.cols+k0]), 2*kw)
		}
		m.widen(p[(i-r)*kw:], m.w[i*m.cols+k0:i*m.cols+k1])
	}
	return p, kw
}

func (m *halfMatrix) row(dst []float32, r int) {
	m.widen(dst, m.w[r*m.cols:(r+1)*m.cols])
}
