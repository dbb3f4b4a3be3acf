package ggufconv

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// affineValues dequantises an MLX affine tensor as MLX defines it,
// scale·code + bias in float32 (two roundings, kept apart), code i of a
// group in bits bits·i of little-endian uint32 words.
func affineValues(t *testing.T, ts []safetensors.Tensor, rows, cols int) []float32 {
	t.Helper()
	w, sc, bi := ts[0], ts[1], ts[2]
	if w.DType != safetensors.U32 || sc.DType != bi.DType {
		t.Fatalf("dtypes %s, %s, %s; want U32 and one dtype for scales and biases", w.DType, sc.DType, bi.DType)
	}
	bits := 32 * w.Shape[1] / cols
	float := func(s safetensors.Tensor, i int) float32 {
		if s.DType == safetensors.F32 {
			return math.Float32frombits(binary.LittleEndian.Uint32(s.Data[4*i:]))
		}
		v := make([]float32, 1)
		if err := gguf.Dequantize(gguf.F16, v, s.Data[2*i:2*i+2]); err != nil {
			t.Fatal(err)
		}
		return v[0]
	}
	out := make([]float32, rows*cols)
	per := 32 / bits
	for i := range out {
		word := binary.LittleEndian.Uint32(w.Data[4*(i/per):])
		code := word >> (uint(i%per) * uint(bits)) & (1<<bits - 1)
		g := i / group
		out[i] = float32(float32(code)*float(sc, g)) + float(bi, g)
	}
	return out
}

// blockTensor quantises rows×cols random weights of spread sigma as typ.
func blockTensor(t *testing.T, typ gguf.Type, rows, cols int, sigma float64, rng *rand.Rand) *engine.Tensor {
	t.Helper()
	var data []byte
	row := make([]float32, cols)
	for range rows {
		for j := range row {
			row[j] = float32(rng.NormFloat64() * sigma)
		}
		var err error
		if data, err = gguf.Quantize(typ, data, row); err != nil {
			t.Fatal(err)
		}
	}
	return &engine.Tensor{Name: "blk.0.ffn_up.weight", DType: safetensors.U8, Shape: []int{rows, cols}, Data: data, Blocks: typ}
}

// TestAffineIsTheBlocksValues: Q4_0, Q4_1, Q4_K and Q8_0 rows written as MLX
// affine quantisation give back, as MLX computes them, the values ggml
// dequantises, exactly (bit for bit but the sign of a zero: ggml's
// d·0 is −0 for a negative d, MLX's d·8 − 8d is +0); the steps are F16 when f16 holds them, and
// F32 when it does not (Q8_0 steps near 1024 and Q4_0 steps near 16384
// make biases near −131072, past f16's 65504; Q4_K's d·sc needs up to
// 17 bits).
func TestAffineIsTheBlocksValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		typ   gguf.Type
		sigma float64
		want  safetensors.DType
	}{
		{gguf.Q4_0, 0.02, safetensors.F16},
		{gguf.Q4_1, 0.02, safetensors.F16},
		{gguf.Q8_0, 0.02, safetensors.F16},
		{gguf.Q4_0, 16384 * 8 / 2.5, safetensors.F32},
		{gguf.Q8_0, 1024 * 127 / 2.5, safetensors.F32},
		{gguf.Q4_1, 1e4, safetensors.F16},
		{gguf.Q4_K, 0.02, safetensors.F32},
	} {
		rows, cols := 6, 256
		src := blockTensor(t, c.typ, rows, cols, c.sigma, rng)
		want := make([]float32, rows*cols)
		if err := gguf.Dequantize(c.typ, want, src.Data); err != nil {
			t.Fatal(err)
		}
		bits := 4
		if c.typ == gguf.Q8_0 {
			bits = 8
		}
		ts, form, err := weight{name: "model.layers.0.mlp.up_proj.weight", t: src}.convert(bits)
		if err != nil {
			t.Fatal(err)
		}
		if form != Affine || len(ts) != 3 || ts[1].Name != "model.layers.0.mlp.up_proj.scales" || ts[2].Name != "model.layers.0.mlp.up_proj.biases" {
			t.Fatalf("%s: form %s, %d tensors; want affine weight, scales and biases", c.typ, form, len(ts))
		}
		if ts[1].DType != c.want {
			t.Errorf("%s, spread %g: steps in %s, want %s", c.typ, c.sigma, ts[1].DType, c.want)
		}
		got := affineValues(t, ts, rows, cols)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s, spread %g: weight %d is %g as MLX affine, %g in the block", c.typ, c.sigma, i, got[i], want[i])
			}
		}
	}
}

