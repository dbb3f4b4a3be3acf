// Command ggufgen converts an MLX model folder (config.json,
// tokenizer.json, model.safetensors, as `driftwood dev gen-model` writes
// it) to a GGUF file of llama.cpp's Q4_0, Q8_0 or F16, so that llama.cpp
// can be timed on the same shape and the same weights as Driftwood.
// bench/vs-llamacpp.sh runs it.
//
// Every weight is dequantised from the source (MLX affine q4/q8, or
// f16/bf16/f32) and requantised with ggml's reference rounding; the norms
// are written as F32. Q4_0 and Q8_0 are symmetric with blocks of 32, so a
// q4 or q8 source comes back within half a Q4_0 or Q8_0 step, not bit for
// bit.
//
//	go run ./bench/ggufgen --from DIR --out FILE.gguf [--type q4_0|q8_0|f16]
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// GGUF value and tensor types (ggml.h, gguf.h).
const (
	typeUint32  = 4
	typeInt32   = 5
	typeFloat32 = 6
	typeString  = 8
	typeArray   = 9

	ggmlF32  = 0
	ggmlF16  = 1
	ggmlQ4_0 = 2
	ggmlQ8_0 = 8

	// llama_ftype values for general.file_type.
	ftypeF16  = 1
	ftypeQ4_0 = 2
	ftypeQ8_0 = 7

	block = 32 // weights per Q4_0 or Q8_0 block

	alignment = 32
)

type config struct {
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
	Quant        *struct {
		GroupSize int `json:"group_size"`
		Bits      int `json:"bits"`
	} `json:"quantization"`
}

