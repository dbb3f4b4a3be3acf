package cpu

import (
	"encoding/binary"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/internal/half"
)

// GGUF's Q4_0, Q4_1 and Q8_0 blocks over int8 activations (int8.go): a
// block of 32 weights is one chunk of the input, and row r times x is
//
//	Σ_c d[r,c]·dx[c]·Σ_{k∈c} q[r,k]·xq[k] + m[r,c]·xsum[c]
//
// with q the block's unsigned codes and m its bias: Q4_1's minimum, −8d
// for Q4_0 (whose weights are d·(q−8)), 0 for Q8_0 (signed codes) or
// −128d where its codes go unsigned, 128 added. As xsum is dx·Σxq
// (quantSums), this is the same integer sum Σ d·dx·Σ(q−8)·xq that
// llama.cpp's ggml_vec_dot_q4_0_q8_0 and kin compute. The weights are
// read in place; the inner sums are exact in int32.

// blockGemvI8 sets out[r] = row r of w · x for r < len(out), w rows of
// len(w)/len(out) bytes of GGUF blocks of one type and x given as quantI8
// and quantSums wrote it, in natural order (so every xq is in
// [−127, 127]); bs is nil, or, for a k-quant kernel of a set with quantK,
// x as quantK wrote it and the sums of each 16 of xq (sums16).
type blockGemvI8 func(out []float32, w []byte, xq []int8, dx, xsum []float32, bs []int16)

// The k-quants' kernels of a set with quantK (AVX-512 VNNI) fold each
// chunk's integer scale into the integer sums, as llama.cpp's Q8_K
// kernels do: with one step dx for the 256 activations of a super-block,
//
//	Σ_j d·sc[j]·dx·Σ_{k∈j} q·xq = d·dx·Σ_j sc[j]·Σ_{k∈j} q·xq,
//
// one int32 sum a lane and one float multiply-add a super-block, where
// a step per chunk costs a conversion and a multiply-add a chunk (the
// same for the 16-weight halves of Q6_K). Q6_K's codes then go unsigned,
// its −32 taken off as 32·Σ sc·bs with bs the sums of each 16 of xq.
// The price is a coarser step: one per 256 activations rather than 32,
// llama.cpp's trade (docs/RATIONALE.md, "Integer activations").

// superStep reports whether dx, a step per chunk of 32, holds one step
// for each super-block of 256, as the folding kernels need.
func superStep(dx []float32) bool {
	for c := range dx {
		if dx[c] != dx[c&^7] {
			return false
		}
	}
	return true
}

// sums16 sets bs[i] to the sum of xq[16i:16i+16].
func sums16(bs []int16, xq []int8) {
	for i := range bs {
		bs[i] = int16(sum16(xq[16*i:]))
	}
}

// isK reports whether t is a k-quant with an int8 kernel.
func isK(t gguf.Type) bool { return t == gguf.Q4_K || t == gguf.Q5_K || t == gguf.Q6_K }

// blockGemvShape checks the operands of a blockGemvI8 for blocks of typ,
// which the assembly kernels trust, and returns the rows, the row's bytes
// and the input's chunks of 32 (rows 0: nothing to do).
func blockGemvShape(typ gguf.Type, out []float32, w []byte, xq []int8, dx, xsum []float32) (rows, rowBytes, chunks int) {
	rows, chunks = len(out), len(xq)/32
	if rows == 0 {
		return 0, 0, 0
	}
	rb, err := typ.RowBytes(len(xq))
	if err != nil || chunks == 0 || len(w) != rows*rb || len(dx) < chunks || len(xsum) < chunks {
		panic("cpu: int8 block gemv operands do not match")
	}
	return rows, rb, chunks
}

// blockPanelI8 lays out sixteen rows of blocks of one type, the first
// at w[0], rowBytes apart, as fillI8 does.
type blockPanelI8 func(p *i8Panel, w []byte, rowBytes int)

// blockI8Types counts the block types with int8 kernels: Q4_0, Q4_1,
// Q8_0 and the k-quants Q4_K, Q5_K, Q6_K (blockI8Type).
const blockI8Types = 6

