package mlxbridge

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/internal/half"
)

// TestKVTypeOption checks Options.KVType: the zero value is the default
// type, a name is read as engine.ParseKVType reads it, an unknown one is
// refused, and q8_0 is refused where head_dim is not a multiple of 32.
func TestKVTypeOption(t *testing.T) {
	f := load(t, "tiny-f32", Options{})
	if f.b.KVType() != engine.DefaultKVType {
		t.Errorf("the zero Options give a %q cache, want %q", f.b.KVType(), engine.DefaultKVType)
	}
	c := f.cache(t)
	forward(t, f.b, c, []int32{1, 2, 3}, f.m.Config.VocabSize)
	if s, err := c.Export(); err != nil || s.DType != engine.DefaultKVType.DType() || s.Quant != nil {
		t.Errorf("the default cache exported %v, %v; want %s", s, err, engine.DefaultKVType.DType())
	}
	for _, tc := range []struct{ kt, want string }{
		{"f8", `mlx backend: KV cache type "f8": want one of f16, bf16, q8_0, f32`},
		{"q8_0", "mlx backend: kv_type q8_0 needs a head_dim that is a multiple of 32 (this model's is 16); use f16, bf16 or f32"},
	} {
		if b, err := New(f.m, Options{Device: "cpu", KVType: engine.KVType(tc.kt)}); err == nil || err.Error() != tc.want {
			t.Errorf("KVType %q: New = %v, want %q", tc.kt, err, tc.want)
			if b != nil {
				b.Close()
			}
		}
	}
	b, err := New(f.m, Options{Device: "cpu", KVType: "BF16"})
	if err != nil || b.KVType() != engine.KVBF16 {
		t.Fatalf("KVType BF16: %v, %v", b, err)
	}
	b.Close()
}

// TestKVStateExchange exports a cache of each type after the golden
// prompt and imports the state into a cache of each type: the state is
// in the exporting cache's type (q8_0 as 8-bit groups of 32 with float16
// scales), and the importing cache holds its values converted to its own
// type (exactly the host's rounding from a float state, within a step of
// the group's range for q8_0, the same codes from a q8_0 state). The next
// token's logits on an f32 cache that imported the state are those of
// the exporting cache within its type's tolerance, and those on a cache
// of each other type are the f32 cache's within that type's. It also
// imports states no Driftwood cache writes:
// 4-bit codes with float32 scales, and llama.cpp's q8_0 blocks (bias
// −128·scale) with float16 ones.
func TestKVStateExchange(t *testing.T) {
	requireLibrary(t)
	const model = "tiny-hd32-f32"                                                    // q8_0 needs head_dim 32
	types := []engine.KVType{engine.KVF32, engine.KVF16, engine.KVBF16, engine.KVQ8} // f32 first: the others are held to it
	backends := map[engine.KVType]*fixture{}
	for _, kt := range types {
		backends[kt] = load(t, model, Options{KVType: kt})
	}
	f := backends[engine.KVF32]
	vocab, window := f.m.Config.VocabSize, f.m.Config.MaxPositionEmbeddings
	next := f.g.Greedy.Tokens[:1]
	type source struct {
		name  string
		state *engine.KVState
		cont  []float32 // the next token's logits on the exporting cache, if any
		tol   float64   // its tolerance against an f32 cache holding its values
	}
	var sources []source
	for _, kt := range types {
		b := backends[kt]
		c := b.cache(t)
		forward(t, b.b, c, f.g.Prompt.IDs, vocab)
		s, err := c.Export()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.m.Config.ValidateKV(s, window); err != nil {
			t.Fatalf("%s: the exported state does not validate: %v", kt, err)
		}
		wantDType, q := kt.DType(), s.Quant
		if kt == engine.KVQ8 {
			wantDType = safetensors.U32
			if q == nil || q.Group != 32 || q.Bits != 8 || q.ScaleDType != safetensors.F16 {
				t.Fatalf("q8_0 exported Quant %+v, want 8-bit groups of 32 with F16 scales", q)
			}
		} else if q != nil {
			t.Errorf("%s exported a quantised state", kt)
		}
		if s.DType != wantDType {
			t.Errorf("%s exported %s, want %s", kt, s.DType, wantDType)
		}
		sources = append(sources, source{string(kt), s, forward(t, b.b, c, next, vocab), kvNumerics[kt].Logit})
	}
	// The f32 state quantised on the host, as other writers may.
	f32 := sources[0]
	for _, q := range []struct {
		name      string
		bits      int
		scales    safetensors.DType
		symmetric bool
	}{
		{"4-bit, f32 scales", 4, safetensors.F32, false},
		{"llama.cpp q8_0", 8, safetensors.F16, true},
	} {
		sources = append(sources, source{q.name, quantiseState(f32.state, q.bits, 32, q.scales, q.symmetric), nil, 0})
	}

	for _, src := range sources {
		want := decodeState(src.state)
		var exact []float32 // the next token's logits on an f32 cache, which holds the state's values exactly
		for _, kt := range types {
			b := backends[kt]
			c := b.cache(t)
			if err := c.Import(src.state); err != nil {
				t.Fatalf("%s into %s: %v", src.name, kt, err)
			}
			got, err := c.Export()
			if err != nil {
				t.Fatal(err)
			}
			if got.Len != src.state.Len {
				t.Fatalf("%s into %s: Len %d, want %d", src.name, kt, got.Len, src.state.Len)
			}
			if q := src.state.Quant; kt == engine.KVQ8 && q != nil && q.Bits == 8 && q.Group == 32 && q.ScaleDType == safetensors.F16 {
				sameBytes(t, src.name+" into q8_0", got, src.state)
			} else {
				checkConverted(t, src.name+" into "+string(kt), kt, decodeState(got), want, src.state.Quant == nil)
			}
			cont := forward(t, b.b, c, next, vocab)
			if kt == engine.KVF32 {
				exact = cont
				if d := maxDiff(cont, src.cont); src.cont != nil && d > src.tol {
					t.Errorf("%s: the next token's logits on an f32 cache differ from the exporting cache's by %.2g", src.name, d)
				}
			} else if d := maxDiff(cont, exact); d > kvNumerics[kt].Logit {
				t.Errorf("%s into %s: the next token's logits differ from an f32 cache's by %.2g", src.name, kt, d)
			}
		}
	}
}

