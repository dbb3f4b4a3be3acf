package gguf

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	f16 "github.com/driftwoodlabs/driftwood/internal/half"
)

// vector is one entry of testdata/vectors.json.gz, which
// testdata/make_vectors.py made with gguf-py (see there).
type vector struct {
	Type, Kind            string
	Input, Blocks, Values string
	input, values         []float32
	blocks                []byte
	typ                   Type
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open("testdata/vectors.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Entries []vector }
	if err := json.NewDecoder(z).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	names := map[string]Type{}
	for _, s := range supported {
		names[s.String()] = s
	}
	for i := range doc.Entries {
		v := &doc.Entries[i]
		var ok bool
		if v.typ, ok = names[v.Type]; !ok {
			t.Fatalf("vector of type %s", v.Type)
		}
		v.blocks = decode64(t, v.Blocks)
		v.values = floats(decode64(t, v.Values))
		v.input = floats(decode64(t, v.Input))
	}
	return doc.Entries
}

func decode64(t *testing.T, s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestDequantizeMatchesGGUFPy checks Dequantize bit for bit against
// gguf-py, which computes as ggml does: random blocks reach every code
// and scale pattern, and quantised ones the values real files hold.
func TestDequantizeMatchesGGUFPy(t *testing.T) {
	seen := map[Type]bool{}
	for _, v := range loadVectors(t) {
		seen[v.typ] = true
		got := make([]float32, len(v.values))
		if err := Dequantize(v.typ, got, v.blocks); err != nil {
			t.Fatalf("%s %s: %v", v.Type, v.Kind, err)
		}
		for i := range got {
			g, w := math.Float32bits(got[i]), math.Float32bits(v.values[i])
			if g != w {
				t.Fatalf("%s %s: weight %d (block %d) = %g (%#08x), gguf-py %g (%#08x)", v.Type, v.Kind, i, i/v.typ.BlockSize(), got[i], g, v.values[i], w)
			}
		}
	}
	for _, s := range supported {
		if !seen[s] && s != F32 {
			t.Errorf("no vectors for %s", s)
		}
	}
}

// TestQuantizeMatchesGGUFPy checks that the types Quantize encodes as
// ggml's reference quantisers give gguf-py's bytes, which match them:
// rounding ties, the clamped Q4_0 code, zero and constant blocks, f16
// overflow and subnormals.
func TestQuantizeMatchesGGUFPy(t *testing.T) {
	n := 0
	for _, v := range loadVectors(t) {
		if v.Kind != "quantized" {
			continue
		}
		n++
		got, err := Quantize(v.typ, nil, v.input)
		if err != nil {
			t.Fatalf("%s: %v", v.Type, err)
		}
		if !bytes.Equal(got, v.blocks) {
			bb := v.typ.BlockBytes()
			for i := 0; i < len(got); i += bb {
				if !bytes.Equal(got[i:i+bb], v.blocks[i:i+bb]) {
					t.Fatalf("%s block %d:\n got % x\nwant % x\ninput %v", v.Type, i/bb, got[i:i+bb], v.blocks[i:i+bb], v.input[i/bb*v.typ.BlockSize():][:v.typ.BlockSize()])
				}
			}
		}
	}
	if n != 5 {
		t.Errorf("%d quantised vectors, want F16, BF16, Q4_0, Q4_1, Q8_0", n)
	}
}

// step is the distance between two neighbouring codes at weight i of
// the quantised blocks b.
func step(tt Type, b []byte, i int) float64 {
	blk := b[i/tt.BlockSize()*tt.BlockBytes():]
	j := i % tt.BlockSize()
	f16 := func(off int) float64 { return float64(f16.F16ToF32(binary.LittleEndian.Uint16(blk[off:]))) }
	switch tt {
	case Q4_0, Q4_1, Q8_0:
		return math.Abs(f16(0))
	case Q4_K, Q5_K:
		sc, _ := ScaleMinK4(j/32, blk[4:16])
		return f16(0) * float64(sc)
	case Q6_K:
		return math.Abs(f16(208) * float64(int8(blk[192+j/16])))
	}
	return 0
}

// tolerance is how far weight i, x, may decode from itself as y, given
// its encoding b: half a step, plus for F16 and BF16 their rounding;
// for ggml's reference quantisers (Q4_0, Q4_1, Q8_0) the rounding of the
// scale and min to f16 after the codes were chosen (2⁻¹¹ of each, or
// half f16's smallest subnormal, times up to 128 codes), and a whole
// step for Q4_0's one clamped code; the k-quants round their scales
// before choosing codes, so half a step and float rounding bound them.
func tolerance(tt Type, b []byte, i int, x, y float32) float64 {
	ax, ay := math.Abs(float64(x)), math.Abs(float64(y))
	half := step(tt, b, i) / 2 * (1 + 1e-6)
	switch tt {
	case F32:
		return 0
	case F16:
		return max(ax/(1<<11), 1.0/(1<<25))
	case BF16:
		return ax / (1 << 8)
	case Q4_0:
		return 2*half + ay/(1<<10) + 1.0/(1<<17)
	case Q8_0:
		return half + ay/(1<<10) + 1.0/(1<<17)
	case Q4_1:
		m := math.Abs(float64(f16.F16ToF32(binary.LittleEndian.Uint16(b[i/32*20+2:]))))
		return half + (ay+2*m)/(1<<10) + 1.0/(1<<17)
	}
	return half + ax*1e-6
}

// TestQuantizeRoundTrip quantises Gaussian weights of varied scale and
// checks each decodes within half a step of its block (a whole step
// for Q4_0's one clamped code, an f16 or bf16 rounding for those), and
// that the error over all is what each format should give, so that a
// valid but wasteful encoding (scales too large) fails.
func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 256*64)
	for b := 0; b < len(x); b += 256 {
		s := math.Pow(10, r.Float64()*6-4)
		for i := b; i < b+256; i++ {
			x[i] = float32(r.NormFloat64() * s)
		}
	}
	// relRMS is the most error, relative to each block's RMS, that each
	// type may give on Gaussian weights; measured: F16 2.1e-4, BF16
	// 1.7e-3, Q8_0 5.4e-3, Q4_0 0.085, Q4_1 0.078, Q4_K 0.079, Q5_K
	// 0.039, Q6_K 0.020.
	for _, c := range []struct {
		typ    Type
		relRMS float64
	}{
		{F32, 0}, {F16, 3e-4}, {BF16, 2.5e-3}, {Q8_0, 7e-3}, {Q4_0, 0.1}, {Q4_1, 0.1},
		{Q4_K, 0.1}, {Q5_K, 0.05}, {Q6_K, 0.025},
	} {
		b, err := Quantize(c.typ, []byte("prefix"), x)
		if err != nil {
			t.Fatalf("%s: %v", c.typ, err)
		}
		if string(b[:6]) != "prefix" {
			t.Fatalf("%s: Quantize did not append", c.typ)
		}
		b = b[6:]
		y := make([]float32, len(x))
		if err := Dequantize(c.typ, y, b); err != nil {
			t.Fatalf("%s: %v", c.typ, err)
		}
		var sumRel float64
		for blk := 0; blk < len(x); blk += 256 {
			var se, sx float64
			for i := blk; i < blk+256; i++ {
				e := math.Abs(float64(y[i] - x[i]))
				if tol := tolerance(c.typ, b, i, x[i], y[i]); e > tol {
					t.Fatalf("%s: weight %d = %g decodes as %g, off by %g > %g", c.typ, i, x[i], y[i], e, tolerance(c.typ, b, i, x[i], y[i]))
				}
				se += e * e
				sx += float64(x[i]) * float64(x[i])
			}
			sumRel += math.Sqrt(se / sx)
		}
		if rel := sumRel / float64(len(x)/256); rel > c.relRMS || (c.relRMS == 0 && rel != 0) {
			t.Errorf("%s: RMS error %.3g of the weights' RMS, want at most %.3g", c.typ, rel, c.relRMS)
		} else {
			t.Logf("%s: RMS error %.3g of the weights' RMS", c.typ, rel)
		}
	}
}