// blockI8Type is the index of a block type in kernelSet.gemvBlocksI8, or
// -1 where the type has no int8 kernel.
func blockI8Type(t gguf.Type) int {
	switch t {
	case gguf.Q4_0:
		return 0
	case gguf.Q4_1:
		return 1
	case gguf.Q8_0:
		return 2
	case gguf.Q4_K:
		return 3
	case gguf.Q5_K:
		return 4
	case gguf.Q6_K:
		return 5
	}
	return -1
}

// int8 says whether m's products take int8 activations: the kernel set
// has them and m's blocks have a kernel.
func (m *blockMatrix) int8() bool {
	i := blockI8Type(m.typ)
	return i >= 0 && m.ks.gemvBlocksI8[i] != nil
}

// layout: Q6_K's batches stay in float unless the set has gemmQ6K, as
// Q6_K has one scale per 16 weights where gemmI8 takes one per chunk.
func (m *blockMatrix) layout() layout {
	i8 := m.int8()
	return layout{int8: i8, floatBatch: m.typ == gguf.Q6_K && m.ks.gemmQ6K == nil, super: i8 && isK(m.typ) && m.ks.quantK != nil,
		halves: i8 && isK(m.typ) && m.ks.gemmQ6K != nil}
}

func (m *blockMatrix) codes(r0, r1 int) []byte {
	return m.data[min(r0, r1)*m.rowBytes : r1*m.rowBytes]
}

// batchGemm is the batch kernel m's panels want: Q8_0's and Q4_0's
// codes stay signed for the set's gemmSigned where it has one, or else
// Q8_0's, 128 added, fill a byte (gemmI8[1]); Q6_K's are signed, in two
// halves (gemmQ6K); the others are at most 31 (gemmI8[0]).
func (m *blockMatrix) batchGemm() gemmI8 {
	if m.ks.gemmSigned != nil && (m.typ == gguf.Q8_0 || m.typ == gguf.Q4_0) {
		return m.ks.gemmSigned
	}
	switch m.typ {
	case gguf.Q8_0:
		return m.ks.gemmI8[1]
	case gguf.Q6_K:
		return m.ks.gemmQ6K
	}
	return m.ks.gemmI8[0]
}

// fillI8 lays out rows [r0, r0+nr) as an int8 panel (i8Panel), in
// natural order: the codes unsigned, each chunk's scale and bias (Q4_0:
// d and −8d; Q4_1: d and m; Q8_0: d and −128d, its codes moved up by
// 128; Q4_K and Q5_K: d·sc and −dmin·m), so that scale·code + bias is
// the weight as gguf.Dequantize gives it. Four codes move at a time as a
// word; whole panels go to the kernel set's assembly where it has it.
func (m *blockMatrix) fillI8(p *i8Panel, r0, nr int) {
	if f := m.ks.panelBlocksI8[blockI8Type(m.typ)]; f != nil && nr == 16 {
		f(p, m.data[r0*m.rowBytes:(r0+16)*m.rowBytes], m.rowBytes)
		return
	}
	w := unsafe.Slice((*uint32)(unsafe.Pointer(&p.w[0])), len(p.w)/4)
	for r := range nr {
		row := m.data[(r0+r)*m.rowBytes:][:m.rowBytes]
		switch m.typ {
		case gguf.Q4_K, gguf.Q5_K:
			fillK(p, w, row, r, m.typ == gguf.Q5_K)
		case gguf.Q6_K:
			fillQ6K(p, w, row, r)
		default:
			fillLegacy(p, w, row, r, m.typ, m.ks.gemmSigned != nil)
		}
	}
}

