package gguf

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// everyValue holds a metadata pair of every value type Write takes, in
// an order Open must keep.
var everyValue = []KV{
	{"general.architecture", "llama"},
	{"general.alignment", uint32(64)},
	{"u8", uint8(200)}, {"i8", int8(-3)}, {"u16", uint16(65535)}, {"i16", int16(-300)},
	{"u32", uint32(4_000_000_000)}, {"i32", int32(-7)}, {"u64", uint64(1 << 60)}, {"i64", int64(-1 << 60)},
	{"f32", float32(1e-5)}, {"f64", math.Pi}, {"yes", true}, {"no", false},
	{"empty string", ""}, {"unicode", "héllo ▁wörld\x00"},
	{"tokens", []string{"<s>", "", "Ġthe", "\xff"}},
	{"types", []int32{1, 3, -1}}, {"scores", []float32{-1, 0, 1.5}},
	{"bytes", []uint8{0, 255}}, {"i8s", []int8{-128}}, {"u16s", []uint16{1}}, {"i16s", []int16{-1}},
	{"u32s", []uint32{7}}, {"u64s", []uint64{1 << 63}}, {"i64s", []int64{-2}}, {"f64s", []float64{0.5}},
	{"bools", []bool{true, false}}, {"no elements", []uint32{}},
	{"nested", []any{[]string{"a", "b"}, []int32{}, []any{[]bool{true}}}},
}

// allTypes is one tensor of each supported type, and one of a type
// Driftwood does not read, with random bytes.
func allTypes(r *rand.Rand) []WriteTensor {
	var ts []WriteTensor
	for i, typ := range append(append([]Type(nil), supported...), IQ2_XXS) {
		dims := []int{typ.BlockSize() * (1 + i%2), 1 + i%3}
		dims = append(dims, []int{2, 3}[:i%3]...)
		size, _ := (&WriteTensor{Type: typ, Dims: dims}).size()
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		ts = append(ts, WriteTensor{Name: "blk." + typ.String() + ".weight", Type: typ, Dims: dims, Data: data})
	}
	return ts
}

// TestWriteOpenRoundTrip writes metadata of every value type and a
// tensor of every supported type (one through Source) and checks Open
// gives them back in order, byte for byte, each tensor aligned.
func TestWriteOpenRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ts := allTypes(r)
	streamed := ts[4].Data
	ts[4].Data, ts[4].Source = nil, func(w io.Writer) error { _, err := w.Write(streamed); return err }
	for _, c := range []struct {
		meta   []KV
		align  int
		reason string
	}{
		{everyValue, 64, "every value type, general.alignment 64"},
		{everyValue[2:4], DefaultAlignment, "no general.alignment: 32"},
	} {
		path := writeFile(t, c.meta, ts)
		f, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", c.reason, err)
		}
		if f.Version != 3 || f.Alignment != c.align || f.Path != path {
			t.Errorf("%s: version %d, alignment %d, path %s", c.reason, f.Version, f.Alignment, f.Path)
		}
		var got []KV
		for k, v := range f.Meta.All() {
			got = append(got, KV{k, v})
		}
		if !reflect.DeepEqual(got, c.meta) {
			t.Errorf("%s: metadata\n got %#v\nwant %#v", c.reason, got, c.meta)
		}
		if len(f.Tensors) != len(ts) {
			t.Fatalf("%s: %d tensors, want %d", c.reason, len(f.Tensors), len(ts))
		}
		for i, w := range ts {
			g := f.Tensors[i]
			data := w.Data
			if data == nil {
				data = streamed
			}
			if g.Name != w.Name || g.Type != w.Type || !reflect.DeepEqual(g.Dims, w.Dims) || !bytes.Equal(g.Data, data) {
				t.Errorf("%s: tensor %d = %s %s %v (%d bytes), want %s %s %v (%d bytes)", c.reason, i, g.Name, g.Type, g.Dims, len(g.Data), w.Name, w.Type, w.Dims, len(data))
			}
			if g.Offset%int64(c.align) != 0 {
				t.Errorf("%s: tensor %s at offset %d, not aligned to %d", c.reason, g.Name, g.Offset, c.align)
			}
			if byName, ok := f.Tensor(w.Name); !ok || byName != g {
				t.Errorf("%s: Tensor(%q) does not find it", c.reason, w.Name)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

func writeFile(t testing.TB, meta []KV, ts []WriteTensor) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, meta, ts); err != nil {
		t.Fatal(err)
	}
	return tempFile(t, b.Bytes())
}