// TestKVTypesLongSequence runs 300 positions (past the cache's first
// growth step) in chunks of 7, then token by token, then 10 more after
// Truncate(260), on a cache of each type, and the same with the 250
// prompt positions in one batch: both agree as incremental decoding
// agrees with a full recompute. Against an f32 cache the logits drift
// further than over the golden prompt (at 250 positions 0.5 for bf16 and
// 0.7 for q8_0, the same whether chunked or not); that is held to three
// times the type's golden tolerance.
func TestKVTypesLongSequence(t *testing.T) {
	ref := load(t, "tiny-hd32-f32", Options{KVType: engine.KVF32})
	vocab, window := ref.m.Config.VocabSize, ref.m.Config.MaxPositionEmbeddings
	ids := make([]int32, 300)
	for i := range ids {
		ids[i] = int32(i*37%(vocab-20) + 3)
	}
	for _, kt := range []engine.KVType{engine.KVF16, engine.KVBF16, engine.KVQ8} {
		t.Run(string(kt), func(t *testing.T) {
			chunked := load(t, "tiny-hd32-f32", Options{KVType: kt, MaxBatch: 7})
			whole := load(t, "tiny-hd32-f32", Options{KVType: kt})
			cc, _ := chunked.b.NewCache(window)
			wc, _ := whole.b.NewCache(window)
			rc, _ := ref.b.NewCache(window)
			var growth, drift float64
			step := func(tokens []int32, n int) {
				got := forward(t, chunked.b, cc, tokens, n)
				growth = max(growth, maxDiff(got, forward(t, whole.b, wc, tokens, n)))
				drift = max(drift, maxDiff(got, forward(t, ref.b, rc, tokens, n)))
			}
			step(ids[:250], 250*vocab)
			for i := 250; i < 300; i++ {
				step(ids[i:i+1], vocab)
			}
			for _, c := range []engine.Cache{cc, wc, rc} {
				c.Truncate(260)
			}
			step(ids[100:110], vocab)
			if growth > golden.IncrementalTol || cc.Len() != 270 {
				t.Errorf("chunked vs one batch: max |Δlogit| %.2g, Len %d", growth, cc.Len())
			}
			if drift > 3*kvNumerics[kt].Logit {
				t.Errorf("max |Δlogit| vs an f32 cache %.2g > %g", drift, 3*kvNumerics[kt].Logit)
			}
			t.Logf("over 310 positions: chunked vs one batch %.2g, vs an f32 cache %.2g", growth, drift)
		})
	}
}

