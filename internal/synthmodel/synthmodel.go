// Package synthmodel writes Llama model folders with seeded random weights
// in the MLX / Hugging Face layout: real-scale models for benchmarks and
// memory figures without downloading anything.
//
// Quantised models get uniformly random codes with per-group scales and
// biases that give the weights a realistic spread; the logits are
// meaningless, the shapes, dtypes and file layout are those of a real
// checkpoint.
package synthmodel

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/half"
)

// Shape is a model's hyper-parameters.
type Shape struct {
	Hidden, Layers, Heads, KVHeads, HeadDim, Intermediate, Vocab int
	// RopeScaling is llama3 scaling's (factor, low, high, original max
	// positions), or zero for none.
	RopeFactor, RopeLow, RopeHigh float64
	RopeOriginal                  int
	MaxPositions                  int
	BOS                           int
	EOS                           []int
}

// Shapes are the named shapes the generator knows.
var Shapes = map[string]Shape{
	// Llama 3.2 1B, as meta-llama/Llama-3.2-1B-Instruct's config.json.
	"llama-3.2-1b": {Hidden: 2048, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, Intermediate: 8192, Vocab: 128256,
		RopeFactor: 32, RopeLow: 1, RopeHigh: 4, RopeOriginal: 8192, MaxPositions: 131072,
		BOS: 128000, EOS: []int{128001, 128008, 128009}},
	// A test model whose rows hold whole k-quant super-blocks (256),
	// for the tiny tokenizer of testdata/tiny-tokenizer.
	"tiny-256": {Hidden: 256, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 64, Intermediate: 512, Vocab: 512,
		MaxPositions: 512, BOS: 500, EOS: []int{501}},
}

// Dtypes are the weight formats the generator writes.
var Dtypes = []string{"f32", "f16", "bf16", "q4", "q8"}

// Options says what to write.
type Options struct {
	Shape Shape
	Dtype string // one of Dtypes
	Seed  uint64
	// GroupSize for q4/q8; 0 means 64, as mlx-community's models use.
	GroupSize int
}

// Write creates dir (if needed) and writes config.json,
// generation_config.json and model.safetensors into it. The tokenizer files
// are the caller's to add.
func Write(dir string, o Options) error {
	if o.GroupSize == 0 {
		o.GroupSize = 64
	}
	valid := false
	for _, d := range Dtypes {
		valid = valid || d == o.Dtype
	}
	if !valid {
		return fmt.Errorf("dtype %q: want one of %v", o.Dtype, Dtypes)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), configJSON(o)); err != nil {
		return err
	}
	genCfg := map[string]any{"bos_token_id": o.Shape.BOS, "eos_token_id": o.Shape.EOS, "do_sample": true, "temperature": 0.6, "top_p": 0.9}
	if err := writeJSON(filepath.Join(dir, "generation_config.json"), genCfg); err != nil {
		return err
	}
	g := &gen{o: o, rng: rand.New(rand.NewPCG(o.Seed, 0xd1f7))}
	tensors := g.tensors()
	format := "pt"
	if o.Dtype == "q4" || o.Dtype == "q8" {
		format = "mlx"
	}
	return safetensors.Write(filepath.Join(dir, "model.safetensors"), map[string]string{"format": format}, tensors)
}

func configJSON(o Options) map[string]any {
	s := o.Shape
	torch := map[string]string{"f32": "float32", "f16": "float16"}[o.Dtype]
	if torch == "" {
		torch = "bfloat16"
	}
	c := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": s.Hidden, "num_hidden_layers": s.Layers, "num_attention_heads": s.Heads,
		"num_key_value_heads": s.KVHeads, "head_dim": s.HeadDim, "intermediate_size": s.Intermediate,
		"vocab_size": s.Vocab, "max_position_embeddings": s.MaxPositions, "rms_norm_eps": 1e-5,
		"rope_theta": 500000.0, "tie_word_embeddings": true, "hidden_act": "silu",
		"bos_token_id": s.BOS, "eos_token_id": s.EOS, "torch_dtype": torch,
	}
	if s.RopeFactor > 0 {
		c["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": s.RopeFactor, "low_freq_factor": s.RopeLow,
			"high_freq_factor": s.RopeHigh, "original_max_position_embeddings": s.RopeOriginal}
	}
	if o.Dtype == "q4" || o.Dtype == "q8" {
		q := map[string]any{"group_size": o.GroupSize, "bits": map[string]int{"q4": 4, "q8": 8}[o.Dtype]}
		c["quantization"], c["quantization_config"] = q, q
	}
	return c
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

