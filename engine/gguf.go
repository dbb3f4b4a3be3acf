package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/weightsum"
)

// IsGGUF reports whether path is a GGUF file (a regular file that starts
// with GGUF's magic), which LoadModel opens as a model.
func IsGGUF(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && bytes.Equal(magic, []byte("GGUF"))
}

// ggufArchitectures maps GGUF's general.architecture onto the checkpoint
// architectures Driftwood runs; the block is the same one.
var ggufArchitectures = map[string]string{
	"llama": "LlamaForCausalLM",
	"qwen2": "Qwen2ForCausalLM",
	"qwen3": "Qwen3ForCausalLM",
}

// loadGGUF opens a GGUF model file: its hyper-parameters from the
// metadata, its tensors in place in the mapping.
func loadGGUF(path string) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	cfg, err := configFromGGUF(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.ReadIn() // a model's, before its tensors or the fingerprint's samples are read
	m := &Model{Dir: path, Config: cfg, GGUF: f}
	if err := m.bindGGUF(); err != nil {
		m.Close()
		return nil, err
	}
	m.Fingerprint = ggufFingerprint(f)
	return m, nil
}

// configFromGGUF reads the hyper-parameters from GGUF metadata, as
// config.json's keys, then fills defaults and validates them as
// config.json's are.
func configFromGGUF(f *gguf.File) (*Config, error) {
	meta := f.Meta
	arch, err := meta.String("general.architecture")
	if err != nil {
		return nil, err
	}
	hf, ok := ggufArchitectures[arch]
	if !ok {
		return nil, fmt.Errorf("general.architecture %q is not supported (Driftwood runs llama, qwen2 and qwen3 GGUF files)", arch)
	}
	c := &Config{Architectures: []string{hf}, ModelType: arch}
	var errs []error
	integer := func(dst *int, key string, required bool) {
		key = arch + "." + key
		if !required && !meta.Has(key) {
			return
		}
		v, err := meta.Uint(key)
		if err != nil {
			errs = append(errs, err)
			return
		}
		if v > 1<<31 {
			errs = append(errs, fmt.Errorf("key %s: %d is too large", key, v))
			return
		}
		*dst = int(v)
	}
	float := func(dst *float64, key string) {
		key = arch + "." + key
		if !meta.Has(key) {
			return
		}
		v, err := meta.Float(key)
		if err != nil {
			errs = append(errs, err)
			return
		}
		*dst = v
	}
	integer(&c.NumHiddenLayers, "block_count", true)
	integer(&c.HiddenSize, "embedding_length", true)
	integer(&c.IntermediateSize, "feed_forward_length", true)
	integer(&c.NumAttentionHeads, "attention.head_count", true)
	integer(&c.NumKeyValueHeads, "attention.head_count_kv", false)
	integer(&c.HeadDim, "attention.key_length", false)
	integer(&c.MaxPositionEmbeddings, "context_length", true)
	integer(&c.VocabSize, "vocab_size", false)
	float(&c.RMSNormEps, "attention.layer_norm_rms_epsilon")
	float(&c.RopeTheta, "rope.freq_base")
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if key := arch + ".rope.scaling.type"; meta.Has(key) {
		if typ, err := meta.String(key); err != nil {
			return nil, err
		} else if typ != "none" {
			return nil, fmt.Errorf("key %s: %q rope scaling is not supported (Llama 3's frequency factors, rope_freqs, are)", key, typ)
		}
	}
	if c.VocabSize == 0 {
		tokens, err := meta.Strings("tokenizer.ggml.tokens")
		if err != nil {
			return nil, fmt.Errorf("no %s.vocab_size, and %w", arch, err)
		}
		c.VocabSize = len(tokens)
	}
	for _, k := range []struct {
		key string
		dst *TokenIDs
	}{{"tokenizer.ggml.eos_token_id", &c.EOSTokenIDs}, {"tokenizer.ggml.eot_token_id", &c.EOSTokenIDs}} {
		if meta.Has(k.key) {
			id, err := meta.Uint(k.key)
			if err != nil {
				return nil, err
			}
			*k.dst = union(*k.dst, TokenIDs{int32(id)})
		}
	}
	if key := "tokenizer.ggml.bos_token_id"; meta.Has(key) {
		id, err := meta.Uint(key)
		if err != nil {
			return nil, err
		}
		bos := int32(id)
		c.BOSTokenID = &bos
	}
	// llama.cpp's converter orders each query and key head's rows for
	// RoPE on adjacent pairs (llama's "normal" rotation); Qwen's heads
	// keep Hugging Face's order.
	c.PermutedQK = arch == "llama"
	c.setDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// bindGGUF binds the tensors of a GGUF file under llama.cpp's names.
func (m *Model) bindGGUF() error {
	c, f := m.Config, m.GGUF
	_, untied := f.Tensor("output.weight")
	if err := m.Weights.bind(c, ggufNames, m.ggufTensor, m.ggufTensor, untied); err != nil {
		return err
	}
	if t, ok := f.Tensor("rope_freqs.weight"); ok {
		factors, err := ropeFactors(t, c.HeadDim/2)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		c.RopeFactors = factors
	}
	return nil
}

// ggufTensor binds the GGUF tensor name into dst, checking its type and
// its shape (shape is the logical one, rows first; GGUF lists the row
// length first).
func (m *Model) ggufTensor(dst *Tensor, name string, shape ...int) error {
	f := m.GGUF
	t, ok := f.Tensor(name)
	if !ok {
		return fmt.Errorf("%s: missing tensor %s", f.Path, name)
	}
	if !t.Type.Supported() {
		return fmt.Errorf("%s: tensor %s is %s, which Driftwood does not read (it reads F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K and Q6_K)", f.Path, name, t.Type)
	}
	want := make([]int, len(shape))
	for i, d := range shape {
		want[len(shape)-1-i] = d
	}
	if !slices.Equal(t.Dims, want) {
		return fmt.Errorf("%s: tensor %s has dims %v, want %v", f.Path, name, t.Dims, want)
	}
	*dst = Tensor{Name: name, File: f.Path, Shape: shape, Data: t.Data}
	switch t.Type {
	case gguf.F32:
		dst.DType = safetensors.F32
	case gguf.F16:
		dst.DType = safetensors.F16
	case gguf.BF16:
		dst.DType = safetensors.BF16
	default:
		if len(shape) != 2 {
			return fmt.Errorf("%s: tensor %s is %s, but a vector must be a float type", f.Path, name, t.Type)
		}
		dst.DType, dst.Blocks = safetensors.U8, t.Type
	}
	return nil
}

// ropeFactors reads Llama 3's rope frequency factors (rope_freqs.weight,
// one per pair of a head's dimensions).
func ropeFactors(t *gguf.Tensor, pairs int) ([]float64, error) {
	if t.Type != gguf.F32 || !slices.Equal(t.Dims, []int{pairs}) {
		return nil, fmt.Errorf("tensor %s is %s %v, want F32 [%d]", t.Name, t.Type, t.Dims, pairs)
	}
	vals := make([]float32, pairs)
	if err := gguf.Dequantize(gguf.F32, vals, t.Data); err != nil {
		return nil, err
	}
	out := make([]float64, pairs)
	for i, v := range vals {
		if !(v > 0) {
			return nil, fmt.Errorf("tensor %s: factor %d is %g, not positive", t.Name, i, v)
		}
		out[i] = float64(v)
	}
	return out, nil
}

// ggufFingerprint identifies a GGUF model: its metadata (hyper-parameters
// and tokenizer), every tensor's name, type and dims, and a sample of
// every tensor's bytes (internal/weightsum).
func ggufFingerprint(f *gguf.File) string {
	h := sha256.New()
	fmt.Fprintf(h, "gguf\x00%d\x00", f.Version)
	var buf []byte
	for k, v := range f.Meta.All() {
		buf = strconv.AppendQuote(buf[:0], k)
		buf = appendValue(append(buf, '='), v)
		h.Write(append(buf, 0))
	}
	data := make([][]byte, len(f.Tensors))
	for i, t := range f.Tensors {
		fmt.Fprintf(h, "\x00%s\x00%d\x00%v", t.Name, t.Type, t.Dims)
		data[i] = t.Data
	}
	weightsum.Tensors(h, data)
	return hex.EncodeToString(h.Sum(nil))
}

// appendValue appends a metadata value as fmt's %v writes it, the form
// fingerprints have always hashed, without fmt's reflection over each
// element of the vocabulary's arrays: that was 40 % of loading a GGUF
// file with a 128,000-token vocabulary. TestAppendValueIsFmt holds it to
// fmt.
func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return append(b, v...)
	case []string:
		return appendEach(b, v, func(b []byte, s string) []byte { return append(b, s...) })
	case []int32:
		return appendEach(b, v, func(b []byte, x int32) []byte { return strconv.AppendInt(b, int64(x), 10) })
	case []uint32:
		return appendEach(b, v, func(b []byte, x uint32) []byte { return strconv.AppendUint(b, uint64(x), 10) })
	case []float32:
		return appendEach(b, v, appendFloat32)
	case []any:
		return appendEach(b, v, appendValue)
	}
	return fmt.Appendf(b, "%v", v)
}

// appendEach appends s as fmt's %v writes a slice: its elements, as f
// writes each, between brackets and apart by spaces.
func appendEach[T any](b []byte, s []T, f func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, x := range s {
		if i > 0 {
			b = append(b, ' ')
		}
		b = f(b, x)
	}
	return append(b, ']')
}

// appendFloat32 appends x as fmt's %v writes a float32 (with a sign
// before an infinity).
func appendFloat32(b []byte, x float32) []byte {
	if math.IsInf(float64(x), 1) {
		return append(b, "+Inf"...)
	}
	return strconv.AppendFloat(b, float64(x), 'g', -1, 32)
}