// decodeState is s's keys and values as float32, per layer in (kv_heads,
// len, head_dim) order, computed on the host: widened from f16 or bf16,
// or dequantised (scale·q + bias per group).
func decodeState(s *engine.KVState) (kv [2][][]float32) {
	n := s.KVHeads * s.Len * s.HeadDim
	for l := range s.K {
		if q := s.Quant; q != nil {
			kv[0] = append(kv[0], dequantise(s.K[l], q.KScales[l], q.KBiases[l], q, n))
			kv[1] = append(kv[1], dequantise(s.V[l], q.VScales[l], q.VBiases[l], q, n))
		} else {
			kv[0], kv[1] = append(kv[0], widen(s.K[l], s.DType)), append(kv[1], widen(s.V[l], s.DType))
		}
	}
	return kv
}

func widen(b []byte, dt safetensors.DType) []float32 {
	out := make([]float32, len(b)/dt.Size())
	for i := range out {
		switch dt {
		case safetensors.F32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		case safetensors.F16:
			out[i] = half.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		case safetensors.BF16:
			out[i] = half.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		default:
			panic("dtype " + string(dt))
		}
	}
	return out
}

// dequantise reads n values of MLX affine codes: value i is bits bits at
// bit i·bits of the little-endian uint32 words, in group i/Group.
func dequantise(codes, scales, biases []byte, q *engine.KVQuant, n int) []float32 {
	s, b := widen(scales, q.ScaleDType), widen(biases, q.ScaleDType)
	out := make([]float32, n)
	for i := range out {
		bit := i * q.Bits
		word := binary.LittleEndian.Uint32(codes[bit/32*4:])
		code := float32(word >> (bit % 32) & (1<<q.Bits - 1))
		out[i] = s[i/q.Group]*code + b[i/q.Group]
	}
	return out
}

// quantiseState quantises a float32 state on the host into bits-bit
// codes in groups of group with scales and biases of dtype dt: the
// group's range in 2^bits−1 steps from its minimum, or, symmetric,
// llama.cpp's q8_0 (scale = max|x|/127, code = round(x/scale)+128, bias
// −128·scale).
func quantiseState(s *engine.KVState, bits, group int, dt safetensors.DType, symmetric bool) *engine.KVState {
	q := &engine.KVQuant{Group: group, Bits: bits, ScaleDType: dt}
	out := &engine.KVState{Len: s.Len, KVHeads: s.KVHeads, HeadDim: s.HeadDim, DType: safetensors.U32, Quant: q}
	enc := func(x []float32) (codes, scales, biases []byte) {
		codes = make([]byte, len(x)*bits/8)
		for g := 0; g < len(x); g += group {
			lo, hi := x[g], x[g]
			for _, v := range x[g : g+group] {
				lo, hi = min(lo, v), max(hi, v)
			}
			scale := (hi - lo) / float32(int(1)<<bits-1)
			bias := lo
			if symmetric {
				scale = max(-lo, hi) / 127
			}
			scale = roundTo(scale, dt)
			if symmetric {
				bias = -128 * scale
			}
			bias = roundTo(bias, dt)
			scales, biases = appendAs(scales, scale, dt), appendAs(biases, bias, dt)
			for i, v := range x[g : g+group] {
				code := uint32(0)
				if scale != 0 {
					code = uint32(max(0, min(float64(int(1)<<bits-1), math.Round(float64((v-bias)/scale)))))
				}
				bit := (g + i) * bits
				w := binary.LittleEndian.Uint32(codes[bit/32*4:]) | code<<(bit%32)
				binary.LittleEndian.PutUint32(codes[bit/32*4:], w)
			}
		}
		return codes, scales, biases
	}
	kv := decodeState(s)
	for l := range kv[0] {
		c, sc, bi := enc(kv[0][l])
		out.K, q.KScales, q.KBiases = append(out.K, c), append(q.KScales, sc), append(q.KBiases, bi)
		c, sc, bi = enc(kv[1][l])
		out.V, q.VScales, q.VBiases = append(out.V, c), append(q.VScales, sc), append(q.VBiases, bi)
	}
	return out
}

