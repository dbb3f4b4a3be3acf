package cpu

import (
	"fmt"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/internal/half"
)

// blockMatrix is a GGUF block-quantised matrix (Q4_0, Q4_1, Q8_0, Q4_K,
// Q5_K, Q6_K), read in place: each row is its blocks, dequantised into
// the worker's scratch as a row or a panel is needed (gguf.Dequantize),
// then multiplied on the float kernels. This is the reference path; the
// weights are never copied. Q4_0, Q4_1 and Q8_0 also have int8 kernels
// (blocks_i8.go).
type blockMatrix struct {
	dense
	typ      gguf.Type
	data     []byte
	rowBytes int
	block    int // weights per block
}

func newBlockMatrix(t *engine.Tensor, ks *kernelSet) (*blockMatrix, error) {
	rows, cols := t.Shape[0], t.Shape[1]
	rb, err := t.Blocks.RowBytes(cols)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %s: %w", t.File, t.Name, err)
	}
	if len(t.Data) != rows*rb {
		return nil, fmt.Errorf("%s: tensor %s: %d bytes, want %d for %d rows of %d %s weights", t.File, t.Name, len(t.Data), rows*rb, rows, cols, t.Blocks)
	}
	return &blockMatrix{dense: dense{rows: rows, cols: cols, ks: ks}, typ: t.Blocks, data: t.Data, rowBytes: rb, block: t.Blocks.BlockSize()}, nil
}

func (m *blockMatrix) gemv(out []float32, in *input, lo, hi int, s *scratch) {
	if in.xq != nil {
		m.ks.gemvBlocksI8[blockI8Type(m.typ)](out[lo:hi], m.data[lo*m.rowBytes:hi*m.rowBytes], in.xq, in.dx, in.xsum, in.bs)
		return
	}
	x := in.x
	switch m.typ {
	case gguf.Q8_0:
		for r := lo; r < hi; r++ {
			out[r] = dotQ8_0(m.data[r*m.rowBytes:(r+1)*m.rowBytes], x)
		}
		return
	case gguf.Q4_0, gguf.Q4_1:
		for r := lo; r < hi; r++ {
			out[r] = dotQ4(m.data[r*m.rowBytes:(r+1)*m.rowBytes], x, m.typ == gguf.Q4_1)
		}
		return
	}
	w := s.deq[:m.cols]
	for r := lo; r < hi; r++ {
		m.row(w, r)
		m.ks.gemvF32(out[r:r+1], w, x)
	}
}

// dotQ8_0 is a row of Q8_0 blocks (f16 d, 32 int8 codes) · x, without
// writing the weights out: Σ d·Σq·x over the blocks.
func dotQ8_0(row []byte, x []float32) float32 {
	var acc float32
	for b := 0; b+34 <= len(row); b += 34 {
		q, xs := row[b+2:b+34], x[b/34*32:][:32]
		var s0, s1, s2, s3 float32
		for j := 0; j < 32; j += 4 {
			s0 += float32(int8(q[j])) * xs[j]
			s1 += float32(int8(q[j+1])) * xs[j+1]
			s2 += float32(int8(q[j+2])) * xs[j+2]
			s3 += float32(int8(q[j+3])) * xs[j+3]
		}
		acc += half.F16ToF32(uint16(row[b])|uint16(row[b+1])<<8) * ((s0 + s1) + (s2 + s3))
	}
	return acc
}

// nibble is each 4-bit code as a float (a load is cheaper than a
// conversion).
var nibble = [16]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// dotQ4 is a row of Q4_0 blocks (f16 d, 16 bytes of codes: low nibbles
// the first 16 weights; w = d·(q−8)) or Q4_1 blocks (f16 d and m, then
// the codes; w = d·q + m) · x, without writing the weights out:
// Σ d·Σq·x + m·Σx over the blocks, m = −8d for Q4_0.
func dotQ4(row []byte, x []float32, q41 bool) float32 {
	bb, head := 18, 2
	if q41 {
		bb, head = 20, 4
	}
	var acc float32
	for b := 0; b+bb <= len(row); b += bb {
		q, xs := row[b+head : b+bb][:16], x[b/bb*32:][:32]
		lo, hi := xs[:16:16], xs[16:32:32]
		var s0, s1, s2, s3, x0, x1 float32
		for j := 0; j < 16; j += 2 {
			q0, q1 := q[j], q[j+1]
			s0 += nibble[q0&15] * lo[j]
			s1 += nibble[q0>>4] * hi[j]
			s2 += nibble[q1&15] * lo[j+1]
			s3 += nibble[q1>>4] * hi[j+1]
			x0 += lo[j] + hi[j]
			x1 += lo[j+1] + hi[j+1]
		}
		d := half.F16ToF32(uint16(row[b]) | uint16(row[b+1])<<8)
		m := -8 * d
		if q41 {
			m = half.F16ToF32(uint16(row[b+2]) | uint16(row[b+3])<<8)
		}
		acc += d*((s0+s1)+(s2+s3)) + m*(x0+x1)
	}
	return acc
}

func (m *blockMatrix) panel(r, k0, k1 int, s *scratch) ([]float32, int) {
	kw := k1 - k0
	p := s.panel[:4*kw]
	clear(p[min(4, m.rows-r)*kw:])
	b0, b1 := k0/m.block, (k1+m.block-1)/m.block
	bb := m.rowBytes / (m.cols / m.block)
	deq := s.deq[:(b1-b0)*m.block]
	whole := k0%m.block == 0 && k1%m.block == 0 // straight into the panel
	for i := r; i < min(r+4, m.rows); i++ {
		row := m.data[i*m.rowBytes : (i+1)*m.rowBytes]
		if whole {
			m.dequant(p[(i-r)*kw:(i-r+1)*kw], row[b0*bb:b1*bb])
			continue
		}
		m.dequant(deq, row[b0*bb:b1*bb])
		copy(p[(i-r)*kw:(i-r+1)*kw], deq[k0-b0*m.block:])
	}
	return p, kw
}

func (m *blockMatrix) row(dst []float32, r int) {
	m.dequant(dst[:m.cols], m.data[r*m.rowBytes:(r+1)*m.rowBytes])
}

// dequant is gguf.Dequantize of whole blocks of m's type, on the kernel
// set's assembly where it has it (Q6_K, whose batches stay in float
// on sets without gemmQ6K).
func (m *blockMatrix) dequant(dst []float32, src []byte) {
	if m.typ == gguf.Q6_K && m.ks.dequantQ6K != nil {
		m.ks.dequantQ6K(dst, src)
		return
	}
	gguf.Dequantize(m.typ, dst, src)
}