type tokenizer struct {
	Model struct {
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
	dims  []uint64
	typ   uint32
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
	hd := int(t.dims[1]) / t.heads
	h, i, j := r/hd, r%hd/2, r%2
	return h*hd + j*hd/2 + i
}

// rowSize is the bytes of one row of n weights of ggml type typ.
func rowSize(typ uint32, n uint64) uint64 {
	switch typ {
	case ggmlQ4_0:
		return n / block * 18
	case ggmlQ8_0:
		return n / block * 34
	case ggmlF16:
		return n * 2
	}
	return n * 4
}

func (t tensor) size() uint64 {
	n := uint64(1)
	for _, d := range t.dims[1:] {
		n *= d
	}
	return n * rowSize(t.typ, t.dims[0])
}

// types are the --type names: ggml tensor type and llama file type.
var types = map[string][2]uint32{
	"q4_0": {ggmlQ4_0, ftypeQ4_0},
	"q8_0": {ggmlQ8_0, ftypeQ8_0},
	"f16":  {ggmlF16, ftypeF16},
}

func main() {
	from := flag.String("from", "", "MLX model folder to convert")
	out := flag.String("out", "", "GGUF file to write")
	typ := flag.String("type", "", "weights' type: q4_0, q8_0 or f16 (default: q4_0 for a q4 source, q8_0 for q8, else f16)")
	flag.Parse()
	if *from == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: ggufgen --from DIR --out FILE.gguf [--type q4_0|q8_0|f16]")
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
	if typName == "" {
		typName = "f16"
		if c.Quant != nil && c.Quant.Bits == 4 {
			typName = "q4_0"
		} else if c.Quant != nil && c.Quant.Bits == 8 {
			typName = "q8_0"
		}
	}
	tt, ok := types[typName]
	if !ok {
		return fmt.Errorf("--type %q: want q4_0, q8_0 or f16", typName)
	}
	wt, ftype := tt[0], tt[1]
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
	types := make([]int32, c.Vocab)
	for s, id := range tok.Model.Vocab {
		tokens[id], types[id] = s, 1 // normal
	}
	for _, a := range tok.Added {
		tokens[a.ID], types[a.ID] = a.Content, 3 // control
	}
	for id, s := range tokens {
		if s == "" {
			tokens[id], types[id] = fmt.Sprintf("<|reserved_%d|>", id), 3
		}
	}

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := &writer{Writer: bufio.NewWriterSize(f, 1<<20)}
	h, kv, d := uint64(c.Hidden), uint64(c.KVHeads*c.HeadDim), uint64(c.Intermediate)
	q := uint64(c.Heads * c.HeadDim)
	ts := []tensor{
		{"token_embd.weight", []uint64{h, uint64(c.Vocab)}, wt, "model.embed_tokens", 0},
		{"output_norm.weight", []uint64{h}, ggmlF32, "model.norm", 0},
	}
	if _, ok := st.Tensors["lm_head.weight"]; ok {
		ts = append(ts, tensor{"output.weight", []uint64{h, uint64(c.Vocab)}, wt, "lm_head", 0})
	}
	for l := 0; l < c.Layers; l++ {
		p, s := fmt.Sprintf("blk.%d.", l), fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			tensor{p + "attn_norm.weight", []uint64{h}, ggmlF32, s + "input_layernorm", 0},
			tensor{p + "attn_q.weight", []uint64{h, q}, wt, s + "self_attn.q_proj", c.Heads},
			tensor{p + "attn_k.weight", []uint64{h, kv}, wt, s + "self_attn.k_proj", c.KVHeads},
			tensor{p + "attn_v.weight", []uint64{h, kv}, wt, s + "self_attn.v_proj", 0},
			tensor{p + "attn_output.weight", []uint64{q, h}, wt, s + "self_attn.o_proj", 0},
			tensor{p + "ffn_norm.weight", []uint64{h}, ggmlF32, s + "post_attention_layernorm", 0},
			tensor{p + "ffn_gate.weight", []uint64{h, d}, wt, s + "mlp.gate_proj", 0},
			tensor{p + "ffn_up.weight", []uint64{h, d}, wt, s + "mlp.up_proj", 0},
			tensor{p + "ffn_down.weight", []uint64{d, h}, wt, s + "mlp.down_proj", 0},
		)
	}
	srcs := make([]*source, len(ts))
	for i, t := range ts {
		if t.typ != ggmlF32 && t.dims[0]%block != 0 {
			return fmt.Errorf("%s: rows of %d weights, not a multiple of %d", t.name, t.dims[0], block)
		}
		if srcs[i], err = newSource(st, t.src, c, t.dims); err != nil {
			return err
		}
	}

	var buf bytes.Buffer
	m := &kvs{w: writer{Writer: bufio.NewWriter(&buf)}}
	m.string("general.architecture", "llama")
	m.string("general.name", "driftwood random "+filepath.Base(from))
	m.u32("general.file_type", ftype)
	m.u32("llama.context_length", uint32(c.MaxPositions))
	m.u32("llama.embedding_length", uint32(c.Hidden))
	m.u32("llama.block_count", uint32(c.Layers))
	m.u32("llama.feed_forward_length", uint32(c.Intermediate))
	m.u32("llama.attention.head_count", uint32(c.Heads))
	m.u32("llama.attention.head_count_kv", uint32(c.KVHeads))
	m.u32("llama.rope.dimension_count", uint32(c.HeadDim))
	m.f32("llama.rope.freq_base", float32(c.RopeTheta))
	m.f32("llama.attention.layer_norm_rms_epsilon", float32(c.Eps))
	m.u32("llama.vocab_size", uint32(c.Vocab))
	m.string("tokenizer.ggml.model", "gpt2")
	m.string("tokenizer.ggml.pre", "llama-bpe")
	m.strings("tokenizer.ggml.tokens", tokens)
	m.int32s("tokenizer.ggml.token_type", types)
	m.strings("tokenizer.ggml.merges", tok.Model.Merges)
	m.u32("tokenizer.ggml.bos_token_id", uint32(c.BOS))
	if err := m.w.Flush(); err != nil {
		return err
	}

	w.raw([]byte("GGUF"))
	w.u32(3)
	w.u64(uint64(len(ts)))
	w.u64(m.n)
	w.raw(buf.Bytes())
	var off uint64
	for _, t := range ts {
		w.str(t.name)
		w.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			w.u64(d)
		}
		w.u32(t.typ)
		w.u64(off)
		off += (t.size() + alignment - 1) / alignment * alignment
	}
	w.pad()
	for i, t := range ts {
		row := make([]float32, t.dims[0])
		out := make([]byte, rowSize(t.typ, t.dims[0]))
		for r := 0; r < srcs[i].rows; r++ {
			srcs[i].row(t.srcRow(r), row)
			encodeRow(t.typ, row, out)
			w.raw(out)
		}
		w.pad()
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// source reads one MLX tensor's rows as float32: plain (f32, f16, bf16)
// or MLX's affine quantisation, w = code·scale + bias per group, the codes
// packed little-endian into uint32s, the lowest bits first.
type source struct {
	name                    string
	w, scales, biases       *safetensors.Tensor
	rows, cols, bits, group int
}

func newSource(st *safetensors.File, prefix string, c config, dims []uint64) (*source, error) {
	s := &source{name: prefix + ".weight", cols: int(dims[0]), rows: 1}
	for _, d := range dims[1:] {
		s.rows *= int(d)
	}
	var ok bool
	if s.w, ok = st.Tensors[s.name]; !ok {
		return nil, fmt.Errorf("%s: no tensor %s", st.Path, s.name)
	}
	if s.w.DType != safetensors.U32 {
		if s.w.Elements() != s.rows*s.cols {
			return nil, fmt.Errorf("%s: shape %v, want %d×%d", s.name, s.w.Shape, s.rows, s.cols)
		}
		switch s.w.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16:
			return s, nil
		}
		return nil, fmt.Errorf("%s: dtype %s", s.name, s.w.DType)
	}
	if c.Quant == nil || (c.Quant.Bits != 4 && c.Quant.Bits != 8) || c.Quant.GroupSize <= 0 || s.cols%c.Quant.GroupSize != 0 {
		return nil, fmt.Errorf("%s: packed weights without a 4- or 8-bit quantization in config.json that fits", s.name)
	}
	s.bits, s.group = c.Quant.Bits, c.Quant.GroupSize
	s.scales, s.biases = st.Tensors[prefix+".scales"], st.Tensors[prefix+".biases"]
	if s.scales == nil || s.biases == nil {
		return nil, fmt.Errorf("%s: no .scales or .biases", s.name)
	}
	groups := s.rows * s.cols / s.group
	if len(s.w.Data) != s.rows*s.cols*s.bits/8 || s.scales.Elements() != groups || s.biases.Elements() != groups {
		return nil, fmt.Errorf("%s: shapes %v, %v, %v do not fit %d×%d at %d bits, groups of %d",
			s.name, s.w.Shape, s.scales.Shape, s.biases.Shape, s.rows, s.cols, s.bits, s.group)
	}
	for _, t := range []*safetensors.Tensor{s.scales, s.biases} {
		switch t.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16:
		default:
			return nil, fmt.Errorf("%s: dtype %s", t.Name, t.DType)
		}
	}
	return s, nil
}