func tempFile(t testing.TB, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCheckSupported checks that a file holding a type Driftwood does
// not read opens, and that the tensor names itself and its type when a
// loader asks.
func TestCheckSupported(t *testing.T) {
	f, err := Open(writeFile(t, nil, allTypes(rand.New(rand.NewPCG(1, 1)))))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tt := range f.Tensors {
		err := tt.CheckSupported()
		if tt.Type.Supported() != (err == nil) {
			t.Errorf("%s: CheckSupported = %v", tt.Name, err)
		}
	}
	iq, _ := f.Tensor("blk.IQ2_XXS.weight")
	const want = "tensor blk.IQ2_XXS.weight is IQ2_XXS, which Driftwood does not read (it reads F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K)"
	if err := iq.CheckSupported(); err == nil || err.Error() != want {
		t.Errorf("CheckSupported = %v, want %q", err, want)
	}
}

// raw builds a GGUF file field by field, to write what Write refuses.
type raw struct{ b []byte }

func header(version uint32, tensors, kvs uint64) *raw {
	r := &raw{[]byte("GGUF")}
	return r.u32(version).u64(tensors).u64(kvs)
}

func (r *raw) u32(v uint32) *raw { r.b = binary.LittleEndian.AppendUint32(r.b, v); return r }
func (r *raw) u64(v uint64) *raw { r.b = binary.LittleEndian.AppendUint64(r.b, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.b = append(r.b, s...); return r }

// kv writes a key and a uint32 value.
func (r *raw) kv(key string, v uint32) *raw { return r.str(key).u32(uint32(typeUint32)).u32(v) }

// tensor writes a tensor entry.
func (r *raw) tensor(name string, typ Type, offset uint64, dims ...uint64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(uint32(typ)).u64(offset)
}

// data pads to 32 and appends n bytes of tensor data.
func (r *raw) data(n int) []byte {
	for len(r.b)%32 != 0 {
		r.b = append(r.b, 0)
	}
	return append(r.b, make([]byte, n)...)
}

// TestOpenRefuses checks that each kind of bad or hostile file gets one
// error naming what is wrong and where, before anything is allocated
// for it.
func TestOpenRefuses(t *testing.T) {
	arrayHeader := func(et valueType, n uint64) *raw {
		return header(3, 0, 1).str("tokenizer.ggml.tokens").u32(uint32(typeArray)).u32(uint32(et)).u64(n)
	}
	deep := header(3, 0, 1).str("deep").u32(uint32(typeArray))
	for range MaxArrayDepth + 1 {
		deep.u32(uint32(typeArray)).u64(1)
	}
	for _, c := range []struct {
		file   []byte
		want   string
		reason string
	}{
		{[]byte("GGU"), "too short for a GGUF header", "a file shorter than the header"},
		{append([]byte("{\"__metadata__\""), make([]byte, 20)...), `not a GGUF file: it starts with "{\"__", not "GGUF"`, "another format (safetensors)"},
		{header(1, 0, 0).b, "GGUF version 1", "version 1, whose counts were 32 bits"},
		{header(3<<24, 0, 0).b, "big-endian GGUF (version 3", "a big-endian file"},
		{header(4, 0, 0).b, "GGUF version 4; Driftwood reads versions 2 and 3", "a future version"},
		{header(3, 0, MaxKVs+1).b, "65537 metadata pairs, more than the 65536", "a pair count past MaxKVs"},
		{header(3, 1<<40, 0).b, "more than the 65536 Driftwood reads", "a tensor count past MaxTensors"},
		{header(3, 10, 10).b, "need at least 450 bytes; the file has 0", "counts the file cannot hold"},
		{header(3, 0, 1).u64(MaxNameLen + 1).data(32), "metadata pair 1 of 1: at offset 24: key of 65536 bytes, more than the 65535", "a key past MaxNameLen"},
		{header(3, 0, 1).str("").u32(0).data(32), "metadata pair 1 of 1 at offset 24 has an empty key", "an empty key"},
		{header(3, 0, 2).kv("a", 1).kv("a", 2).b, `metadata key "a" at offset 41 is given twice`, "a key given twice"},
		{header(3, 0, 1).str("k").u32(13).b, `metadata key "k": at offset 33: unknown value type 13`, "an unknown value type"},
		{header(3, 0, 1).str("name").u32(uint32(typeString)).u64(100).b, `metadata key "name": at offset 48: string of 100 bytes runs past the end of the 48-byte file`, "a truncated string"},
		{header(3, 0, 1).str("tmpl").u32(uint32(typeString)).u64(MaxStringLen + 1).b, "string of 16777217 bytes, more than the 16777216", "a string past MaxStringLen"},
		{arrayHeader(typeString, MaxArrayLen+1).b, `metadata key "tokenizer.ggml.tokens": at offset 57: array of 16777217 strings, more than the 16777216`, "an array past MaxArrayLen"},
		{arrayHeader(typeString, 1<<20).b, "array of 1048576 strings needs at least 8388608 bytes, 0 are left", "an array longer than the file"},
		{arrayHeader(99, 1).b, "array of unknown value type 99", "an array of an unknown type"},
		{deep.b, "arrays nested more than 8 deep", "arrays nested past MaxArrayDepth"},
		{header(3, 0, 1).str("general.alignment").u32(uint32(typeUint64)).u64(32).b, `"general.alignment" is uint64, want uint32`, "an alignment of the wrong type"},
		{header(3, 0, 1).kv("general.alignment", 48).b, `"general.alignment" is 48, want a power of two`, "an alignment not a power of two"},
		{header(3, 1, 0).u64(1 << 20).data(32), "tensor 1 of 1: at offset 24: name of 1048576 bytes, more than the 65535", "a tensor name past MaxNameLen"},
		{header(3, 2, 0).tensor("w", F32, 0, 8).tensor("w", F32, 32, 8).data(64), `tensor "w" at offset 57 is listed twice`, "a tensor name given twice"},
		{header(3, 1, 0).tensor("w", F32, 0).data(0), `tensor "w": at offset 33: 0 dimensions, want 1 to 4`, "no dimensions"},
		{header(3, 1, 0).tensor("w", F32, 0, 1, 1, 1, 1, 1).data(0), "5 dimensions, want 1 to 4", "too many dimensions"},
		{header(3, 1, 0).tensor("w", F32, 0, 8, 0).data(0), "dimension 1 is 0; each must be at least 1", "an empty dimension"},
		{header(3, 1, 0).tensor("w", F32, 0, 1<<32, 1<<32).data(0), "dimension 1 is 4294967296; each must be at least 1 and the product fit in an int", "a shape past an int"},
		{header(3, 1, 0).tensor("w", Type(99), 0, 8).data(0), `tensor "w": at offset 45: unknown type 99`, "an unknown type"},
		{header(3, 1, 0).tensor("w", Q4_0_4_4, 0, 32).data(18), "type Q4_0_4_4, which ggml removed from GGUF files", "a removed type"},
		{header(3, 1, 0).tensor("w", Q4_K, 0, 100).data(144), "Q4_K rows of 100 weights, not a multiple of its block of 256", "a partial block"},
		{header(3, 1, 0).tensor("w", F32, 0, 1<<40).data(0), "F32 shape [1099511627776] needs more bytes than the", "a shape larger than the file"},
		{header(3, 1, 0).tensor("w", F32, 8, 8).data(64), `tensor "w" (entry at offset 24): data offset 8 is not a multiple of the alignment 32`, "an unaligned offset"},
		{header(3, 1, 0).tensor("w", F32, 32, 16).data(64), "64 bytes at data offset 32 (file offset 96) run past the end of the 128-byte file", "data past the end of the file"},
		{header(3, 1, 0).tensor("w", F32, 1<<63, 1).data(0), "run past the end", "an offset that would overflow"},
		{header(3, 2, 0).tensor("a", F32, 0, 16).tensor("b", F32, 32, 8).data(64), `tensors "a" [96, 160) and "b" [128, 160) overlap`, "overlapping tensors"},
	} {
		path := tempFile(t, c.file)
		f, err := Open(path)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened", c.reason)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), path+": ") {
			t.Errorf("%s: error\n %v\nwant one naming the file and saying\n %s", c.reason, err, c.want)
		}
	}
}

// TestHeaderBudget checks that a header whose decoded form would take
// more memory than MaxHeaderBytes is refused before it is built: a
// million empty inner arrays are 12 bytes each in the file, 64 in
// memory.
func TestHeaderBudget(t *testing.T) {
	const n = MaxHeaderBytes/64 + 1
	r := header(3, 0, 1).str("arrays").u32(uint32(typeArray)).u32(uint32(typeArray)).u64(n)
	for range n {
		r.u32(uint32(typeUint8)).u64(0)
	}
	_, err := parse(r.b)
	if err == nil || !strings.Contains(err.Error(), `metadata key "arrays": at offset 42: the header takes more than the 67108864 bytes of memory Driftwood allows it (MaxHeaderBytes)`) {
		t.Errorf("error %v, want one naming the key and the limit", err)
	}
}

// TestOpenNotRegular checks that a FIFO is refused without blocking and
// a folder is refused, as safetensors.Open does.
func TestOpenNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.gguf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "not a regular file (a FIFO)", dir: "not a regular file (a folder)"} {
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %v, want %q", path, err, want)
		}
	}
}

