package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/synthmodel"
)

// small is a Llama-shaped model small enough to convert in a test.
var small = synthmodel.Shape{Hidden: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, Intermediate: 256, Vocab: 300,
	MaxPositions: 256, BOS: 256, EOS: []int{257}}

// TestConvert writes q4, q8 and f16 models, converts each to the matching
// GGUF type, reads the GGUF back and checks every tensor dequantises to
// the source's weights within the format's precision: half a step (plus
// the f16 rounding of the block's scale) for Q4_0 and Q8_0, a whole step
// for the one Q4_0 code that is clamped, half an f16 ulp for F16, exactly
// for the F32 norms; the query and key rows in llama.cpp's order.
func TestConvert(t *testing.T) {
	for _, c := range []struct {
		dtype, typ string
		group      int
		ggml       uint32
	}{
		{"q4", "", 64, ggmlQ4_0},
		{"q4", "", 32, ggmlQ4_0},
		{"q8", "", 64, ggmlQ8_0},
		{"f16", "", 0, ggmlF16},
		{"bf16", "q8_0", 0, ggmlQ8_0},
		{"q8", "f16", 64, ggmlF16},
	} {
		t.Run(fmt.Sprintf("%s-g%d-to-%s", c.dtype, c.group, c.typ), func(t *testing.T) {
			dir := t.TempDir()
			if err := synthmodel.Write(dir, synthmodel.Options{Shape: small, Dtype: c.dtype, Seed: 3, GroupSize: c.group}); err != nil {
				t.Fatal(err)
			}
			writeTokenizer(t, dir)
			out := filepath.Join(dir, "model.gguf")
			if err := run(dir, out, c.typ); err != nil {
				t.Fatal(err)
			}
			want := reference(t, dir)
			for l := range small.Layers {
				interleave(want[fmt.Sprintf("blk.%d.attn_q.weight", l)], small.Heads, small.HeadDim, small.Hidden)
				interleave(want[fmt.Sprintf("blk.%d.attn_k.weight", l)], small.KVHeads, small.HeadDim, small.Hidden)
			}
			got := readGGUF(t, out)
			if len(got) != len(want) {
				t.Fatalf("%d tensors, want %d", len(got), len(want))
			}
			for name, w := range want {
				g, ok := got[name]
				if !ok {
					t.Fatalf("no tensor %s", name)
				}
				wantType := c.ggml
				if len(g.dims) == 1 {
					wantType = ggmlF32
				}
				if g.typ != wantType {
					t.Fatalf("%s: type %d, want %d", name, g.typ, wantType)
				}
				if len(g.vals) != len(w) {
					t.Fatalf("%s: %d values, want %d", name, len(g.vals), len(w))
				}
				for i := range w {
					if err := math.Abs(float64(g.vals[i] - w[i])); err > float64(g.tol[i]) {
						t.Fatalf("%s[%d] = %g, want %g ± %g", name, i, g.vals[i], w[i], g.tol[i])
					}
				}
			}
		})
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

type ggufTensor struct {
	dims      []uint64
	typ       uint32
	vals, tol []float32
}

// readGGUF parses a GGUF v3 file as ggufgen writes it and dequantises
// its tensors, with each value's tolerance.
func readGGUF(t *testing.T, path string) map[string]*ggufTensor {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := 0
	u32 := func() uint32 { v := binary.LittleEndian.Uint32(b[p:]); p += 4; return v }
	u64 := func() uint64 { v := binary.LittleEndian.Uint64(b[p:]); p += 8; return v }
	str := func() string { n := int(u64()); s := string(b[p : p+n]); p += n; return s }
	if string(b[:4]) != "GGUF" {
		t.Fatal("no GGUF magic")
	}
	p = 4
	if v := u32(); v != 3 {
		t.Fatalf("version %d", v)
	}
	nt, nkv := u64(), u64()
	var skip func(typ uint32)
	skip = func(typ uint32) {
		switch typ {
		case typeUint32, typeInt32, typeFloat32:
			p += 4
		case typeString:
			str()
		case typeArray:
			et, n := u32(), u64()
			for range n {
				skip(et)
			}
		default:
			t.Fatalf("value type %d", typ)
		}
	}
	for range nkv {
		str()
		skip(u32())
	}
	type info struct {
		name string
		t    *ggufTensor
		off  uint64
	}
	var infos []info
	for range nt {
		name := str()
		g := &ggufTensor{dims: make([]uint64, u32())}
		for i := range g.dims {
			g.dims[i] = u64()
		}
		g.typ = u32()
		infos = append(infos, info{name, g, u64()})
	}
	base := (p + alignment - 1) / alignment * alignment
	out := map[string]*ggufTensor{}
	for _, in := range infos {
		g := in.t
		n := uint64(1)
		for _, d := range g.dims {
			n *= d
		}
		g.vals, g.tol = make([]float32, n), make([]float32, n)
		data := b[base+int(in.off):]
		for i := range n {
			switch g.typ {
			case ggmlF32:
				g.vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			case ggmlF16:
				g.vals[i] = f16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
				// Half an ulp of f16: 2^-11 relative, or of the smallest subnormal.
				g.tol[i] = max(abs(g.vals[i])/(1<<11), 1.0/(1<<25))
			case ggmlQ8_0:
				blk := data[i/block*34:]
				d := f16ToF32(binary.LittleEndian.Uint16(blk))
				q := int8(blk[2+i%block])
				g.vals[i] = float32(q) * d
				g.tol[i] = abs(d)/2 + abs(float32(q)*d)/(1<<10)
			case ggmlQ4_0:
				blk := data[i/block*18:]
				d := f16ToF32(binary.LittleEndian.Uint16(blk))
				j := i % block
				q := blk[2+j%16] & 15
				if j >= 16 {
					q = blk[2+j%16] >> 4
				}
				g.vals[i] = float32(int(q)-8) * d
				step := abs(d) / 2
				if q == 15 {
					step = abs(d)
				}
				g.tol[i] = step + abs(g.vals[i])/(1<<10)
			default:
				t.Fatalf("%s: type %d", in.name, g.typ)
			}
		}
		out[in.name] = g
	}
	return out
}