// TestQuantizeEdges checks blocks that are all zero, constant, or hold
// weights near f16's limits decode within half a step, and that a NaN
// is refused rather than spread through its block.
func TestQuantizeEdges(t *testing.T) {
	blocks := map[string]func(i int) float32{
		"zeros":    func(int) float32 { return 0 },
		"constant": func(int) float32 { return -0.75 },
		"positive": func(i int) float32 { return 1 + float32(i%7) },
		"tiny":     func(i int) float32 { return float32(i%5-2) * 1e-9 },
		"huge":     func(i int) float32 { return float32(i%5-2) * 1e6 },
	}
	for _, typ := range []Type{Q4_K, Q5_K, Q6_K, Q4_1, Q8_0} {
		for name, f := range blocks {
			x := make([]float32, 256)
			for i := range x {
				x[i] = f(i)
			}
			b, err := Quantize(typ, nil, x)
			if err != nil {
				t.Fatal(err)
			}
			y := make([]float32, 256)
			if err := Dequantize(typ, y, b); err != nil {
				t.Fatal(err)
			}
			for i := range x {
				if e := math.Abs(float64(y[i] - x[i])); e > tolerance(typ, b, i, x[i], y[i]) {
					t.Fatalf("%s %s: weight %d = %g decodes as %g (step %g)", typ, name, i, x[i], y[i], step(typ, b, i))
				}
			}
		}
		x := make([]float32, 256)
		x[3] = float32(math.NaN())
		if _, err := Quantize(typ, nil, x); err == nil || !strings.Contains(err.Error(), "weight 3 is NaN") {
			t.Errorf("%s: NaN weight gave %v, want an error naming it", typ, err)
		}
	}
}

