package sessions

import (
	"encoding/binary"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// floats is a float32 KV state of n positions of 3 layers of 2 heads of
// headDim, smooth values that every form holds.
func floats(n, headDim int) *engine.KVState {
	kv := &engine.KVState{Len: n, KVHeads: 2, HeadDim: headDim, DType: safetensors.F32}
	for l := 0; l < 3; l++ {
		k, v := make([]float32, 2*n*headDim), make([]float32, 2*n*headDim)
		for i := range k {
			k[i] = float32(math.Sin(float64(i*7+l))) * 3
			v[i] = float32(math.Cos(float64(i*3+l))) / 2
		}
		kv.K, kv.V = append(kv.K, f32Bytes(k)), append(kv.V, f32Bytes(v))
	}
	return kv
}

func f32Bytes(f []float32) []byte {
	b := make([]byte, 0, 4*len(f))
	for _, v := range f {
		b = binaryLE(b, math.Float32bits(v))
	}
	return b
}

func binaryLE(b []byte, u uint32) []byte {
	return append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
}

// f32s reads little-endian float32 bytes.
func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// kvTypes are the forms a cache exports.
var kvTypes = []engine.KVType{engine.KVF32, engine.KVF16, engine.KVBF16, engine.KVQ8}

// sameKV reports how got differs from want, byte for byte ("" when not).
func sameKV(got, want *engine.KVState) string {
	if got.Len != want.Len || got.KVHeads != want.KVHeads || got.HeadDim != want.HeadDim || got.DType != want.DType || (got.Quant == nil) != (want.Quant == nil) {
		return "shape or dtype"
	}
	parts := func(s *engine.KVState) [][][]byte {
		p := [][][]byte{s.K, s.V}
		if q := s.Quant; q != nil {
			p = append(p, q.KScales, q.KBiases, q.VScales, q.VBiases)
		}
		return p
	}
	if q, w := got.Quant, want.Quant; q != nil && (q.Group != w.Group || q.Bits != w.Bits || q.ScaleDType != w.ScaleDType) {
		return "quantisation"
	}
	g, w := parts(got), parts(want)
	for i := range w {
		if !slices.EqualFunc(g[i], w[i], slices.Equal) {
			return "tensor data of part " + strconv.Itoa(i)
		}
	}
	return ""
}

// quant4 is a 4-bit state with F32 scales in groups of 32, as mlx-lm's
// --kv-bits 4 --kv-group-size 32 makes for an f32 model.
func quant4(n int) *engine.KVState {
	kv := &engine.KVState{Len: n, KVHeads: 2, HeadDim: 64, DType: safetensors.U32,
		Quant: &engine.KVQuant{Group: 32, Bits: 4, ScaleDType: safetensors.F32}}
	q := kv.Quant
	fill := func(size int, seed int) []byte {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(i*31 + seed)
		}
		return b
	}
	scales := func(seed int) []byte {
		f := make([]float32, 2*n*2)
		for i := range f {
			f[i] = float32(i+seed) / 64
		}
		return f32Bytes(f)
	}
	for l := 0; l < 3; l++ {
		kv.K, kv.V = append(kv.K, fill(2*n*32, l)), append(kv.V, fill(2*n*32, l+5))
		q.KScales, q.KBiases = append(q.KScales, scales(l)), append(q.KBiases, scales(l+1))
		q.VScales, q.VBiases = append(q.VScales, scales(l+2)), append(q.VBiases, scales(l+3))
	}
	return kv
}

func TestRoundTripEveryForm(t *testing.T) {
	dir := t.TempDir()
	states := map[string]*engine.KVState{"q4": quant4(5)}
	for _, typ := range kvTypes {
		states[string(typ)] = floats(5, 32).Convert(typ)
	}
	for name, kv := range states {
		path := filepath.Join(dir, name+".safetensors")
		meta, _ := sample(5, 0)
		if err := Save(path, meta, kv); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		snap, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := sameKV(snap.KV, kv); d != "" {
			t.Errorf("%s: the state read back differs in its %s", name, d)
		}
		cfg := &engine.Config{NumHiddenLayers: 3, NumKeyValueHeads: 2, HeadDim: kv.HeadDim}
		if err := cfg.ValidateKV(snap.KV, 8); err != nil {
			t.Errorf("%s: the state read back is refused: %v", name, err)
		}
		if m := snap.Meta; m.Version != Version || m.KV.DType != kv.DType || (m.KV.Quant != nil) != (kv.Quant != nil) {
			t.Errorf("%s: header %+v", name, m.KV)
		}
		snap.Close()
	}
}

