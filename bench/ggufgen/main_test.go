package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/synthmodel"
)

// small is a Llama-shaped model small enough to convert in a test;
// small256 has rows of multiples of 256 weights, for the k-quants.
var (
	small = synthmodel.Shape{Hidden: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, Intermediate: 256, Vocab: 300,
		MaxPositions: 256, BOS: 256, EOS: []int{257}}
	small256 = synthmodel.Shape{Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, Intermediate: 512, Vocab: 300,
		MaxPositions: 256, BOS: 256, EOS: []int{257}}
)

// blockBound is the most a weight of each quantised type may decode
// away from its source, as a fraction of the largest magnitude A in its
// block (32 or 256 weights), with the f16 rounding of the scales:
// Q8_0 half a step of A/127; Q4_0 a whole step of A/8 (the one clamped
// code); Q4_1 half a step of at most 2A/15, and the f16 rounding of its
// min; Q4_K, Q5_K and Q6_K half a step of at most 2A/15, 2A/31 and A/31
// per sub-block, grown by the rounding up of the 6- and 8-bit sub-block
// scales (engine/gguf's Quantize). A row written in the wrong order is
// off by about A, far past any of these.
var blockBound = map[gguf.Type]float64{
	gguf.Q8_0: 1.0/254 + 1.0/1024,
	gguf.Q4_0: 1.0/8 + 1.0/1024,
	gguf.Q4_1: 1.0/15 + 3.0/1024,
	gguf.Q4_K: 0.07,
	gguf.Q5_K: 0.034,
	gguf.Q6_K: 0.017,
}

// TestConvert writes models in each source format, converts each to a
// GGUF type (every one ggufgen offers), reads the GGUF back with
// engine/gguf and checks every tensor's name, type and shape, and that
// its weights dequantise to the source's within the type's precision:
// blockBound for the quantised types, half an f16 or bf16 ulp, exactly
// for F32 and the F32 norms; the query and key rows in llama.cpp's order.
func TestConvert(t *testing.T) {
	for _, c := range []struct {
		dtype, typ string
		group      int
		shape      synthmodel.Shape
		want       gguf.Type
	}{
		{"q4", "", 64, small, gguf.Q4_0},
		{"q4", "", 32, small, gguf.Q4_0},
		{"q8", "", 64, small, gguf.Q8_0},
		{"f16", "", 0, small, gguf.F16},
		{"bf16", "q8_0", 0, small, gguf.Q8_0},
		{"q8", "f16", 64, small, gguf.F16},
		{"q4", "q4_1", 64, small, gguf.Q4_1},
		{"f32", "f32", 0, small, gguf.F32},
		{"f16", "bf16", 0, small, gguf.BF16},
		{"q8", "q4_k", 64, small256, gguf.Q4_K},
		{"f16", "q5_k", 0, small256, gguf.Q5_K},
		{"bf16", "q6_k", 0, small256, gguf.Q6_K},
	} {
		t.Run(fmt.Sprintf("%s-g%d-to-%s", c.dtype, c.group, c.typ), func(t *testing.T) {
			dir := t.TempDir()
			if err := synthmodel.Write(dir, synthmodel.Options{Shape: c.shape, Dtype: c.dtype, Seed: 3, GroupSize: c.group}); err != nil {
				t.Fatal(err)
			}
			writeTokenizer(t, dir)
			out := filepath.Join(dir, "model.gguf")
			if err := run(dir, out, c.typ); err != nil {
				t.Fatal(err)
			}
			want := reference(t, dir)
			for l := range c.shape.Layers {
				interleave(want[fmt.Sprintf("blk.%d.attn_q.weight", l)], c.shape.Heads, c.shape.HeadDim, c.shape.Hidden)
				interleave(want[fmt.Sprintf("blk.%d.attn_k.weight", l)], c.shape.KVHeads, c.shape.HeadDim, c.shape.Hidden)
			}
			f, err := gguf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if len(f.Tensors) != len(want) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want))
			}
			if n, err := f.Meta.Uint("llama.block_count"); n != uint64(c.shape.Layers) || err != nil {
				t.Errorf("llama.block_count = %d, %v", n, err)
			}
			if tokens, err := f.Meta.Strings("tokenizer.ggml.tokens"); len(tokens) != c.shape.Vocab || tokens[256] != "<|begin_of_text|>" || err != nil {
				t.Errorf("%d tokens, %v", len(tokens), err)
			}
			for name, w := range want {
				g, ok := f.Tensor(name)
				if !ok {
					t.Fatalf("no tensor %s", name)
				}
				wantType := c.want
				if len(g.Dims) == 1 {
					wantType = gguf.F32
				}
				if g.Type != wantType || g.Elements() != len(w) {
					t.Fatalf("%s: %s %v, want %s of %d weights", name, g.Type, g.Dims, wantType, len(w))
				}
				got := make([]float32, len(w))
				if err := gguf.Dequantize(g.Type, got, g.Data); err != nil {
					t.Fatal(err)
				}
				checkWeights(t, name, g.Type, got, w)
			}
		})
	}
}

