// Command ggufgen converts an MLX model folder (config.json,
// tokenizer.json, model.safetensors, as `driftwood dev gen-model` writes
// it) to a GGUF file of any type Driftwood reads, so that llama.cpp can be
// timed on the same shape and the same weights as Driftwood, and
// Driftwood's GGUF loading tested on every type. bench/vs-llamacpp.sh
// runs it.
//
// Every weight is dequantised from the source (MLX affine q4/q8, or
// f16/bf16/f32) and requantised with engine/gguf's Quantize (ggml's
// reference rounding for Q4_0, Q4_1 and Q8_0, a simpler encoding for the
// k-quants); the norms are written as F32. So a q4 or q8 source comes back
// within the GGUF type's precision, not bit for bit. The k-quants need
// rows of a multiple of 256 weights.
//
//	go run ./bench/ggufgen --from DIR --out FILE.gguf [--type TYPE]
//
// TYPE is one of f32, f16, bf16, q4_0, q4_1, q8_0, q4_k, q5_k, q6_k.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

type config struct {
	ModelType    string  `json:"model_type"`
	Hidden       int     `json:"hidden_size"`
	Layers       int     `json:"num_hidden_layers"`
	Heads        int     `json:"num_attention_heads"`
	KVHeads      int     `json:"num_key_value_heads"`
	HeadDim      int     `json:"head_dim"`
	Intermediate int     `json:"intermediate_size"`
	Vocab        int     `json:"vocab_size"`
	MaxPositions int     `json:"max_position_embeddings"`
	RopeTheta    float64 `json:"rope_theta"`
	Eps          float64 `json:"rms_norm_eps"`
	BOS          int     `json:"bos_token_id"`
	RopeScaling  *struct {
		Type           string  `json:"rope_type"`
		Factor         float64 `json:"factor"`
		LowFreqFactor  float64 `json:"low_freq_factor"`
		HighFreqFactor float64 `json:"high_freq_factor"`
		Original       int     `json:"original_max_position_embeddings"`
	} `json:"rope_scaling"`
	Quant *struct {
		GroupSize int `json:"group_size"`
		Bits      int `json:"bits"`
	} `json:"quantization"`
}

type tokenizer struct {
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        struct {
		Vocab  map[string]int `json:"vocab"`
		Merges []string       `json:"merges"`
	} `json:"model"`
	Added []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
	} `json:"added_tokens"`
}

// tensor is one weight: its GGUF name, ggml dims (innermost first), type,
// the MLX tensor name prefix it comes from, and for the query and key
// projections their number of heads (see srcRow).
type tensor struct {
	name  string
	dims  []int
	typ   gguf.Type
	src   string
	heads int
}

// srcRow is the source row that row r of t comes from. Hugging Face's
// Llama checkpoints rotate the two halves of each head, llama.cpp's
// "llama" architecture adjacent pairs; as convert_hf_to_gguf.py does, the
// rows of each query and key head are interleaved (row 2i+j of a head from
// row j·headDim/2+i) so that both engines compute the same function.
func (t tensor) srcRow(r int) int {
	if t.heads == 0 {
		return r
	}
	hd := t.dims[1] / t.heads
	h, i, j := r/hd, r%hd/2, r%2
	return h*hd + j*hd/2 + i
}

// fileType is a --type: the weights' ggml type and the llama_ftype that
// general.file_type names for it (a k-quant file of one type is llama.cpp's
// "_S", small, variant).
type fileType struct {
	typ   gguf.Type
	ftype uint32
}

// types are the --type names.
var types = map[string]fileType{
	"f32":  {gguf.F32, 0},
	"f16":  {gguf.F16, 1},
	"bf16": {gguf.BF16, 32},
	"q4_0": {gguf.Q4_0, 2},
	"q4_1": {gguf.Q4_1, 3},
	"q8_0": {gguf.Q8_0, 7},
	"q4_k": {gguf.Q4_K, 14},
	"q5_k": {gguf.Q5_K, 16},
	"q6_k": {gguf.Q6_K, 18},
}

