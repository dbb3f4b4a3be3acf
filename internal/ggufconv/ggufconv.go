// Package ggufconv converts a GGUF model file (llama, qwen2, qwen3, as
// engine.LoadModel reads them) into a model folder in MLX's layout —
// config.json, model.safetensors, tokenizer.json, tokenizer_config.json —
// holding the same weights, exactly where the two formats allow:
//
//   - Q4_0, Q4_1 and Q4_K blocks are MLX affine 4-bit groups of 32, and
//     Q8_0 blocks affine 8-bit ones: the same codes (re-packed in MLX's
//     order) with steps and offsets that give exactly the blocks' values
//     (internal/ggufaffine);
//   - F32, F16 and BF16 tensors are kept as they are;
//   - Q5_K and Q6_K, and the blocks that do not fit the folder's one
//     quantisation (config.json's "quantization" names one bit width for
//     every matrix), are written as float32, which holds their values
//     exactly;
//   - llama.cpp's order of each query and key head's rows is undone, so
//     the folder is in Hugging Face's order;
//   - rope_freqs becomes the llama3 rope_scaling that gives the same
//     frequencies, or the file is refused (config.go).
//
// The tokenizer is the one tokenizer.FromGGUF reads from the metadata,
// written as a tokenizer.json (tokenizer.GGUFVocab.TokenizerJSON), and
// the chat template and its special tokens go to tokenizer_config.json.
package ggufconv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// Form is how the folder holds a GGUF tensor.
type Form string

// The forms.
const (
	// Kept: the same F32, F16 or BF16 values.
	Kept Form = "kept"
	// Affine: MLX affine quantisation, the blocks' codes with steps and
	// offsets that give their values exactly.
	Affine Form = "affine"
	// Dequantised: float32, the blocks' values exactly.
	Dequantised Form = "dequantised"
)

// Written is one GGUF tensor as the folder holds it.
type Written struct {
	From string    // the GGUF tensor's name
	Type gguf.Type // its type there
	To   string    // the folder's tensor name (with .scales and .biases beside it when Affine)
	Form Form
}

// Summary is what Convert wrote.
type Summary struct {
	// Bits is the folder's quantisation (4 or 8, groups of 32), 0 when
	// it has none.
	Bits int
	// Tensors are the weights, in the order the model binds them.
	Tensors []Written
	// Bytes is the size of the folder's files.
	Bytes int64
}

// Convert writes the model folder out from the GGUF file from. out must
// not exist, or be an empty folder; the folder is assembled beside it and
// renamed into place, so a failure leaves nothing behind. The converted
// tensors are held in memory until they are written (floats kept as they
// are stay in the file's mapping): up to about the folder's size.
//
// # Errors
//
// A file engine.LoadModel refuses; a tensor that is not one of the model's
// weights; rope_freqs that no llama3 rope_scaling gives; a vocabulary
// whose tokenizer.json would tokenise otherwise (see TokenizerJSON); out
// in use. Each names the file and what in it.
func Convert(from, out string) (*Summary, error) {
	if !engine.IsGGUF(from) {
		return nil, fmt.Errorf("%s is not a GGUF file", from)
	}
	if err := checkOut(out); err != nil {
		return nil, err
	}
	m, err := engine.LoadModel(from)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	ws, err := weights(m)
	if err != nil {
		return nil, err
	}
	s := &Summary{Bits: chooseBits(ws)}
	var tensors []safetensors.Tensor
	for _, w := range ws {
		ts, form, err := w.convert(s.Bits)
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", from, w.t.Name, err)
		}
		tensors = append(tensors, ts...)
		s.Tensors = append(s.Tensors, Written{From: w.t.Name, Type: w.typ(), To: w.name, Form: form})
	}
	_, untied := m.GGUF.Tensor("output.weight")
	config, err := configJSON(m.Config, s.Bits, !untied)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	vocab, err := tokenizer.ReadGGUFVocab(m.GGUF.Meta)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	tok, err := vocab.TokenizerJSON()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	tokConfig, err := tokenizerConfig(m.GGUF.Meta, vocab)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	files := map[string][]byte{"config.json": config, "tokenizer.json": tok, "tokenizer_config.json": tokConfig}
	if s.Bytes, err = writeFolder(out, files, tensors); err != nil {
		return nil, err
	}
	return s, nil
}

// weight is one of the model's tensors and its name in the folder.
type weight struct {
	name string
	t    *engine.Tensor
	// headDim is set for the query and key projections of a file whose
	// heads' rows are in llama.cpp's order (Config.PermutedQK).
	headDim int
}

