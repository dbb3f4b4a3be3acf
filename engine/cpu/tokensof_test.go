package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// exported runs ids through the fixture's model in a cache of type typ
// and exports it.
func exported(t *testing.T, name string, typ engine.KVType, ids []int32) *engine.KVState {
	t.Helper()
	f := load(t, name, Options{Threads: 2, KVType: typ})
	c := f.cache(t)
	defer c.Close()
	if err := f.b.Forward(c, ids, make([]float32, f.m.Config.VocabSize)); err != nil {
		t.Fatal(err)
	}
	kv, err := c.Export()
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// TestRecoverTokens runs known ids through each family of the tiny
// models (Qwen2's value bias, Qwen3, quantised weights) in every cache
// type and recovers them from the exported state.
func TestRecoverTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 3))
	ids := []int32{500, 367, 256, 305, 68, 286, 220, 264, 83, 367, 367, 0, 511}
	for range 100 {
		ids = append(ids, rng.Int32N(512))
	}
	for _, name := range []string{"tiny-f32", "tiny-hd32-f32", "tiny-qwen2-f32", "tiny-qwen3-f32", "tiny-mlx-q4", "tiny-qwen3-mlx-q4"} {
		for _, typ := range engine.KVTypes {
			if typ == engine.KVQ8 && !strings.Contains(name, "hd32") && !strings.Contains(name, "qwen3") {
				continue // q8_0 needs head_dim 32
			}
			kv := exported(t, name, typ, ids)
			f := load(t, name, Options{Threads: 2})
			start := time.Now()
			rec, err := f.b.RecoverTokens(kv, nil)
			if err != nil {
				t.Errorf("%s, %s cache: %v", name, typ, err)
				continue
			}
			if !slices.Equal(rec.IDs, ids) {
				t.Errorf("%s, %s cache: recovered %v, want %v", name, typ, rec.IDs, ids)
			}
			t.Logf("%s, %s cache: %d positions in %s, farthest %.2g of the values' size, runner-up at least %.3g times as far",
				name, typ, len(ids), time.Since(start).Round(time.Microsecond), rec.Dist, rec.Margin)
		}
	}
}

// TestRecoverTokensRefuses refuses the values of another model and values
// halfway between two tokens'.
func TestRecoverTokensRefuses(t *testing.T) {
	ids := []int32{500, 367, 256, 305}
	// tiny-untied-f32 has tiny-f32's shape and other weights.
	kv := exported(t, "tiny-untied-f32", engine.KVF32, ids)
	f := load(t, "tiny-f32", Options{Threads: 2})
	if _, err := f.b.RecoverTokens(kv, nil); err == nil || !strings.Contains(err.Error(), "not made with this model") || !strings.Contains(err.Error(), "position 0 of 4") {
		t.Errorf("another model's values: %v", err)
	}

	// Position 2 holds values 0.4 of the way from the nearest two tokens'
	// of the vocabulary to each other, the other layers token 256's: near
	// enough to both in the first layer, and neither gives the rest.
	vocab, kvDim := f.m.Config.VocabSize, kv.KVHeads*kv.HeadDim
	table := make([]float32, vocab*kvDim)
	for t0 := 0; t0 < vocab; t0 += 64 {
		f.b.tokenValues(t0, 64)
		copy(table[t0*kvDim:], f.b.st.v[:64*kvDim])
	}
	row := func(i int) []float32 { return table[i*kvDim : (i+1)*kvDim] }
	ta, tb, near := 0, 0, math.Inf(1)
	for i := range vocab {
		for j := i + 1; j < vocab; j++ {
			var d float64
			for k, x := range row(i) {
				d += float64(x-row(j)[k]) * float64(x-row(j)[k])
			}
			if d < near {
				ta, tb, near = i, j, d
			}
		}
	}
	kv = exported(t, "tiny-f32", engine.KVF32, ids)
	v := slices.Clone(kv.V[0])
	for h := range kv.KVHeads {
		for d := range kv.HeadDim {
			i := h*kv.HeadDim + d
			x := row(ta)[i] + 0.4*(row(tb)[i]-row(ta)[i])
			binary.LittleEndian.PutUint32(v[4*((h*kv.Len+2)*kv.HeadDim+d):], math.Float32bits(x))
		}
	}
	kv.V = append([][]byte{v}, kv.V[1:]...)
	if _, err := f.b.RecoverTokens(kv, []int32{int32(ta)}); err == nil || !strings.Contains(err.Error(), "position 2 are as near to tokens") || !strings.Contains(err.Error(), "not made with this model") {
		t.Errorf("values between tokens %d and %d: %v", ta, tb, err)
	}

	// A state of another shape.
	kv = &engine.KVState{Len: 1, KVHeads: 1, HeadDim: 16, DType: safetensors.F32}
	if _, err := f.b.RecoverTokens(kv, nil); err == nil {
		t.Error("a state of another shape was taken")
	}
}

