package engine

import (
	"fmt"
	"math"
	"unsafe"
)

// ShiftKV returns s without positions [start, start+drop): the keep
// positions after the gap move down by drop and the rest are dropped.
// Keys are stored rotated by RoPE (rotate-half layout, as every backend
// keeps them) and rotations compose, so a key cached at position p is
// moved to p-drop by rotating it back by drop positions; values carry no
// position. This is llama.cpp's context shift: the moved positions keep
// what they computed while the dropped tokens were in view, so the
// result is close to, not equal to, a fresh prefill of the kept tokens
// (docs/RATIONALE.md, "Past the context window", has the measurement).
// s is not changed; it may be in any cache type, and the result is
// float32 (a cache converts it to its own type as it imports it, so a
// shift rounds the moved keys once more).
func (c *Config) ShiftKV(s *KVState, start, drop, keep int) (*KVState, error) {
	switch {
	case start < 0 || drop < 0 || keep < 0 || start+drop+keep > s.Len:
		return nil, fmt.Errorf("shift KV: positions [%d, %d) then %d more do not lie in the %d held", start, start+drop, keep, s.Len)
	case s.HeadDim != c.HeadDim || s.HeadDim%2 != 0:
		return nil, fmt.Errorf("shift KV: head_dim %d, the model's %d", s.HeadDim, c.HeadDim)
	}
	s = s.Convert(KVF32)
	inv := c.InvFreq()
	cos, sin := make([]float32, len(inv)), make([]float32, len(inv))
	for i, f := range inv {
		s, c := math.Sincos(float64(drop) * f)
		cos[i], sin[i] = float32(c), float32(s)
	}
	n := start + keep
	out := &KVState{Len: n, KVHeads: s.KVHeads, HeadDim: s.HeadDim, DType: s.DType,
		K: make([][]byte, len(s.K)), V: make([][]byte, len(s.V))}
	hd := s.HeadDim
	for l := range s.K {
		out.K[l] = make([]byte, 4*s.KVHeads*n*hd)
		out.V[l] = make([]byte, 4*s.KVHeads*n*hd)
		srcK, srcV := f32s(s.K[l]), f32s(s.V[l])
		dstK, dstV := f32s(out.K[l]), f32s(out.V[l])
		for h := 0; h < s.KVHeads; h++ {
			from, to := h*s.Len*hd, h*n*hd
			copy(dstK[to:to+start*hd], srcK[from:])
			copy(dstV[to:to+start*hd], srcV[from:from+start*hd])
			moved := from + (start+drop)*hd
			copy(dstV[to+start*hd:to+n*hd], srcV[moved:moved+keep*hd])
			for p := 0; p < keep; p++ {
				unrotate(dstK[to+(start+p)*hd:to+(start+p+1)*hd], srcK[moved+p*hd:moved+(p+1)*hd], cos, sin)
			}
		}
	}
	return out, nil
}

// unrotate writes into dst the head src rotated back by the angles whose
// cosines and sines are given (rotate-half layout: element i pairs with
// element i+half).
func unrotate(dst, src, cos, sin []float32) {
	half := len(src) / 2
	for i := 0; i < half; i++ {
		a, b := src[i], src[i+half]
		dst[i] = a*cos[i] + b*sin[i]
		dst[i+half] = b*cos[i] - a*sin[i]
	}
}

// f32s views little-endian float32 bytes as floats (every platform Go
// supports for this program is little-endian, as safetensors is).
func f32s(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// Head is a copy of s's first n positions (n ≤ s.Len), such as a
// conversation's shared start for a prefix cache.
func (s *KVState) Head(n int) *KVState {
	out := &KVState{Len: n, KVHeads: s.KVHeads, HeadDim: s.HeadDim, DType: s.DType}
	// head keeps the first n positions of each head of a tensor whose
	// positions are row bytes each.
	head := func(ts [][]byte, row int) [][]byte {
		out := make([][]byte, len(ts))
		for l, src := range ts {
			dst := make([]byte, 0, s.KVHeads*n*row)
			for h := 0; h < s.KVHeads; h++ {
				dst = append(dst, src[h*s.Len*row:(h*s.Len+n)*row]...)
			}
			out[l] = dst
		}
		return out
	}
	row := s.HeadDim * s.DType.Size()
	if q := s.Quant; q != nil {
		row = s.HeadDim * q.Bits / 8
		srow := s.HeadDim / q.Group * q.ScaleDType.Size()
		out.Quant = &KVQuant{Group: q.Group, Bits: q.Bits, ScaleDType: q.ScaleDType,
			KScales: head(q.KScales, srow), KBiases: head(q.KBiases, srow),
			VScales: head(q.VScales, srow), VBiases: head(q.VBiases, srow)}
	}
	out.K, out.V = head(s.K, row), head(s.V, row)
	return out
}
