package engine

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/half"
)

// Q8Block is how many values of a head one q8_0 scale covers.
const Q8Block = 32

// QuantizeQ8 writes x as q8_0 blocks, llama.cpp's: for each Q8Block
// values, codes in [-127, 127] and one scale (an f16 value, held as
// float32) with x ≈ scale·code. len(x) is a multiple of Q8Block.
func QuantizeQ8(codes []int8, scales []float32, x []float32) {
	for b := range len(x) / Q8Block {
		blk := x[b*Q8Block : (b+1)*Q8Block]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		// The scale is rounded to f16 first and the codes computed from
		// the rounded one, so that scale·code is what a reader gets back.
		d := half.F16ToF32(half.F32ToF16(amax / 127))
		scales[b] = d
		inv := float32(0)
		if d != 0 {
			inv = 1 / d
		}
		for i, v := range blk {
			codes[b*Q8Block+i] = int8(max(-127, min(127, math.Round(float64(v*inv)))))
		}
	}
}

// Type is the cache type s is stored as: f32, f16 or bf16 by its dtype,
// q8_0 for a quantisation that is q8_0's blocks; "" for another
// quantisation (mlx-lm's 4-bit, or groups of 64), which only converts.
func (s *KVState) Type() KVType {
	if q := s.Quant; q != nil {
		if q.Bits == 8 && q.Group == Q8Block && q.ScaleDType == safetensors.F16 && q.q8Biases() {
			return KVQ8
		}
		return ""
	}
	for _, t := range KVTypes {
		if t.DType() == s.DType {
			return t
		}
	}
	return ""
}

// Describe names s's type: a cache type, or for another quantisation its
// bits and groups ("4-bit groups of 64").
func (s *KVState) Describe() string {
	if t := s.Type(); t != "" {
		return string(t)
	}
	if q := s.Quant; q != nil {
		return fmt.Sprintf("%d-bit groups of %d", q.Bits, q.Group)
	}
	return string(s.DType)
}

// q8Biases says whether every bias is −128 times its scale: the codes are
// then q8_0's, shifted by 128.
func (q *KVQuant) q8Biases() bool {
	for l := range q.KScales {
		for _, sb := range [][2][]byte{{q.KScales[l], q.KBiases[l]}, {q.VScales[l], q.VBiases[l]}} {
			for i := 0; i+2 <= len(sb[0]); i += 2 {
				if -128*half.F16ToF32(u16(sb[0][i:])) != half.F16ToF32(u16(sb[1][i:])) {
					return false
				}
			}
		}
	}
	return true
}

func u16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

// Convert returns s in cache type t: s itself when it is already, else a
// converted copy (through float32; rounding once into t). s must be valid
// (ValidateKV).
func (s *KVState) Convert(t KVType) *KVState {
	if s.Type() == t {
		return s
	}
	out := &KVState{Len: s.Len, KVHeads: s.KVHeads, HeadDim: s.HeadDim, DType: t.DType(),
		K: make([][]byte, len(s.K)), V: make([][]byte, len(s.V))}
	if t == KVQ8 {
		out.DType = safetensors.U32
		out.Quant = &KVQuant{Group: Q8Block, Bits: 8, ScaleDType: safetensors.F16}
	}
	n := s.KVHeads * s.Len * s.HeadDim
	f := make([]float32, n)
	codes, scales := make([]int8, n), make([]float32, n/Q8Block)
	for l := range s.K {
		for kv, dst := range [2][][]byte{out.K, out.V} {
			s.decode(f, l, kv == 1)
			if t != KVQ8 {
				dst[l] = encodeFloats(f, t)
				continue
			}
			QuantizeQ8(codes, scales, f)
			b := make([]byte, n)
			for i, c := range codes {
				b[i] = byte(int(c) + 128)
			}
			dst[l] = b
			sc, bias := make([]byte, 2*len(scales)), make([]byte, 2*len(scales))
			for i, d := range scales {
				binary.LittleEndian.PutUint16(sc[2*i:], half.F32ToF16(d))
				binary.LittleEndian.PutUint16(bias[2*i:], half.F32ToF16(-128*d))
			}
			if kv == 0 {
				out.Quant.KScales, out.Quant.KBiases = append(out.Quant.KScales, sc), append(out.Quant.KBiases, bias)
			} else {
				out.Quant.VScales, out.Quant.VBiases = append(out.Quant.VScales, sc), append(out.Quant.VBiases, bias)
			}
		}
	}
	return out
}

// decode writes layer l's keys (or values) as float32 into f.
func (s *KVState) decode(f []float32, l int, values bool) {
	src := s.K[l]
	if values {
		src = s.V[l]
	}
	q := s.Quant
	if q == nil {
		for i := range f {
			switch s.DType {
			case safetensors.F32:
				f[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			case safetensors.F16:
				f[i] = half.F16ToF32(u16(src[2*i:]))
			default:
				f[i] = half.BF16ToF32(u16(src[2*i:]))
			}
		}
		return
	}
	scales, biases := q.KScales[l], q.KBiases[l]
	if values {
		scales, biases = q.VScales[l], q.VBiases[l]
	}
	ss := q.ScaleDType.Size()
	scalar := func(b []byte, g int) float32 {
		switch q.ScaleDType {
		case safetensors.F32:
			return math.Float32frombits(binary.LittleEndian.Uint32(b[4*g:]))
		case safetensors.F16:
			return half.F16ToF32(u16(b[2*g:]))
		}
		return half.BF16ToF32(u16(b[ss*g:]))
	}
	for g := 0; g < len(f)/q.Group; g++ {
		d, m := scalar(scales, g), scalar(biases, g)
		for i := g * q.Group; i < (g+1)*q.Group; i++ {
			var code byte
			if q.Bits == 8 {
				code = src[i]
			} else {
				code = src[i/2] >> (4 * (i % 2)) & 0xf // little-endian: the low nibble first
			}
			f[i] = d*float32(code) + m
		}
	}
}

// encodeFloats is f in a float type's little-endian bytes.
func encodeFloats(f []float32, t KVType) []byte {
	size := t.DType().Size()
	b := make([]byte, size*len(f))
	for i, v := range f {
		switch t {
		case KVF32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		case KVF16:
			binary.LittleEndian.PutUint16(b[2*i:], half.F32ToF16(v))
		default:
			binary.LittleEndian.PutUint16(b[2*i:], half.F32ToBF16(v))
		}
	}
	return b
}