// TestWriteRefuses checks Write refuses what Open would, naming it.
func TestWriteRefuses(t *testing.T) {
	f32 := func(name string, dims ...int) WriteTensor {
		n := 1
		for _, d := range dims {
			n *= d
		}
		return WriteTensor{Name: name, Type: F32, Dims: dims, Data: make([]byte, 4*n)}
	}
	for _, c := range []struct {
		meta   []KV
		ts     []WriteTensor
		want   string
		reason string
	}{
		{[]KV{{"a", 1}}, nil, `metadata key "a": value of Go type int`, "an int, whose width GGUF would not know"},
		{[]KV{{"a", uint8(1)}, {"a", uint8(2)}}, nil, `metadata key "a" is empty or given twice`, "a repeated key"},
		{[]KV{{"", uint8(1)}}, nil, `metadata key "" is empty`, "an empty key"},
		{[]KV{{"n", []any{"x"}}}, nil, "element 0 of an array of arrays is string", "an array of arrays holding a scalar"},
		{[]KV{{"general.alignment", uint32(3)}}, nil, "want a power of two", "a bad alignment"},
		{nil, []WriteTensor{f32("w", 2), f32("w", 2)}, `tensor "w" given twice`, "a repeated tensor"},
		{nil, []WriteTensor{{Name: "w", Type: Q8_0, Dims: []int{16}, Data: make([]byte, 17)}}, "Q8_0 holds weights in blocks of 32, and 16", "a partial block"},
		{nil, []WriteTensor{{Name: "w", Type: F32, Dims: []int{2}, Data: make([]byte, 7)}}, "F32 shape [2] needs 8 bytes, got 7", "data of the wrong size"},
		{nil, []WriteTensor{{Name: "w", Type: F32, Dims: []int{2}}}, "no Data and no Source", "no data"},
		{nil, []WriteTensor{{Name: "w", Type: F32, Dims: []int{2}, Source: func(w io.Writer) error { _, err := w.Write(make([]byte, 4)); return err }}}, "Source wrote 4 bytes, want 8", "a Source that writes too little"},
		{nil, []WriteTensor{f32("w", 1, 1, 1, 1, 1)}, "5 dimensions", "too many dimensions"},
		{nil, []WriteTensor{f32("w", 2, 0)}, "each dimension must be at least 1", "an empty dimension"},
	} {
		if err := Write(io.Discard, c.meta, c.ts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Write = %v, want %q", c.reason, err, c.want)
		}
	}
}