// typ is the tensor's GGUF type.
func (w weight) typ() gguf.Type {
	if w.t.BlockQuantized() {
		return w.t.Blocks
	}
	switch w.t.DType {
	case safetensors.F16:
		return gguf.F16
	case safetensors.BF16:
		return gguf.BF16
	}
	return gguf.F32
}

// weights lists the model's tensors under Hugging Face's names, and
// refuses a file with tensors besides them (and rope_freqs, which
// becomes config.json's rope_scaling).
func weights(m *engine.Model) ([]weight, error) {
	c, w := m.Config, &m.Weights
	qk := 0
	if c.PermutedQK {
		qk = c.HeadDim
	}
	ws := []weight{{"model.embed_tokens.weight", &w.EmbedTokens, 0}, {"model.norm.weight", &w.Norm, 0}}
	if _, untied := m.GGUF.Tensor("output.weight"); untied {
		ws = append(ws, weight{"lm_head.weight", &w.LMHead, 0})
	}
	for i := range w.Layers {
		l, p := &w.Layers[i], fmt.Sprintf("model.layers.%d.", i)
		ws = append(ws,
			weight{p + "input_layernorm.weight", &l.InputLayernorm, 0},
			weight{p + "self_attn.q_proj.weight", &l.QProj, qk},
			weight{p + "self_attn.k_proj.weight", &l.KProj, qk},
			weight{p + "self_attn.v_proj.weight", &l.VProj, 0},
			weight{p + "self_attn.o_proj.weight", &l.OProj, 0},
			weight{p + "post_attention_layernorm.weight", &l.PostAttentionLayernorm, 0},
			weight{p + "mlp.gate_proj.weight", &l.GateProj, 0},
			weight{p + "mlp.up_proj.weight", &l.UpProj, 0},
			weight{p + "mlp.down_proj.weight", &l.DownProj, 0},
		)
		if c.QKVBias() {
			ws = append(ws,
				weight{p + "self_attn.q_proj.bias", &l.QBias, qk},
				weight{p + "self_attn.k_proj.bias", &l.KBias, qk},
				weight{p + "self_attn.v_proj.bias", &l.VBias, 0})
		}
		if c.QKNorm() {
			ws = append(ws, weight{p + "self_attn.q_norm.weight", &l.QNorm, 0}, weight{p + "self_attn.k_norm.weight", &l.KNorm, 0})
		}
	}
	for _, t := range m.GGUF.Tensors {
		if t.Name != "rope_freqs.weight" && !slices.ContainsFunc(ws, func(w weight) bool { return w.t.Name == t.Name }) {
			return nil, fmt.Errorf("%s: tensor %s is not one of the model's weights, and a model folder has no place for it", m.GGUF.Path, t.Name)
		}
	}
	return ws, nil
}

// chooseBits is the folder's quantisation: the bit width of most of the
// weights in Q4_0, Q4_1 or Q4_K (4) and Q8_0 (8) blocks, 4 on a tie, 0
// when there are none.
func chooseBits(ws []weight) int {
	var q4, q8 int
	for _, w := range ws {
		switch w.t.Blocks {
		case gguf.Q4_0, gguf.Q4_1, gguf.Q4_K:
			q4 += w.t.Shape[0] * w.t.Shape[1]
		case gguf.Q8_0:
			q8 += w.t.Shape[0] * w.t.Shape[1]
		}
	}
	switch {
	case q4 == 0 && q8 == 0:
		return 0
	case q4 >= q8:
		return 4
	}
	return 8
}

// checkOut refuses an out that exists and is not an empty folder.
func checkOut(out string) error {
	entries, err := os.ReadDir(out)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %w", out, err)
	case len(entries) > 0:
		return fmt.Errorf("--out %s is a folder that is not empty: give a new one", out)
	}
	return nil
}

// writeFolder writes files and the weights (model.safetensors) into a
// new folder beside out and renames it to out, returning the files'
// total size; on failure the new folder is removed.
func writeFolder(out string, files map[string][]byte, tensors []safetensors.Tensor) (size int64, err error) {
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".partial-*")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return 0, err
		}
		size += int64(len(data))
	}
	st := filepath.Join(tmp, "model.safetensors")
	if err := safetensors.Write(st, map[string]string{"format": "mlx"}, tensors); err != nil {
		return 0, err
	}
	fi, err := os.Stat(st)
	if err != nil {
		return 0, err
	}
	size += fi.Size()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return 0, err
	}
	// os.Rename does not replace a folder, even an empty one.
	if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("--out %s: %w", out, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return 0, err
	}
	return size, nil
}
