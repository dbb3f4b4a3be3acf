package cpu

import (
	"fmt"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

// blockMatrix is a GGUF block-quantised matrix (Q4_0, Q4_1, Q8_0, Q4_K,
// Q5_K, Q6_K), read in place: each row is its blocks, dequantised into
// the worker's scratch as a row or a panel is needed (gguf.Dequantize),
// then multiplied on the float kernels. This is the reference path; the
// weights are never copied.
type blockMatrix struct {
	dense
	typ      gguf.Type
	data     []byte
	rowBytes int
	block    int // weights per block
}

func newBlockMatrix(t *engine.Tensor) (*blockMatrix, error) {
	rows, cols := t.Shape[0], t.Shape[1]
	rb, err := t.Blocks.RowBytes(cols)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %s: %w", t.File, t.Name, err)
	}
	if len(t.Data) != rows*rb {
		return nil, fmt.Errorf("%s: tensor %s: %d bytes, want %d for %d rows of %d %s weights", t.File, t.Name, len(t.Data), rows*rb, rows, cols, t.Blocks)
	}
	return &blockMatrix{dense: dense{rows: rows, cols: cols}, typ: t.Blocks, data: t.Data, rowBytes: rb, block: t.Blocks.BlockSize()}, nil
}

func (m *blockMatrix) gemv(out []float32, in *input, lo, hi int, s *scratch) {
	w := s.deq[:m.cols]
	for r := lo; r < hi; r++ {
		m.row(w, r)
		kern.gemvF32(out[r:r+1], w, in.x)
	}
}

func (m *blockMatrix) panel(r, k0, k1 int, s *scratch) ([]float32, int) {
	kw := k1 - k0
	p := s.panel[:4*kw]
	clear(p[min(4, m.rows-r)*kw:])
	b0, b1 := k0/m.block, (k1+m.block-1)/m.block
	bb := m.rowBytes / (m.cols / m.block)
	deq := s.deq[:(b1-b0)*m.block]
	for i := r; i < min(r+4, m.rows); i++ {
		row := m.data[i*m.rowBytes : (i+1)*m.rowBytes]
		gguf.Dequantize(m.typ, deq, row[b0*bb:b1*bb])
		copy(p[(i-r)*kw:(i-r+1)*kw], deq[k0-b0*m.block:])
	}
	return p, kw
}

func (m *blockMatrix) row(dst []float32, r int) {
	gguf.Dequantize(m.typ, dst[:m.cols], m.data[r*m.rowBytes:(r+1)*m.rowBytes])
}