func roundTo(x float32, dt safetensors.DType) float32 {
	switch dt {
	case safetensors.F16:
		return half.F16ToF32(half.F32ToF16(x))
	case safetensors.BF16:
		return half.BF16ToF32(half.F32ToBF16(x))
	}
	return x
}

func appendAs(b []byte, x float32, dt safetensors.DType) []byte {
	switch dt {
	case safetensors.F16:
		return binary.LittleEndian.AppendUint16(b, half.F32ToF16(x))
	case safetensors.BF16:
		return binary.LittleEndian.AppendUint16(b, half.F32ToBF16(x))
	}
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
}

// checkConverted checks the values a cache of type kt holds (got) against
// those it imported (want): for f32, f16 and bf16 want rounded to the
// type, exactly as the host rounds (to nearest, ties to even) when exact,
// else (want was dequantised, and MLX may compute its last bit
// otherwise) within half a unit; for q8_0 within one step of each group's
// range plus the float16 rounding of its scale and bias.
func checkConverted(t *testing.T, what string, kt engine.KVType, got, want [2][][]float32, exact bool) {
	t.Helper()
	worst := 0.0
	for part := range got {
		for l := range got[part] {
			g, w := got[part][l], want[part][l]
			if len(g) != len(w) {
				t.Fatalf("%s: %d values in layer %d, want %d", what, len(g), l, len(w))
			}
			for grp := 0; grp < len(w); grp += 32 {
				lo, hi := w[grp], w[grp]
				for _, x := range w[grp : grp+32] {
					lo, hi = min(lo, x), max(hi, x)
				}
				for i := grp; i < grp+32; i++ {
					x := float64(w[i])
					var tol float64
					switch kt {
					case engine.KVF32:
						tol = math.Abs(x) * 0x1p-23
					case engine.KVF16:
						tol = math.Abs(x)*0x1p-11 + 0x1p-24
					case engine.KVBF16:
						tol = math.Abs(x) * 0x1p-8
					case engine.KVQ8:
						tol = float64(hi-lo)/255 + float64(max(-lo, hi))*0x1p-10
					}
					d := math.Abs(float64(g[i]) - x)
					worst = max(worst, d)
					if exact && kt != engine.KVQ8 && g[i] != roundTo(w[i], kt.DType()) {
						t.Fatalf("%s: layer %d %s value %d is %g, want %g rounded to %s, %g", what, l, [2]string{"key", "value"}[part], i, g[i], x, kt, roundTo(w[i], kt.DType()))
					}
					if d > tol+1e-7 {
						t.Fatalf("%s: layer %d %s value %d is %g, want %g (within %.2g)", what, l, [2]string{"key", "value"}[part], i, g[i], x, tol)
					}
				}
			}
		}
	}
	t.Logf("%s: largest change %.2g", what, worst)
}

// sameBytes checks that got holds src's codes, scales and biases as they
// are.
func sameBytes(t *testing.T, what string, got, src *engine.KVState) {
	t.Helper()
	g, s := got.Quant, src.Quant
	if g == nil || g.Group != s.Group || g.Bits != s.Bits || g.ScaleDType != s.ScaleDType {
		t.Fatalf("%s: exported %+v, want %+v", what, g, s)
	}
	for i, pair := range [][2][][]byte{{got.K, src.K}, {got.V, src.V}, {g.KScales, s.KScales}, {g.KBiases, s.KBiases}, {g.VScales, s.VScales}, {g.VBiases, s.VBiases}} {
		for l := range pair[1] {
			if string(pair[0][l]) != string(pair[1][l]) {
				t.Fatalf("%s: part %d of layer %d changed", what, i, l)
			}
		}
	}
}