// typeNames lists the --type names for messages.
func typeNames() string {
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func main() {
	from := flag.String("from", "", "MLX model folder to convert")
	out := flag.String("out", "", "GGUF file to write")
	typ := flag.String("type", "", "weights' type: "+typeNames()+" (default: q4_0 for a q4 source, q8_0 for q8, else f16); a comma-separated list gives the weight matrices those types in turn, in file order (a file of mixed types, as llama.cpp's _M ones are)")
	flag.Parse()
	if *from == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: ggufgen --from DIR --out FILE.gguf [--type TYPE]")
		os.Exit(2)
	}
	if err := run(*from, *out, *typ); err != nil {
		fmt.Fprintln(os.Stderr, "ggufgen:", err)
		os.Exit(1)
	}
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func run(from, out, typName string) error {
	var c config
	if err := readJSON(from+"/config.json", &c); err != nil {
		return err
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads // transformers' default
	}
	if typName == "" {
		typName = "f16"
		if c.Quant != nil && c.Quant.Bits == 4 {
			typName = "q4_0"
		} else if c.Quant != nil && c.Quant.Bits == 8 {
			typName = "q8_0"
		}
	}
	var cycle []gguf.Type
	var ft fileType
	for i, name := range strings.Split(typName, ",") {
		t, ok := types[name]
		if !ok {
			return fmt.Errorf("--type %q: want one of %s", name, typeNames())
		}
		if i == 0 {
			ft = t
		}
		cycle = append(cycle, t.typ)
	}
	next := 0
	wt := func() gguf.Type { // each weight matrix the next type in turn
		next++
		return cycle[(next-1)%len(cycle)]
	}
	st, err := safetensors.Open(filepath.Join(from, "model.safetensors"))
	if err != nil {
		return err
	}
	defer st.Close()
	var tok tokenizer
	if err := readJSON(from+"/tokenizer.json", &tok); err != nil {
		return err
	}
	tokens := make([]string, c.Vocab)
	tokenTypes := make([]int32, c.Vocab)
	for s, id := range tok.Model.Vocab {
		tokens[id], tokenTypes[id] = s, 1 // normal
	}
	for _, a := range tok.Added {
		tokens[a.ID], tokenTypes[a.ID] = a.Content, 3 // control
	}
	for id, s := range tokens {
		if s == "" {
			tokens[id], tokenTypes[id] = fmt.Sprintf("<|reserved_%d|>", id), 3
		}
	}

	arch := c.arch()
	h, kv, d := c.Hidden, c.KVHeads*c.HeadDim, c.Intermediate
	q := c.Heads * c.HeadDim
	// llama.cpp reorders llama's query and key rows for its RoPE on
	// adjacent pairs (srcRow); Qwen's keep Hugging Face's order.
	qHeads, kvHeads := c.Heads, c.KVHeads
	if arch != "llama" {
		qHeads, kvHeads = 0, 0
	}
	ts := []tensor{
		{"token_embd.weight", []int{h, c.Vocab}, wt(), "model.embed_tokens", 0},
		{"output_norm.weight", []int{h}, gguf.F32, "model.norm", 0},
	}
	if _, ok := st.Tensors["lm_head.weight"]; ok {
		ts = append(ts, tensor{"output.weight", []int{h, c.Vocab}, wt(), "lm_head", 0})
	}
	for l := 0; l < c.Layers; l++ {
		p, s := fmt.Sprintf("blk.%d.", l), fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			tensor{p + "attn_norm.weight", []int{h}, gguf.F32, s + "input_layernorm", 0},
			tensor{p + "attn_q.weight", []int{h, q}, wt(), s + "self_attn.q_proj", qHeads},
			tensor{p + "attn_k.weight", []int{h, kv}, wt(), s + "self_attn.k_proj", kvHeads},
			tensor{p + "attn_v.weight", []int{h, kv}, wt(), s + "self_attn.v_proj", 0},
			tensor{p + "attn_output.weight", []int{q, h}, wt(), s + "self_attn.o_proj", 0},
			tensor{p + "ffn_norm.weight", []int{h}, gguf.F32, s + "post_attention_layernorm", 0},
			tensor{p + "ffn_gate.weight", []int{h, d}, wt(), s + "mlp.gate_proj", 0},
			tensor{p + "ffn_up.weight", []int{h, d}, wt(), s + "mlp.up_proj", 0},
			tensor{p + "ffn_down.weight", []int{d, h}, wt(), s + "mlp.down_proj", 0},
		)
		switch arch {
		case "qwen2": // biased q, k and v projections
			ts = append(ts,
				tensor{p + "attn_q.bias", []int{q}, gguf.F32, s + "self_attn.q_proj.bias", 0},
				tensor{p + "attn_k.bias", []int{kv}, gguf.F32, s + "self_attn.k_proj.bias", 0},
				tensor{p + "attn_v.bias", []int{kv}, gguf.F32, s + "self_attn.v_proj.bias", 0})
		case "qwen3": // each query and key head RMS-normed
			ts = append(ts,
				tensor{p + "attn_q_norm.weight", []int{c.HeadDim}, gguf.F32, s + "self_attn.q_norm", 0},
				tensor{p + "attn_k_norm.weight", []int{c.HeadDim}, gguf.F32, s + "self_attn.k_norm", 0})
		}
	}
	wts := make([]gguf.WriteTensor, len(ts))
	for i, t := range ts {
		if bs := t.typ.BlockSize(); t.dims[0]%bs != 0 {
			return fmt.Errorf("%s: rows of %d weights, not a multiple of %s's block of %d", t.name, t.dims[0], t.typ, bs)
		}
		src, err := newSource(st, t.src, c, t.dims)
		if err != nil {
			return err
		}
		wts[i] = gguf.WriteTensor{Name: t.name, Type: t.typ, Dims: t.dims, Source: t.writer(src)}
	}

	meta := []gguf.KV{
		{Key: "general.architecture", Value: arch},
		{Key: "general.name", Value: "driftwood random " + filepath.Base(from)},
		{Key: "general.file_type", Value: ft.ftype},
		{Key: arch + ".context_length", Value: uint32(c.MaxPositions)},
		{Key: arch + ".embedding_length", Value: uint32(c.Hidden)},
		{Key: arch + ".block_count", Value: uint32(c.Layers)},
		{Key: arch + ".feed_forward_length", Value: uint32(c.Intermediate)},
		{Key: arch + ".attention.head_count", Value: uint32(c.Heads)},
		{Key: arch + ".attention.head_count_kv", Value: uint32(c.KVHeads)},
		{Key: arch + ".attention.key_length", Value: uint32(c.HeadDim)},
		{Key: arch + ".attention.value_length", Value: uint32(c.HeadDim)},
		{Key: arch + ".rope.dimension_count", Value: uint32(c.HeadDim)},
		{Key: arch + ".rope.freq_base", Value: float32(c.RopeTheta)},
		{Key: arch + ".attention.layer_norm_rms_epsilon", Value: float32(c.Eps)},
		{Key: arch + ".vocab_size", Value: uint32(c.Vocab)},
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		{Key: "tokenizer.ggml.pre", Value: tok.pre()},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.token_type", Value: tokenTypes},
		{Key: "tokenizer.ggml.merges", Value: tok.Model.Merges},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(c.BOS)},
	}
	var tc struct {
		ChatTemplate string `json:"chat_template"`
		EOS          string `json:"eos_token"`
	}
	if err := readJSON(from+"/tokenizer_config.json", &tc); err == nil && tc.ChatTemplate != "" {
		meta = append(meta, gguf.KV{Key: "tokenizer.chat_template", Value: tc.ChatTemplate})
		if id, ok := tok.id(tc.EOS); ok {
			meta = append(meta, gguf.KV{Key: "tokenizer.ggml.eos_token_id", Value: uint32(id)})
		}
	}
	if factors := c.ropeFactors(); factors != nil {
		wts = append(wts, gguf.WriteTensor{Name: "rope_freqs.weight", Type: gguf.F32, Dims: []int{len(factors)}, Data: f32Bytes(factors)})
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := gguf.Write(f, meta, wts); err != nil {
		f.Close()
		os.Remove(out)
		return err
	}
	return f.Close()
}