// fillLegacy lays out row r of a panel from a row of Q4_0, Q4_1 or Q8_0
// blocks; w is p.w as words. With signed, Q8_0's and Q4_0's codes are
// signed, as their weights are (Q4_0's less 8), with no bias (for
// gemmSigned).
func fillLegacy(p *i8Panel, w []uint32, row []byte, r int, typ gguf.Type, signed bool) {
	bb := typ.BlockBytes()
	for c := range len(row) / bb {
		b := row[c*bb:][:bb]
		d := half.F16ToF32(binary.LittleEndian.Uint16(b))
		o := w[c*8*16+r:] // word i of the chunk at o[16·i]
		switch typ {
		case gguf.Q8_0:
			flip := uint32(0x80808080)
			p.s[c*16+r], p.b[c*16+r] = d, -128*d
			if signed {
				flip, p.b[c*16+r] = 0, 0
			}
			for i := range 8 {
				o[16*i] = binary.LittleEndian.Uint32(b[2+4*i:]) ^ flip
			}
			continue
		case gguf.Q4_0:
			p.s[c*16+r], p.b[c*16+r] = d, -8*d
			b = b[2:]
		default: // Q4_1
			p.s[c*16+r], p.b[c*16+r] = d, half.F16ToF32(binary.LittleEndian.Uint16(b[2:]))
			b = b[4:]
		}
		signedQ4 := signed && typ == gguf.Q4_0
		if signedQ4 {
			p.b[c*16+r] = 0
		}
		for i := range 4 { // low nibbles: weights 0-15, high: 16-31
			v := binary.LittleEndian.Uint32(b[4*i:])
			lo, hi := v&0x0f0f0f0f, v>>4&0x0f0f0f0f
			if signedQ4 {
				// Each byte's code less 8, as int8: adding 0x78 to a
				// code of at most 15 carries into no other byte.
				lo, hi = (lo+0x78787878)^0x80808080, (hi+0x78787878)^0x80808080
			}
			o[16*i], o[16*(4+i)] = lo, hi
		}
	}
}

// fillK lays out row r of a panel from a row of Q4_K or Q5_K
// super-blocks (gguf's dequantQ4_K and dequantQ5_K give the layout): sub-
// block j is chunk j, its codes the low (even j) or high nibbles of 32
// bytes, and for Q5_K bit j of each qh byte as bit 4.
func fillK(p *i8Panel, w []uint32, row []byte, r int, q5 bool) {
	bb, qsAt := 144, 16
	if q5 {
		bb, qsAt = 176, 48
	}
	for sb := range len(row) / bb {
		b := row[sb*bb:][:bb]
		d := half.F16ToF32(binary.LittleEndian.Uint16(b))
		dmin := half.F16ToF32(binary.LittleEndian.Uint16(b[2:]))
		qs, qh := b[qsAt:], b[16:48]
		for j := range 8 {
			sc, mn := gguf.ScaleMinK4(j, b[4:16])
			c := sb*8 + j
			p.s[c*16+r], p.b[c*16+r] = d*float32(sc), -(dmin * float32(mn))
			o := w[c*8*16+r:]
			for i := range 8 {
				v := binary.LittleEndian.Uint32(qs[32*(j/2)+4*i:]) >> (4 * (j & 1)) & 0x0f0f0f0f
				if q5 {
					v |= binary.LittleEndian.Uint32(qh[4*i:]) >> j & 0x01010101 << 4
				}
				o[16*i] = v
			}
		}
	}
}

// fillQ6K lays out row r of a panel from a row of Q6_K super-blocks for
// gemmQ6K (gguf's dequantQ6_K gives the layout): chunk j's codes are
// q−32 as int8, q the low (j%4 < 2) or high nibbles of 32 ql bytes with
// two bits of each qh byte as bits 4 and 5; its first sixteen columns
// take scale d·sc[2j] (p.s), its last sixteen d·sc[2j+1] (p.b).
func fillQ6K(p *i8Panel, w []uint32, row []byte, r int) {
	for sb := range len(row) / 210 {
		b := row[sb*210:][:210]
		d := half.F16ToF32(binary.LittleEndian.Uint16(b[208:]))
		for j := range 8 {
			c := sb*8 + j
			p.s[c*16+r], p.b[c*16+r] = d*float32(int8(b[192+2*j])), d*float32(int8(b[193+2*j]))
			half, q := j/4, j%4
			ql, qh := b[64*half+32*(q&1):], b[128+32*half:]
			o := w[c*8*16+r:]
			for i := range 8 {
				v := binary.LittleEndian.Uint32(ql[4*i:])>>(4*(q>>1))&0x0f0f0f0f |
					binary.LittleEndian.Uint32(qh[4*i:])>>(2*q)&0x03030303<<4
				o[16*i] = (v | 0x80808080) - 0x20202020 ^ 0x80808080 // each byte less 32
			}
		}
	}
}
