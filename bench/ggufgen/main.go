// Command ggufgen writes a GGUF Q4_0 model with random weights in the shape
// of an MLX model folder (its config.json) and with its Llama 3 tokenizer
// (tokenizer.json), so that llama.cpp can be timed on the same shape as
// Driftwood. bench/vs-llamacpp.sh runs it.
//
//	go run ./bench/ggufgen --from DIR --out FILE.gguf
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/driftwoodlabs/driftwood/engine/cpu"
)

// GGUF value and tensor types (ggml.h, gguf.h).
const (
	typeUint32  = 4
	typeInt32   = 5
	typeFloat32 = 6
	typeString  = 8
	typeArray   = 9

	ggmlF32  = 0
	ggmlQ4_0 = 2

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

// tensor is one weight: its name, ggml dims (innermost first) and type.
type tensor struct {
	name string
	dims []uint64
	typ  uint32
}

func (t tensor) size() uint64 {
	n := uint64(1)
	for _, d := range t.dims {
		n *= d
	}
	if t.typ == ggmlQ4_0 {
		return n / 32 * 18
	}
	return n * 4
}

func main() {
	from := flag.String("from", "", "MLX model folder whose config.json and tokenizer.json to follow")
	out := flag.String("out", "", "GGUF file to write")
	flag.Parse()
	if *from == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: ggufgen --from DIR --out FILE.gguf")
		os.Exit(2)
	}
	if err := run(*from, *out); err != nil {
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

func run(from, out string) error {
	var c config
	if err := readJSON(from+"/config.json", &c); err != nil {
		return err
	}
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
	ts := []tensor{{"token_embd.weight", []uint64{h, uint64(c.Vocab)}, ggmlQ4_0}, {"output_norm.weight", []uint64{h}, ggmlF32}}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			tensor{p + "attn_norm.weight", []uint64{h}, ggmlF32},
			tensor{p + "attn_q.weight", []uint64{h, q}, ggmlQ4_0},
			tensor{p + "attn_k.weight", []uint64{h, kv}, ggmlQ4_0},
			tensor{p + "attn_v.weight", []uint64{h, kv}, ggmlQ4_0},
			tensor{p + "attn_output.weight", []uint64{q, h}, ggmlQ4_0},
			tensor{p + "ffn_norm.weight", []uint64{h}, ggmlF32},
			tensor{p + "ffn_gate.weight", []uint64{h, d}, ggmlQ4_0},
			tensor{p + "ffn_up.weight", []uint64{h, d}, ggmlQ4_0},
			tensor{p + "ffn_down.weight", []uint64{d, h}, ggmlQ4_0},
		)
	}

	var buf bytes.Buffer
	m := &kvs{w: writer{Writer: bufio.NewWriter(&buf)}}
	m.string("general.architecture", "llama")
	m.string("general.name", "driftwood random "+filepath.Base(from))
	m.u32("general.file_type", 2) // MOSTLY_Q4_0
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
	rng := rand.New(rand.NewPCG(7, 7))
	for _, t := range ts {
		n := t.size()
		if t.typ == ggmlF32 {
			for i := uint64(0); i < n/4; i++ {
				w.u32(math.Float32bits(1))
			}
		} else {
			randomQ4_0(w, rng, n/18, t.dims[0])
		}
		w.pad()
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// randomQ4_0 writes blocks of 32 weights: an f16 scale, then 16 bytes of
// codes (weight j in the low nibble of byte j, weight 16+j in the high
// one), w = (q-8)·scale. The scale keeps the weights' spread near
// 1/sqrt(fan-in), as in a trained model.
func randomQ4_0(w *writer, rng *rand.Rand, blocks, fanIn uint64) {
	scale := cpu.F32ToF16(float32(1 / math.Sqrt(float64(fanIn)) / 4.6))
	var b [18]byte
	binary.LittleEndian.PutUint16(b[:], scale)
	for range blocks {
		binary.LittleEndian.PutUint64(b[2:], rng.Uint64())
		binary.LittleEndian.PutUint64(b[10:], rng.Uint64())
		w.raw(b[:])
	}
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