// TestQuantizeErrors checks the refusals name the type and the counts.
func TestQuantizeErrors(t *testing.T) {
	for _, c := range []struct {
		err    error
		want   string
		reason string
	}{
		{second(Quantize(IQ2_XXS, nil, make([]float32, 256))), "cannot quantize IQ2_XXS: Driftwood reads only F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K", "a type Driftwood does not read"},
		{second(Quantize(Q4_K, nil, make([]float32, 100))), "blocks of 256, and 100 is not a multiple", "a partial block"},
		{Dequantize(Q8_0, make([]float32, 32), make([]byte, 33)), "33 bytes, want 34", "source bytes that do not match the count"},
		{Dequantize(Type(99), nil, nil), "cannot dequantize type 99", "an unknown type"},
		{Dequantize(Q4_0, make([]float32, 31), make([]byte, 18)), "not a multiple of 32", "a partial block"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.reason, c.err, c.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestHalf checks the f16 conversions at the edges ggml's own handle:
// round to nearest even, overflow to infinity, subnormals, ggml's NaN.
func TestHalf(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {1e-8, 0x0000}, {6e-8, 0x0001},
		{1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, {float32(math.Inf(-1)), 0xfc00}, {float32(math.NaN()), 0x7e00},
	} {
		if got := f16.F32ToF16(c.f); got != c.h {
			t.Errorf("f16.F32ToF16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	for h := range 1 << 16 {
		f := f16.F16ToF32(uint16(h))
		if back := f16.F32ToF16(f); back != uint16(h) && !(f != f && back == uint16(h)&0x8000|0x7e00) {
			t.Fatalf("half %#04x → %g → %#04x", h, f, back)
		}
	}
	if h := halfUp(1.0001); f16.F16ToF32(h) < 1.0001 || f16.F16ToF32(h-1) >= 1.0001 {
		t.Errorf("halfUp(1.0001) = %#04x (%g), not the least half above", h, f16.F16ToF32(h))
	}
	if h := halfUp(1e9); h != 0x7bff {
		t.Errorf("halfUp(1e9) = %#04x, want the largest finite half", h)
	}
}

// TestTypes checks the names and sizes messages and checks rely on.
func TestTypes(t *testing.T) {
	for _, c := range []struct {
		typ         Type
		name        string
		block, size int
		supported   bool
	}{
		{F32, "F32", 1, 4, true}, {BF16, "BF16", 1, 2, true}, {Q4_1, "Q4_1", 32, 20, true},
		{Q6_K, "Q6_K", 256, 210, true}, {IQ2_XXS, "IQ2_XXS", 256, 66, false}, {Q4_0_4_4, "Q4_0_4_4", 0, 0, false},
		{MXFP4, "MXFP4", 32, 17, false}, {Type(99), "type 99", 0, 0, false},
	} {
		got := fmt.Sprintf("%s %d %d %v", c.typ, c.typ.BlockSize(), c.typ.BlockBytes(), c.typ.Supported())
		if want := fmt.Sprintf("%s %d %d %v", c.name, c.block, c.size, c.supported); got != want {
			t.Errorf("type %d: %s, want %s", uint32(c.typ), got, want)
		}
	}
	if n, err := Q4_K.RowBytes(512); n != 288 || err != nil {
		t.Errorf("Q4_K.RowBytes(512) = %d, %v", n, err)
	}
	if _, err := Q4_0_4_4.RowBytes(32); err == nil || !strings.Contains(err.Error(), "Q4_0_4_4 has no known size") {
		t.Errorf("RowBytes of a removed type: %v", err)
	}
	if _, err := F64.RowBytes(math.MaxInt / 4); err == nil {
		t.Error("RowBytes overflowing an int gave no error")
	}
}