// editedModel writes a copy of tiny-f32 whose embedding edit changed
// (rows of hidden floats), into a new folder, and returns the folder.
func editedModel(t *testing.T, edit func(embed []float32, hidden int, f *safetensors.File)) string {
	t.Helper()
	src := golden.ModelDir("tiny-f32")
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []safetensors.Tensor
	for _, name := range f.Names() {
		tt := *f.Tensors[name]
		if name == "model.embed_tokens.weight" {
			e := make([]float32, tt.Elements())
			for i := range e {
				e[i] = math.Float32frombits(binary.LittleEndian.Uint32(tt.Data[4*i:]))
			}
			edit(e, tt.Shape[1], f)
			tt.Data = make([]byte, 4*len(e))
			for i, x := range e {
				binary.LittleEndian.PutUint32(tt.Data[4*i:], math.Float32bits(x))
			}
		}
		ts = append(ts, tt)
	}
	dir := t.TempDir()
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), f.Metadata, ts); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// recoverOn runs ids through the model in dir in a cache of type typ and
// recovers them with likely.
func recoverOn(t *testing.T, dir string, typ engine.KVType, ids, likely []int32) (*Recovered, error) {
	t.Helper()
	m, err := engine.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := New(m, Options{Threads: 2, KVType: typ})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := b.NewCache(64)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := b.Forward(c, ids, make([]float32, m.Config.VocabSize)); err != nil {
		t.Fatal(err)
	}
	kv, err := c.Export()
	if err != nil {
		t.Fatal(err)
	}
	return b.RecoverTokens(kv, likely)
}

// TestRecoverTokensReplays makes token 300's embedding token 256's moved
// a twentieth of its length in a direction that the first layer's value
// projection does not see: their first-layer values differ by a
// thousandth, less than a bf16 cache keeps, and the rest of the model
// tells them apart.
func TestRecoverTokensReplays(t *testing.T) {
	dir := editedModel(t, func(embed []float32, hidden int, f *safetensors.File) {
		w := func(name string) []float32 {
			tt := f.Tensors[name]
			out := make([]float32, tt.Elements())
			for i := range out {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(tt.Data[4*i:]))
			}
			return out
		}
		wv, g := w("model.layers.0.self_attn.v_proj.weight"), w("model.layers.0.input_layernorm.weight")
		e := slices.Clone(embed[256*hidden : 257*hidden])
		// An orthonormal basis of the rows of W_v·diag(g) and of e.
		var basis [][]float64
		add := func(x []float64) {
			for _, q := range basis {
				var d float64
				for i := range x {
					d += x[i] * q[i]
				}
				for i := range x {
					x[i] -= d * q[i]
				}
			}
			var n float64
			for _, v := range x {
				n += v * v
			}
			if n = math.Sqrt(n); n > 1e-9 {
				for i := range x {
					x[i] /= n
				}
				basis = append(basis, x)
			}
		}
		for r := 0; r < len(wv)/hidden; r++ {
			x := make([]float64, hidden)
			for c := range x {
				x[c] = float64(wv[r*hidden+c] * g[c])
			}
			add(x)
		}
		ex := make([]float64, hidden)
		var size float64
		for i, v := range e {
			ex[i], size = float64(v), size+float64(v)*float64(v)
		}
		add(ex)
		rng := rand.New(rand.NewPCG(1, 2))
		var delta []float64
		for delta == nil {
			x := make([]float64, hidden)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			before := len(basis)
			add(x)
			if len(basis) > before {
				delta = x
			}
		}
		for i := range e {
			embed[300*hidden+i] = e[i] + float32(0.05*math.Sqrt(size)*delta[i])
		}
	})
	ids := []int32{256, 500, 300, 256, 7, 300}
	rec, err := recoverOn(t, dir, engine.KVBF16, ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.IDs, ids) || !slices.Equal(rec.Replayed, []int{0, 2, 3, 5}) {
		t.Errorf("recovered %v, replayed at %v; want %v, at 0, 2, 3 and 5", rec.IDs, rec.Replayed, ids)
	}
}

// TestRecoverTokensLikely makes token 300's embedding token 256's: nothing
// tells them apart, so only the likely tokens decide.
func TestRecoverTokensLikely(t *testing.T) {
	dir := editedModel(t, func(embed []float32, hidden int, _ *safetensors.File) {
		copy(embed[300*hidden:301*hidden], embed[256*hidden:257*hidden])
	})
	ids := []int32{500, 256, 7}
	if _, err := recoverOn(t, dir, engine.KVF16, ids, nil); err == nil || !strings.Contains(err.Error(), "position 1 of 3 cannot be told") || !strings.Contains(err.Error(), "[256 300]") && !strings.Contains(err.Error(), "[300 256]") {
		t.Errorf("twin tokens without likely ones: %v", err)
	}
	if _, err := recoverOn(t, dir, engine.KVF16, ids, []int32{256, 300}); err == nil || !strings.Contains(err.Error(), "not one alone") {
		t.Errorf("twin tokens, both likely: %v", err)
	}
	rec, err := recoverOn(t, dir, engine.KVF16, ids, []int32{500, 256})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.IDs, ids) || !slices.Equal(rec.Likely, []int{1}) {
		t.Errorf("recovered %v, likely at %v; want %v, at 1", rec.IDs, rec.Likely, ids)
	}
}
