package ggufaffine

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

// mlxValues is m's weights as MLX computes them: code i of a row at bits
// [i·bits, (i+1)·bits) of its little-endian words, scale·code + bias in
// float32, the product rounded apart.
func mlxValues(m *Matrix, rows, cols int) []float32 {
	out := make([]float32, rows*cols)
	rowBytes := cols * m.Bits / 8
	for r := range rows {
		codes := m.Codes[r*rowBytes:][:rowBytes]
		for i := range cols {
			bit := i * m.Bits
			word := uint32(codes[bit/8])
			if bit/8+1 < len(codes) {
				word |= uint32(codes[bit/8+1]) << 8
			}
			code := word >> (bit % 8) & (1<<m.Bits - 1)
			g := r*cols/Group + i/Group
			out[r*cols+i] = float32(float32(code)*m.Scales[g]) + m.Biases[g]
		}
	}
	return out
}

// TestRepackIsTheBlocksValues: every type Bits names, repacked, gives back
// as MLX computes it the value gguf.Dequantize (ggml) gives, bit for bit
// but the sign of a zero, over random blocks of several spreads and the
// extreme codes; the codes are packed bits wide.
func TestRepackIsTheBlocksValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q4_1, gguf.Q8_0, gguf.Q4_K, gguf.Q5_K} {
		for _, sigma := range []float64{0.02, 1, 3000} {
			rows, cols := 5, 512
			var data []byte
			row := make([]float32, cols)
			for r := range rows {
				for j := range row {
					row[j] = float32(rng.NormFloat64() * sigma)
					if r == 0 && j%7 == 0 { // one-sided groups: codes at their ends
						row[j] = float32(math.Abs(float64(row[j])))
					}
				}
				var err error
				if data, err = gguf.Quantize(typ, data, row); err != nil {
					t.Fatal(err)
				}
			}
			rb := len(data) / rows
			m, err := Repack(typ, rows, cols, func(r int) []byte { return data[r*rb : (r+1)*rb] })
			if err != nil {
				t.Fatal(err)
			}
			if m.Bits != Bits(typ) || len(m.Codes) != rows*cols*m.Bits/8 || len(m.Scales) != rows*cols/Group || len(m.Biases) != len(m.Scales) {
				t.Fatalf("%s: %d bits, %d code bytes, %d scales, %d biases", typ, m.Bits, len(m.Codes), len(m.Scales), len(m.Biases))
			}
			want := make([]float32, rows*cols)
			if err := gguf.Dequantize(typ, want, data); err != nil {
				t.Fatal(err)
			}
			for i, v := range mlxValues(m, rows, cols) {
				if v != want[i] {
					t.Fatalf("%s, spread %g: weight %d (row %d) is %g as MLX affine, %g in the block", typ, sigma, i%cols, i/cols, v, want[i])
				}
			}
		}
	}
}

// TestSplitIsTheBlocksValues: the two 6-bit halves of Q6_K rows add up,
// as MLX computes them, to the values gguf.Dequantize gives, bit for bit
// but the sign of a zero; each half is zero where the other holds the
// weights.
func TestSplitIsTheBlocksValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sigma := range []float64{0.02, 1, 3000} {
		rows, cols := 5, 512
		var data []byte
		row := make([]float32, cols)
		for range rows {
			for j := range row {
				row[j] = float32(rng.NormFloat64() * sigma)
			}
			var err error
			if data, err = gguf.Quantize(gguf.Q6_K, data, row); err != nil {
				t.Fatal(err)
			}
		}
		rb := len(data) / rows
		a, b, err := Split(gguf.Q6_K, rows, cols, func(r int) []byte { return data[r*rb : (r+1)*rb] })
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, rows*cols)
		if err := gguf.Dequantize(gguf.Q6_K, want, data); err != nil {
			t.Fatal(err)
		}
		va, vb := mlxValues(a, rows, cols), mlxValues(b, rows, cols)
		for i := range want {
			first := i%Group < 16
			if first && vb[i] != 0 || !first && va[i] != 0 {
				t.Fatalf("spread %g: weight %d is %g and %g in the halves; the %v half should be 0", sigma, i, va[i], vb[i], map[bool]string{true: "second", false: "first"}[first])
			}
			if va[i]+vb[i] != want[i] {
				t.Fatalf("spread %g: weight %d (row %d) is %g + %g as MLX affine, %g in the block", sigma, i%cols, i/cols, va[i], vb[i], want[i])
			}
		}
	}
	if _, _, err := Split(gguf.Q4_K, 1, 256, func(int) []byte { return make([]byte, 144) }); err == nil {
		t.Error("Split of Q4_K blocks: no error")
	}
}

// TestRepackRefuses: Q6_K and the float types are not MLX affine, and a
// row of the wrong length is named.
func TestRepackRefuses(t *testing.T) {
	for _, typ := range []gguf.Type{gguf.Q6_K, gguf.F16, gguf.F32} {
		if Bits(typ) != 0 {
			t.Errorf("Bits(%s) = %d, want 0", typ, Bits(typ))
		}
		if _, err := Repack(typ, 1, 256, func(int) []byte { return make([]byte, 1024) }); err == nil || !strings.Contains(err.Error(), typ.String()) {
			t.Errorf("%s: %v, want an error naming the type", typ, err)
		}
	}
	_, err := Repack(gguf.Q4_0, 2, 64, func(r int) []byte { return make([]byte, 36-r) })
	if err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("a short row: %v, want an error naming row 1", err)
	}
}
