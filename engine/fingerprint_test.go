package engine

import (
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

// TestAppendValueIsFmt holds appendValue to fmt's %v, which GGUF
// fingerprints were made with (a saved session's model is recognised by
// them): on every value type, edge floats, nested arrays, and the
// metadata of the test GGUF files, vocabularies of 128,000 tokens among
// them.
func TestAppendValueIsFmt(t *testing.T) {
	f32 := []float32{0, float32(math.Copysign(0, -1)), 0.1, -2.5e-7, 1e-45, math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3}
	values := []any{
		uint8(7), int8(-7), uint16(65535), int16(-3), uint32(1 << 31), int32(-1 << 31), uint64(math.MaxUint64), int64(math.MinInt64),
		float32(0.1), float32(math.Inf(1)), float32(math.NaN()), 2.5e300, math.Inf(-1), true, false, "", "a b\x00\"ü",
		[]string{}, []string{"", " ", "Ġthe", "<|eot_id|>", "a b"}, []int32{-1, 0, 1 << 30}, []uint32{0, math.MaxUint32},
		f32, []uint8{0, 255}, []int8{-128, 127}, []bool{true, false}, []uint64{1}, []int64{-1}, []float64{0.5, math.NaN()},
		[]any{[]string{"x", "y"}, []any{[]int32{1, 2}, []float32{-0.5}}}, []any{},
	}
	for _, v := range values {
		if got, want := string(appendValue(nil, v)), fmt.Sprintf("%v", v); got != want {
			t.Errorf("%T %v: %q, fmt writes %q", v, v, got, want)
		}
	}
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "gguf", "*.gguf"))
	for _, gz := range []string{"llama3", "qwen3", "mistral"} {
		paths = append(paths, gunzipTo(t, filepath.Join("tokenizer", "testdata", "gguf", gz+".gguf.gz")))
	}
	for _, p := range paths {
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range f.Meta.All() {
			if got, want := string(appendValue(nil, v)), fmt.Sprintf("%v", v); got != want {
				t.Errorf("%s: %s: appendValue and fmt differ", p, k)
			}
		}
		f.Close()
	}
	if len(paths) < 4 {
		t.Errorf("%d GGUF files checked", len(paths))
	}
}

func gunzipTo(t *testing.T, path string) string {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path[:len(path)-3]))
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := io.Copy(w, zr); err != nil {
		t.Fatal(err)
	}
	return out
}