// writer writes t's rows from src, requantised, in llama.cpp's order.
func (t tensor) writer(src *source) func(io.Writer) error {
	return func(w io.Writer) error {
		row := make([]float32, t.dims[0])
		var enc []byte
		for r := 0; r < src.rows; r++ {
			src.row(t.srcRow(r), row)
			var err error
			if enc, err = gguf.Quantize(t.typ, enc[:0], row); err != nil {
				return fmt.Errorf("%s row %d: %w", t.name, r, err)
			}
			if _, err := w.Write(enc); err != nil {
				return err
			}
		}
		return nil
	}
}

// id finds a token by its text, among the added tokens and the vocabulary.
func (t *tokenizer) id(text string) (int, bool) {
	for _, a := range t.Added {
		if a.Content == text {
			return a.ID, true
		}
	}
	id, ok := t.Model.Vocab[text]
	return id, ok
}

// ropeFactors are Llama 3's rope scaling as llama.cpp's converter writes
// it (rope_freqs): for each pair of a head's dimensions, its frequency
// over the scaled one; nil without llama3 scaling.
func (c config) ropeFactors() []float32 {
	s := c.RopeScaling
	if s == nil || s.Type != "llama3" {
		return nil
	}
	L := float64(s.Original)
	lowWL, highWL := L/s.LowFreqFactor, L/s.HighFreqFactor
	out := make([]float32, c.HeadDim/2)
	for i := range out {
		f := 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim))
		wl := 2 * math.Pi / f
		switch {
		case wl < highWL:
			out[i] = 1
		case wl > lowWL:
			out[i] = float32(s.Factor)
		default:
			sm := (L/wl - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			out[i] = float32(1 / ((1-sm)/s.Factor + sm))
		}
	}
	return out
}

// f32Bytes is v as little-endian bytes.
func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// arch is the GGUF architecture of the source: llama (Llama, Mistral,
// SmolLM), qwen2 or qwen3, from config.json's model_type.
func (c config) arch() string {
	switch c.ModelType {
	case "qwen2", "qwen3":
		return c.ModelType
	}
	return "llama"
}

// pre is llama.cpp's name of the tokenizer's pre-tokenizer: qwen2 for
// Qwen's split (one digit a piece), else llama-bpe (Llama 3's).
func (t *tokenizer) pre() string {
	if strings.Contains(string(t.PreTokenizer), `\\p{N}|`) {
		return "qwen2"
	}
	return "llama-bpe"
}