// TestMetadataAccessors checks each accessor's value and its errors,
// which name the key, what it holds and what was wanted.
func TestMetadataAccessors(t *testing.T) {
	m := newMetadata(everyValue)
	if m.Len() != len(everyValue) || !m.Has("u8") || m.Has("missing") {
		t.Errorf("Len %d, Has wrong", m.Len())
	}
	check := func(what string, got any, err error, want any, wantErr string) {
		t.Helper()
		switch {
		case wantErr == "" && (err != nil || !reflect.DeepEqual(got, want)):
			t.Errorf("%s = %v, %v; want %v", what, got, err, want)
		case wantErr != "" && (err == nil || err.Error() != wantErr):
			t.Errorf("%s error %v, want %q", what, err, wantErr)
		}
	}
	s, err := m.String("general.architecture")
	check("String", s, err, "llama", "")
	s, err = m.String("u32")
	check("String of a uint32", s, err, nil, `metadata key "u32" is uint32, want a string`)
	s, err = m.String("llama.block_count")
	check("String of a missing key", s, err, nil, `no metadata key "llama.block_count" (want a string)`)
	for key, want := range map[string]uint64{"u8": 200, "u16": 65535, "u32": 4e9, "u64": 1 << 60} {
		u, err := m.Uint(key)
		check("Uint "+key, u, err, want, "")
	}
	u, err := m.Uint("i8")
	check("Uint of a negative", u, err, nil, `metadata key "i8" is -3, want a non-negative integer`)
	u, err = m.Uint("f32")
	check("Uint of a float", u, err, nil, `metadata key "f32" is float32, want a non-negative integer`)
	fl, err := m.Float("f32")
	check("Float of a float32", fl, err, float64(float32(1e-5)), "")
	fl, err = m.Float("f64")
	check("Float of a float64", fl, err, math.Pi, "")
	fl, err = m.Float("u8")
	check("Float of an int", fl, err, nil, `metadata key "u8" is uint8, want a float`)
	b, err := m.Bool("yes")
	check("Bool", b, err, true, "")
	ss, err := m.Strings("tokens")
	check("Strings", ss, err, []string{"<s>", "", "Ġthe", "\xff"}, "")
	ss, err = m.Strings("types")
	check("Strings of int32s", ss, err, nil, `metadata key "types" is array[int32], want an array of strings`)
	is, err := m.Int32s("types")
	check("Int32s", is, err, []int32{1, 3, -1}, "")
	fs, err := m.Float32s("scores")
	check("Float32s", fs, err, []float32{-1, 0, 1.5}, "")
	fs, err = m.Float32s("nested")
	check("Float32s of arrays", fs, err, nil, `metadata key "nested" is array[array], want an array of float32`)
	if v, ok := m.Get("i16"); !ok || v != int16(-300) {
		t.Errorf("Get(i16) = %v, %v", v, ok)
	}
	if got := TypeName(3); got != "Go type int" {
		t.Errorf("TypeName(3) = %q", got)
	}
}