// float reads element i of a float tensor.
func float(t *safetensors.Tensor, i int) float32 {
	switch t.DType {
	case safetensors.F32:
		return math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	case safetensors.F16:
		return f16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
	}
	return math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.Data[2*i:])) << 16)
}

// row puts row r's weights into dst (len cols).
func (s *source) row(r int, dst []float32) {
	base := r * s.cols
	if s.bits == 0 {
		for j := range dst {
			dst[j] = float(s.w, base+j)
		}
		return
	}
	mask := uint32(1)<<s.bits - 1
	per := 32 / s.bits
	for j := range dst {
		i := base + j
		word := binary.LittleEndian.Uint32(s.w.Data[4*(i/per):])
		code := word >> (uint(i%per) * uint(s.bits)) & mask
		g := i / s.group
		dst[j] = float32(code)*float(s.scales, g) + float(s.biases, g)
	}
}

// encodeRow writes a row of weights as ggml type typ, with ggml's
// reference quantisers (quantize_row_q4_0_ref, quantize_row_q8_0_ref).
func encodeRow(typ uint32, x []float32, out []byte) {
	switch typ {
	case ggmlF32:
		for j, v := range x {
			binary.LittleEndian.PutUint32(out[4*j:], math.Float32bits(v))
		}
	case ggmlF16:
		for j, v := range x {
			binary.LittleEndian.PutUint16(out[2*j:], cpu.F32ToF16(v))
		}
	case ggmlQ8_0:
		for b := 0; b < len(x)/block; b++ {
			xb, ob := x[b*block:(b+1)*block], out[b*34:(b+1)*34]
			var amax float32
			for _, v := range xb {
				amax = max(amax, abs(v))
			}
			d := amax / 127
			var id float32
			if d != 0 {
				id = 1 / d
			}
			binary.LittleEndian.PutUint16(ob, cpu.F32ToF16(d))
			for j, v := range xb {
				ob[2+j] = byte(int8(roundf(v * id)))
			}
		}
	case ggmlQ4_0:
		for b := 0; b < len(x)/block; b++ {
			xb, ob := x[b*block:(b+1)*block], out[b*18:(b+1)*18]
			// The value of largest magnitude, with its sign, maps to -8.
			var amax, vmax float32
			for _, v := range xb {
				if abs(v) > amax {
					amax, vmax = abs(v), v
				}
			}
			d := vmax / -8
			var id float32
			if d != 0 {
				id = 1 / d
			}
			binary.LittleEndian.PutUint16(ob, cpu.F32ToF16(d))
			for j := 0; j < block/2; j++ {
				q0 := min(15, int8(xb[j]*id+8.5))
				q1 := min(15, int8(xb[j+block/2]*id+8.5))
				ob[2+j] = byte(q0) | byte(q1)<<4
			}
		}
	}
}