// TestOtherTypesDequantised: blocks that do not fit the folder's bit
// width (Q8_0 in a 4-bit folder, Q4_1 or Q4_K in an 8-bit one, Q5_K and
// Q6_K in any) are
// written as the float32 values ggml gives; floats are kept as they are.
func TestOtherTypesDequantised(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		typ  gguf.Type
		bits int
	}{{gguf.Q8_0, 4}, {gguf.Q4_1, 8}, {gguf.Q4_0, 0}, {gguf.Q4_K, 8}, {gguf.Q5_K, 4}, {gguf.Q6_K, 4}} {
		rows, cols := 3, 256
		src := blockTensor(t, c.typ, rows, cols, 0.02, rng)
		want := make([]float32, rows*cols)
		if err := gguf.Dequantize(c.typ, want, src.Data); err != nil {
			t.Fatal(err)
		}
		ts, form, err := weight{name: "w.weight", t: src}.convert(c.bits)
		if err != nil {
			t.Fatal(err)
		}
		if form != Dequantised || len(ts) != 1 || ts[0].DType != safetensors.F32 || !slices.Equal(ts[0].Shape, []int{rows, cols}) {
			t.Fatalf("%s in a %d-bit folder: %s, %d tensors; want one F32 [%d %d]", c.typ, c.bits, form, len(ts), rows, cols)
		}
		if got := f32Bytes(want); string(got) != string(ts[0].Data) {
			t.Errorf("%s in a %d-bit folder: not ggml's values", c.typ, c.bits)
		}
	}
	bf := &engine.Tensor{Name: "blk.0.attn_norm.weight", DType: safetensors.BF16, Shape: []int{4}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	ts, form, err := weight{name: "n.weight", t: bf}.convert(4)
	if err != nil || form != Kept || ts[0].DType != safetensors.BF16 || string(ts[0].Data) != string(bf.Data) {
		t.Errorf("a BF16 norm: %s %+v %v; want it kept", form, ts, err)
	}
}

// TestQKRows: a query or key projection's rows are put back in Hugging
// Face's order, the inverse of llama.cpp's converter (row j·hd/2+i of a
// head to 2i+j), for every row of every head and whatever their type.
func TestQKRows(t *testing.T) {
	for _, c := range []struct {
		headDim int
		want    []int // GGUF row of each Hugging Face row, two heads
		reason  string
	}{
		{4, []int{0, 2, 1, 3, 4, 6, 5, 7}, "pairs (0,2) and (1,3) of each head were interleaved"},
		{6, []int{0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11}, "the first half of a head is llama.cpp's even rows"},
	} {
		var got []int
		for s := range 2 * c.headDim {
			got = append(got, gguf.PermutedRow(s, c.headDim))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("head_dim %d: rows %v, want %v (%s)", c.headDim, got, c.want, c.reason)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	rows, cols, hd := 8, 64, 4
	for _, typ := range []gguf.Type{gguf.Q4_1, gguf.F32} {
		var src *engine.Tensor
		if typ == gguf.F32 {
			data := make([]byte, 4*rows*cols)
			for i := range rows * cols {
				binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i)))
			}
			src = &engine.Tensor{DType: safetensors.F32, Shape: []int{rows, cols}, Data: data}
		} else {
			src = blockTensor(t, typ, rows, cols, 0.02, rng)
		}
		plain, _, err := weight{name: "q.weight", t: src}.convert(4)
		if err != nil {
			t.Fatal(err)
		}
		perm, _, err := weight{name: "q.weight", t: src, headDim: hd}.convert(4)
		if err != nil {
			t.Fatal(err)
		}
		for i := range plain {
			n := len(plain[i].Data) / rows
			for s := range rows {
				r := gguf.PermutedRow(s, hd)
				if string(perm[i].Data[s*n:(s+1)*n]) != string(plain[i].Data[r*n:(r+1)*n]) {
					t.Errorf("%s %s: row %d is not llama.cpp's row %d", typ, plain[i].Name, s, r)
				}
			}
		}
	}
}
