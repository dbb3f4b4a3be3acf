package engine

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/half"
)

// randomKV is an f32 state of 2 layers, 2 kv heads, 5 positions of
// head_dim 64, with values of varied magnitude per head.
func randomKV(seed uint64) (*KVState, [][2][]float32) {
	r := rand.New(rand.NewPCG(seed, 1))
	s := &KVState{Len: 5, KVHeads: 2, HeadDim: 64, DType: safetensors.F32}
	var raw [][2][]float32
	for range 2 {
		var lr [2][]float32
		for kv := range lr {
			f := make([]float32, 2*5*64)
			for i := range f {
				f[i] = float32(r.NormFloat64() * math.Pow(10, float64(i%7-3)))
			}
			lr[kv] = f
		}
		raw = append(raw, lr)
		s.K, s.V = append(s.K, encodeFloats(lr[0], KVF32)), append(s.V, encodeFloats(lr[1], KVF32))
	}
	return s, raw
}

// TestConvert: a state converted to each type validates, is of that type,
// and decodes to within the type's rounding of the original; converting
// back to its own type is the identity.
func TestConvert(t *testing.T) {
	s, raw := randomKV(7)
	cfg := &Config{NumHiddenLayers: 2, NumKeyValueHeads: 2, HeadDim: 64}
	for _, typ := range KVTypes {
		c := s.Convert(typ)
		if err := cfg.ValidateKV(c, 8); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if c.Type() != typ || c.Convert(typ) != c {
			t.Fatalf("%s: converted state is of type %q", typ, c.Type())
		}
		f := make([]float32, len(raw[0][0]))
		for l := range raw {
			for kv := range 2 {
				c.decode(f, l, kv == 1)
				for i, want := range raw[l][kv] {
					tol := float64(0)
					switch typ {
					case KVF16:
						tol = math.Abs(float64(want))/2048 + 1.0/(1<<25)
					case KVBF16:
						tol = math.Abs(float64(want)) / 256
					case KVQ8:
						blk := raw[l][kv][i/Q8Block*Q8Block:][:Q8Block]
						var amax float64
						for _, v := range blk {
							amax = max(amax, math.Abs(float64(v)))
						}
						tol = amax/127/2*1.002 + amax/127/2048
					}
					if d := math.Abs(float64(f[i] - want)); d > tol {
						t.Fatalf("%s layer %d kv %d element %d: %g, want %g ± %g", typ, l, kv, i, f[i], want, tol)
					}
				}
			}
		}
	}
}

// TestConvertMLX4: mlx-lm's 4-bit groups (low nibble first, scale·q +
// bias) decode as it reads them, and are of no cache type.
func TestConvertMLX4(t *testing.T) {
	codes := make([]byte, 32) // 64 values of one position
	for i := range codes {
		codes[i] = byte(i%16) | byte(15-i%16)<<4
	}
	f16 := func(vs ...float32) []byte {
		b := make([]byte, 2*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint16(b[2*i:], half.F32ToF16(v))
		}
		return b
	}
	one := func(b []byte) [][]byte { return [][]byte{b} }
	s := &KVState{Len: 1, KVHeads: 1, HeadDim: 64, DType: safetensors.U32, K: one(codes), V: one(codes),
		Quant: &KVQuant{Group: 32, Bits: 4, ScaleDType: safetensors.F16,
			KScales: one(f16(0.5, 2)), KBiases: one(f16(-1, 3)), VScales: one(f16(1, 1)), VBiases: one(f16(0, 0))}}
	if err := (&Config{NumHiddenLayers: 1, NumKeyValueHeads: 1, HeadDim: 64}).ValidateKV(s, 1); err != nil {
		t.Fatal(err)
	}
	if s.Type() != "" {
		t.Fatalf("4-bit state is of type %q", s.Type())
	}
	f := make([]float32, 64)
	s.Convert(KVF32).decode(f, 0, false)
	for i, got := range f {
		q := float32(i / 2 % 16)
		if i%2 == 1 {
			q = float32(15 - i/2%16)
		}
		want := 0.5*q - 1
		if i >= 32 {
			want = 2*q + 3
		}
		if got != want {
			t.Fatalf("element %d: %g, want %g", i, got, want)
		}
	}
}

// TestHeadQuantised: the head of a q8_0 state is the q8_0 state of the
// head.
func TestHeadQuantised(t *testing.T) {
	s, _ := randomKV(3)
	q := s.Convert(KVQ8).Head(3)
	want := s.Head(3).Convert(KVQ8)
	if err := (&Config{NumHiddenLayers: 2, NumKeyValueHeads: 2, HeadDim: 64}).ValidateKV(q, 3); err != nil {
		t.Fatal(err)
	}
	for l := range q.K {
		if string(q.K[l]) != string(want.K[l]) || string(q.Quant.VScales[l]) != string(want.Quant.VScales[l]) || string(q.Quant.KBiases[l]) != string(want.Quant.KBiases[l]) {
			t.Fatalf("layer %d differs", l)
		}
	}
}

// TestShiftAnyType: shifting a 16-bit state is shifting its float32 form.
func TestShiftAnyType(t *testing.T) {
	s, _ := randomKV(5)
	c := &Config{HeadDim: 64, RopeTheta: 10000}
	h := s.Convert(KVF16)
	got, err := c.ShiftKV(h, 1, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := c.ShiftKV(h.Convert(KVF32), 1, 2, 2)
	if got.DType != safetensors.F32 || string(got.K[1]) != string(want.K[1]) || string(got.V[0]) != string(want.V[0]) {
		t.Error("the shift of an f16 state is not that of its f32 form")
	}
}