type gen struct {
	o   Options
	rng *rand.Rand
}

func (g *gen) tensors() []safetensors.Tensor {
	s := g.o.Shape
	q, kv := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	var out []safetensors.Tensor
	out = append(out, g.matrix("model.embed_tokens", s.Vocab, s.Hidden, 0.02)...)
	out = append(out, g.norm("model.norm", s.Hidden))
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		out = append(out, g.norm(p+"input_layernorm", s.Hidden), g.norm(p+"post_attention_layernorm", s.Hidden))
		out = append(out, g.matrix(p+"self_attn.q_proj", q, s.Hidden, 0.02)...)
		out = append(out, g.matrix(p+"self_attn.k_proj", kv, s.Hidden, 0.02)...)
		out = append(out, g.matrix(p+"self_attn.v_proj", kv, s.Hidden, 0.02)...)
		out = append(out, g.matrix(p+"self_attn.o_proj", s.Hidden, q, 0.02)...)
		out = append(out, g.matrix(p+"mlp.gate_proj", s.Intermediate, s.Hidden, 0.02)...)
		out = append(out, g.matrix(p+"mlp.up_proj", s.Intermediate, s.Hidden, 0.02)...)
		out = append(out, g.matrix(p+"mlp.down_proj", s.Hidden, s.Intermediate, 0.02)...)
	}
	return out
}

// floatDtype is the dtype of norms and of quantised models' scales.
func (g *gen) floatDtype() safetensors.DType {
	switch g.o.Dtype {
	case "f32":
		return safetensors.F32
	case "f16":
		return safetensors.F16
	}
	return safetensors.BF16
}

// encode stores float values in dtype d, little-endian.
func encode(d safetensors.DType, vals []float32) []byte {
	out := make([]byte, len(vals)*d.Size())
	for i, v := range vals {
		switch d {
		case safetensors.F32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		case safetensors.F16:
			binary.LittleEndian.PutUint16(out[2*i:], half.F32ToF16(v))
		default:
			binary.LittleEndian.PutUint16(out[2*i:], half.F32ToBF16(v))
		}
	}
	return out
}

func (g *gen) norm(prefix string, n int) safetensors.Tensor {
	v := make([]float32, n)
	for i := range v {
		v[i] = 0.9 + 0.2*g.rng.Float32()
	}
	return safetensors.Tensor{Name: prefix + ".weight", DType: g.floatDtype(), Shape: []int{n}, Data: encode(g.floatDtype(), v)}
}

// matrix writes prefix.weight (rows, cols) with standard deviation sigma,
// quantised (with .scales and .biases) for q4/q8.
func (g *gen) matrix(prefix string, rows, cols int, sigma float64) []safetensors.Tensor {
	bits := map[string]int{"q4": 4, "q8": 8}[g.o.Dtype]
	if bits == 0 {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = float32(g.rng.NormFloat64() * sigma)
		}
		return []safetensors.Tensor{{Name: prefix + ".weight", DType: g.floatDtype(), Shape: []int{rows, cols}, Data: encode(g.floatDtype(), v)}}
	}
	groups := rows * cols / g.o.GroupSize
	packed := make([]byte, rows*cols*bits/8)
	for i := 0; i+8 <= len(packed); i += 8 {
		binary.LittleEndian.PutUint64(packed[i:], g.rng.Uint64())
	}
	// Uniform codes in [0, 2^bits) have standard deviation
	// (2^bits)/sqrt(12) steps: pick the step that gives sigma, centred.
	levels := float64(int(1) << bits)
	scales, biases := make([]float32, groups), make([]float32, groups)
	for i := range scales {
		s := sigma * math.Sqrt(12) / levels * (0.8 + 0.4*g.rng.Float64())
		scales[i], biases[i] = float32(s), float32(-s*(levels-1)/2)
	}
	sd := safetensors.BF16
	gshape := []int{rows, cols / g.o.GroupSize}
	return []safetensors.Tensor{
		{Name: prefix + ".weight", DType: safetensors.U32, Shape: []int{rows, cols * bits / 32}, Data: packed},
		{Name: prefix + ".scales", DType: sd, Shape: gshape, Data: encode(sd, scales)},
		{Name: prefix + ".biases", DType: sd, Shape: gshape, Data: encode(sd, biases)},
	}
}
