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
	// mul sets out[b*rows+r] = row r · x[b*cols:(b+1)*cols] for r in
	// [lo, hi) and b in [0, n). scratch holds at least cols floats and is
	// the calling worker's own.
	mul(out, x []float32, n, lo, hi int, scratch []float32)
	// row dequantises row r into dst.
	row(dst []float32, r int)
	dims() (rows, cols int)
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

// newMatrix wraps a bound weight for the kernels.
func newMatrix(t *engine.Tensor) (matrix, error) {
	rows, cols := t.Shape[0], t.Shape[1]
	base := dense{rows: rows, cols: cols}
	if t.Quantized() {
		return newAffine(t)
	}
	switch t.DType {
	case safetensors.F32:
		return &f32Matrix{base, asF32(t.Data)}, nil
	case safetensors.BF16:
		return &bf16Matrix{base, asU16(t.Data)}, nil
	case safetensors.F16:
		return &f16Matrix{base, asU16(t.Data), f16Table()}, nil
	}
	return nil, fmt.Errorf("%s: tensor %s: dtype %s has no CPU kernel", t.File, t.Name, t.DType)
}

type dense struct{ rows, cols int }

func (d dense) dims() (int, int) { return d.rows, d.cols }

type f32Matrix struct {
	dense
	w []float32 // (rows, cols)
}

func (m *f32Matrix) mul(out, x []float32, n, lo, hi int, _ []float32) {
	for r := lo; r < hi; r++ {
		w := m.w[r*m.cols : (r+1)*m.cols]
		for b := 0; b < n; b++ {
			out[b*m.rows+r] = dot(w, x[b*m.cols:])
		}
	}
}

func (m *f32Matrix) row(dst []float32, r int) { copy(dst, m.w[r*m.cols:(r+1)*m.cols]) }

type bf16Matrix struct {
	dense
	w []uint16 // (rows, cols)
}

func (m *bf16Matrix) mul(out, x []float32, n, lo, hi int, scratch []float32) {
	for r := lo; r < hi; r++ {
		if n == 1 {
			w := m.w[r*m.cols : (r+1)*m.cols]
			xs := x[:len(w)]
			var s0, s1 float32
			i := 0
			for ; i+2 <= len(w); i += 2 {
				s0 += bf16(w[i]) * xs[i]
				s1 += bf16(w[i+1]) * xs[i+1]
			}
			for ; i < len(w); i++ {
				s0 += bf16(w[i]) * xs[i]
			}
			out[r] = s0 + s1
			continue
		}
		m.row(scratch, r)
		rowMul(out, x, scratch[:m.cols], n, m.rows, r)
	}
}

func (m *bf16Matrix) row(dst []float32, r int) {
	w := m.w[r*m.cols : (r+1)*m.cols]
	dst = dst[:len(w)]
	for i, h := range w {
		dst[i] = bf16(h)
	}
}

type f16Matrix struct {
	dense
	w   []uint16 // (rows, cols)
	tab *[1 << 16]float32
}

func (m *f16Matrix) mul(out, x []float32, n, lo, hi int, scratch []float32) {
	for r := lo; r < hi; r++ {
		if n == 1 {
			w := m.w[r*m.cols : (r+1)*m.cols]
			xs := x[:len(w)]
			var s0, s1 float32
			i := 0
			for ; i+2 <= len(w); i += 2 {
				s0 += m.tab[w[i]] * xs[i]
				s1 += m.tab[w[i+1]] * xs[i+1]
			}
			for ; i < len(w); i++ {
				s0 += m.tab[w[i]] * xs[i]
			}
			out[r] = s0 + s1
			continue
		}
		m.row(scratch, r)
		rowMul(out, x, scratch[:m.cols], n, m.rows, r)
	}
}

func (m *f16Matrix) row(dst []float32, r int) {
	w := m.w[r*m.cols : (r+1)*m.cols]
	dst = dst[:len(w)]
	for i, h := range w {
		dst[i] = m.tab[h]
	}
}

// rowMul sets out[b*rows+r] = w · x_b for every input b of a batch: the row
// is dequantised once and reused n times.
func rowMul(out, x, w []float32, n, rows, r int) {
	for b := 0; b < n; b++ {
		out[b*rows+r] = dot(w, x[b*len(w):])
	}
}