// TestMLXLayout checks the tensor names, shapes and metadata that mlx-lm's
// load_prompt_cache (0.32.2) reads.
func TestMLXLayout(t *testing.T) {
	dir := t.TempDir()
	meta, _ := sample(4, 0)
	meta.ModelSource = &ModelSource{Path: "/models/tiny"}
	for _, typ := range []engine.KVType{engine.KVF16, engine.KVQ8} {
		path := filepath.Join(dir, string(typ)+".safetensors")
		if err := Save(path, meta, floats(4, 32).Convert(typ)); err != nil {
			t.Fatal(err)
		}
		f, err := safetensors.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		class, names, scalars := "KVCache", []string{"0.0", "0.1", "0.2"}, []string{"0.2"}
		shape, scalarShape := []int{1, 2, 4, 32}, []int{1, 2, 4, 1}
		if typ == engine.KVQ8 {
			class, names, scalars = "QuantizedKVCache", []string{"0.0.0", "0.0.1", "0.0.2", "0.1.0", "0.1.1", "0.1.2", "0.2", "0.3", "0.4"}, []string{"0.2", "0.3", "0.4"}
			shape = []int{1, 2, 4, 8} // 32 8-bit codes in 8 words
		}
		var want []string
		for l := range 3 {
			for _, n := range names {
				want = append(want, strconv.Itoa(l)+n[1:])
			}
		}
		if got := f.Names(); !slices.Equal(got, want) {
			t.Errorf("%s: tensors %v, want %v", typ, got, want)
		}
		first := map[bool]string{false: "1.0", true: "1.0.0"}[typ == engine.KVQ8]
		if s := f.Tensors[first].Shape; !slices.Equal(s, shape) {
			t.Errorf("%s: %s has shape %v, want %v", typ, first, s, shape)
		}
		if typ == engine.KVQ8 {
			if s := f.Tensors["1.1.2"]; !slices.Equal(s.Shape, scalarShape) || s.DType != safetensors.F16 {
				t.Errorf("biases are %s %v", s.DType, s.Shape)
			}
			for name, v := range map[string]int32{"2.2": 4, "2.3": 32, "2.4": 8} {
				if d := f.Tensors[name].Data; len(f.Tensors[name].Shape) != 0 || int32(binary.LittleEndian.Uint32(d)) != v {
					t.Errorf("%s: %v %v, want the scalar %d", name, f.Tensors[name].Shape, d, v)
				}
			}
		}
		md := f.Metadata
		if md["0.model"] != "/models/tiny" || md["0.tokenizer_config"] != "{}" || !strings.Contains(md["0.driftwood"], Format) || md["2.0"] != "" {
			t.Errorf("%s: metadata %v", typ, md)
		}
		for l := range 3 {
			if md["1."+strconv.Itoa(l)] != class {
				t.Errorf("%s: layer %d's class is %q", typ, l, md["1."+strconv.Itoa(l)])
			}
		}
		for i, s := range scalars {
			if k := "2." + strconv.Itoa(i+1); md[k+".0"] != s || md[k+".1"] != "scalar" {
				t.Errorf("%s: scalar %d is %q %q, want %q", typ, i+1, md[k+".0"], md[k+".1"], s)
			}
		}
		if want := 3 + 3 + 1 + 2*3*len(scalars); len(md) != want {
			t.Errorf("%s: %d metadata keys, want %d: %v", typ, len(md), want, md)
		}
	}
}

func TestMLXModel(t *testing.T) {
	for src, want := range map[*ModelSource]string{
		nil:          "",
		{Path: "/m"}: "/m",
		{Repo: "org/m", Revision: "abc", Path: "/hf/snap"}:  "org/m",
		{Repo: "org/g", File: "g.gguf", Path: "/hf/g.gguf"}: "/hf/g.gguf",
		{Store: "ollama:x", Path: "/blobs/x"}:               "/blobs/x",
	} {
		if got := mlxModel(src); got != want {
			t.Errorf("%+v: %q, want %q", src, got, want)
		}
	}
}

// rewrite writes src's tensors and metadata to dst after edit.
func rewrite(t *testing.T, src, dst string, edit func(md map[string]string, ts map[string]*safetensors.Tensor)) {
	t.Helper()
	f, err := safetensors.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	md := maps.Clone(f.Metadata)
	ts := map[string]*safetensors.Tensor{}
	for name, tt := range f.Tensors {
		c := *tt
		c.Shape, c.Data = slices.Clone(tt.Shape), slices.Clone(tt.Data)
		ts[name] = &c
	}
	edit(md, ts)
	var list []safetensors.Tensor
	for _, name := range slices.Sorted(maps.Keys(ts)) {
		list = append(list, *ts[name])
	}
	if err := safetensors.Write(dst, md, list); err != nil {
		t.Fatal(err)
	}
}