func abs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// roundf rounds half away from zero, as C's roundf.
func roundf(v float32) float32 { return float32(math.Round(float64(v))) }

// f16ToF32 widens an IEEE half exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	}
	v := float32(frac) / (1 << 24) // subnormal or zero
	if sign != 0 {
		return -v
	}
	return v
}

// writer writes GGUF's little-endian fields and counts the bytes; the
// first error sticks in the bufio.Writer and is returned by Flush.
type writer struct {
	*bufio.Writer
	n uint64
}

func (w *writer) raw(b []byte) {
	w.Write(b)
	w.n += uint64(len(b))
}

func (w *writer) u32(v uint32) { w.raw(binary.LittleEndian.AppendUint32(nil, v)) }

func (w *writer) u64(v uint64) { w.raw(binary.LittleEndian.AppendUint64(nil, v)) }

func (w *writer) str(s string) {
	w.u64(uint64(len(s)))
	w.raw([]byte(s))
}

// pad writes zeros up to the next multiple of the alignment: after the
// header and after each tensor, so that every tensor starts aligned.
func (w *writer) pad() {
	for w.n%alignment != 0 {
		w.raw([]byte{0})
	}
}

// kvs collects the metadata key-value pairs, which the header counts
// before listing them.
type kvs struct {
	w writer
	n uint64
}

func (m *kvs) key(k string, typ uint32) {
	m.n++
	m.w.str(k)
	m.w.u32(typ)
}

func (m *kvs) string(k, v string) {
	m.key(k, typeString)
	m.w.str(v)
}

func (m *kvs) u32(k string, v uint32) {
	m.key(k, typeUint32)
	m.w.u32(v)
}

func (m *kvs) f32(k string, v float32) {
	m.key(k, typeFloat32)
	m.w.u32(math.Float32bits(v))
}

func (m *kvs) strings(k string, vs []string) {
	m.key(k, typeArray)
	m.w.u32(typeString)
	m.w.u64(uint64(len(vs)))
	for _, s := range vs {
		m.w.str(s)
	}
}

func (m *kvs) int32s(k string, vs []int32) {
	m.key(k, typeArray)
	m.w.u32(typeInt32)
	m.w.u64(uint64(len(vs)))
	for _, v := range vs {
		m.w.u32(uint32(v))
	}
}