// checkWeights checks got decodes to want within typ's precision.
func checkWeights(t *testing.T, name string, typ gguf.Type, got, want []float32) {
	t.Helper()
	bs := typ.BlockSize()
	for b := 0; b < len(want); b += bs {
		var amax float64
		for _, v := range want[b : b+bs] {
			amax = max(amax, math.Abs(float64(v)))
		}
		for i := b; i < b+bs; i++ {
			var tol float64
			switch typ {
			case gguf.F32:
			case gguf.F16: // half an ulp: 2⁻¹¹ relative, or of the smallest subnormal
				tol = max(math.Abs(float64(want[i]))/(1<<11), 1.0/(1<<25))
			case gguf.BF16:
				tol = math.Abs(float64(want[i])) / (1 << 8)
			default:
				tol = blockBound[typ]*amax + 1e-6
			}
			if e := math.Abs(float64(got[i] - want[i])); e > tol {
				t.Fatalf("%s[%d] = %g, want %g ± %g", name, i, got[i], want[i], tol)
			}
		}
	}
}

// TestConvertRefuses checks that a type the rows cannot hold, or one
// ggufgen does not know, is refused by name and leaves no file.
func TestConvertRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := synthmodel.Write(dir, synthmodel.Options{Shape: small, Dtype: "f16", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	writeTokenizer(t, dir)
	out := filepath.Join(dir, "model.gguf")
	for typ, want := range map[string]string{
		"q4_k": "token_embd.weight: rows of 128 weights, not a multiple of Q4_K's block of 256",
		"q3_k": `--type "q3_k": want one of bf16, f16, f32, q4_0, q4_1, q4_k, q5_k, q6_k, q8_0`,
	} {
		if err := run(dir, out, typ); err == nil || err.Error() != want {
			t.Errorf("--type %s: %v, want %q", typ, err, want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--type %s left %s", typ, out)
		}
	}
}

// interleave reorders the rows of a query or key projection (heads of
// headDim rows of cols) as convert_hf_to_gguf.py's permute: within a head,
// row j·headDim/2+i (j = 0, 1, the half) moves to row 2i+j.
func interleave(w []float32, heads, headDim, cols int) {
	src := append([]float32(nil), w...)
	for h := range heads {
		for j := range 2 {
			for i := range headDim / 2 {
				from, to := h*headDim+j*headDim/2+i, h*headDim+2*i+j
				copy(w[to*cols:(to+1)*cols], src[from*cols:(from+1)*cols])
			}
		}
	}
}

func writeTokenizer(t *testing.T, dir string) {
	var tok tokenizer
	tok.Model.Vocab = map[string]int{}
	for i := range 256 {
		tok.Model.Vocab[fmt.Sprintf("t%d", i)] = i
	}
	tok.Model.Merges = []string{"t t"}
	tok.Added = append(tok.Added, struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
	}{256, "<|begin_of_text|>"})
	b, err := json.Marshal(map[string]any{
		"model":        map[string]any{"vocab": tok.Model.Vocab, "merges": tok.Model.Merges},
		"added_tokens": tok.Added,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ggmlNames maps the MLX names to GGUF's.
func ggmlName(mlx string) string {
	var l int
	var rest string
	switch mlx {
	case "model.embed_tokens.weight":
		return "token_embd.weight"
	case "model.norm.weight":
		return "output_norm.weight"
	}
	if _, err := fmt.Sscanf(mlx, "model.layers.%d.%s", &l, &rest); err != nil {
		return ""
	}
	m := map[string]string{
		"input_layernorm.weight": "attn_norm", "post_attention_layernorm.weight": "ffn_norm",
		"self_attn.q_proj.weight": "attn_q", "self_attn.k_proj.weight": "attn_k", "self_attn.v_proj.weight": "attn_v",
		"self_attn.o_proj.weight": "attn_output", "mlp.gate_proj.weight": "ffn_gate", "mlp.up_proj.weight": "ffn_up",
		"mlp.down_proj.weight": "ffn_down",
	}[rest]
	if m == "" {
		return ""
	}
	return fmt.Sprintf("blk.%d.%s.weight", l, m)
}

// reference decodes the source's weights independently of ggufgen: the
// packed codes byte by byte (two nibbles, low first, or one byte each).
func reference(t *testing.T, dir string) map[string][]float32 {
	var c config
	if err := readJSON(filepath.Join(dir, "config.json"), &c); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float32{}
	for name, tn := range f.Tensors {
		g := ggmlName(name)
		if g == "" {
			continue
		}
		if tn.DType != safetensors.U32 {
			v := make([]float32, tn.Elements())
			for i := range v {
				v[i] = float(tn, i)
			}
			out[g] = v
			continue
		}
		prefix := name[:len(name)-len(".weight")]
		scales, biases := f.Tensors[prefix+".scales"], f.Tensors[prefix+".biases"]
		var codes []byte
		for _, b := range tn.Data {
			if c.Quant.Bits == 4 {
				codes = append(codes, b&15, b>>4)
			} else {
				codes = append(codes, b)
			}
		}
		v := make([]float32, len(codes))
		for i, q := range codes {
			gi := i / c.Quant.GroupSize
			v[i] = float32(q)*float(scales, gi) + float(biases, gi)
		}
		out[g] = v
	}
	return out
}