// TestWrongTensorsAreRefused: every tensor's name, dtype and shape is
// checked, with the layout's metadata, and the error names what is
// wrong.
func TestWrongTensorsAreRefused(t *testing.T) {
	dir := t.TempDir()
	meta, _ := sample(6, 0)
	good := map[engine.KVType]string{}
	for _, typ := range []engine.KVType{engine.KVF16, engine.KVQ8} {
		good[typ] = filepath.Join(dir, string(typ)+".safetensors")
		if err := Save(good[typ], meta, floats(6, 32).Convert(typ)); err != nil {
			t.Fatal(err)
		}
	}
	type edit = func(md map[string]string, ts map[string]*safetensors.Tensor)
	for _, c := range []struct {
		typ  engine.KVType
		what string
		edit edit
		want string
	}{
		{engine.KVF16, "dtype", func(_ map[string]string, ts map[string]*safetensors.Tensor) { ts["2.1"].DType = safetensors.BF16 },
			"tensor 2.1 is BF16 [1 2 6 32], the header says F16 [1 2 6 32]"},
		{engine.KVF16, "shape", func(_ map[string]string, ts map[string]*safetensors.Tensor) { ts["0.0"].Shape = []int{1, 6, 2, 32} },
			"tensor 0.0 is F16 [1 6 2 32]"},
		{engine.KVF16, "missing offset", func(_ map[string]string, ts map[string]*safetensors.Tensor) { delete(ts, "1.2") }, "missing tensor 1.2"},
		{engine.KVQ8, "missing scales", func(_ map[string]string, ts map[string]*safetensors.Tensor) { delete(ts, "1.0.1") }, "missing tensor 1.0.1"},
		{engine.KVQ8, "biases' dtype", func(_ map[string]string, ts map[string]*safetensors.Tensor) { ts["1.1.2"].DType = safetensors.BF16 },
			"tensor 1.1.2 is BF16"},
		{engine.KVQ8, "codes' dtype", func(_ map[string]string, ts map[string]*safetensors.Tensor) { ts["2.0.0"].DType = safetensors.F32 },
			"tensor 2.0.0 is F32"},
		{engine.KVQ8, "codes' shape", func(_ map[string]string, ts map[string]*safetensors.Tensor) { ts["2.0.0"].Shape = []int{1, 6, 2, 8} },
			"tensor 2.0.0 is U32 [1 6 2 8], the header says U32 [1 2 6 8]"},
		{engine.KVQ8, "scalar's shape", func(_ map[string]string, ts map[string]*safetensors.Tensor) { ts["0.4"].Shape = []int{1} },
			"tensor 0.4 is I32 [1]"},
		{engine.KVQ8, "extra tensor", func(_ map[string]string, ts map[string]*safetensors.Tensor) {
			ts["3.0"] = &safetensors.Tensor{Name: "3.0", DType: safetensors.F32, Shape: []int{1}, Data: make([]byte, 4)}
		}, "unexpected tensor 3.0"},
		{engine.KVQ8, "class", func(md map[string]string, _ map[string]*safetensors.Tensor) { md["1.1"] = "RotatingKVCache" },
			"layer 1 is a RotatingKVCache, the header says QuantizedKVCache"},
		{engine.KVQ8, "scalar's type", func(md map[string]string, _ map[string]*safetensors.Tensor) { md["2.4.1"] = "string" },
			"tensor 1.2 is not listed in the metadata as a scalar"},
		{engine.KVQ8, "unlisted scalar", func(md map[string]string, _ map[string]*safetensors.Tensor) {
			delete(md, "2.9.0")
			delete(md, "2.9.1")
		}, "metadata lists 8 scalars, the 3 layers hold 9"},
		{engine.KVQ8, "a key outside the layout", func(md map[string]string, _ map[string]*safetensors.Tensor) { md["3.x"] = "" },
			`metadata key "3.x" is not in mlx-lm's prompt-cache layout`},
		{engine.KVQ8, "offset", func(_ map[string]string, ts map[string]*safetensors.Tensor) { ts["1.2"].Data[0] = 5 }, "corrupt"},
	} {
		p := filepath.Join(dir, "bad.safetensors")
		rewrite(t, good[c.typ], p, c.edit)
		s, err := Open(p)
		if err == nil {
			s.Close()
			t.Errorf("%s, %s: opened", c.typ, c.what)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s, %s: err %q, want the path and %q", c.typ, c.what, err, c.want)
		}
	}
}
