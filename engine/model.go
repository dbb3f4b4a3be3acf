package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
	"github.com/driftwoodlabs/driftwood/internal/weightsum"
)

// Tensor is a weight in its stored form, viewed in place in the mapped file.
// A quantised matrix has DType U32 packed codes in Data and its Scales and
// Biases beside it; Shape is always the logical (dequantised) shape.
type Tensor struct {
	Name  string
	File  string
	DType safetensors.DType
	Shape []int
	Data  []byte
	// Bits and GroupSize are set, with Scales and Biases, when quantised.
	Bits, GroupSize int
	Scales, Biases  *Tensor
	// Blocks is the block type of a GGUF block-quantised matrix (Q4_0,
	// Q4_K, …; DType is then U8 and Data its rows of blocks); the zero
	// value, F32, means none.
	Blocks gguf.Type
}

// Quantized reports whether t is MLX affine-quantised.
func (t *Tensor) Quantized() bool { return t.Bits != 0 }

// BlockQuantized reports whether t is a GGUF block-quantised matrix.
func (t *Tensor) BlockQuantized() bool { return t.Blocks != gguf.F32 }

// Weights is a Llama model's parameters, named as in the checkpoint.
type Weights struct {
	EmbedTokens Tensor // (vocab, hidden)
	Layers      []LayerWeights
	Norm        Tensor // (hidden)
	// LMHead is the output layer (vocab, hidden); it is EmbedTokens when tied.
	LMHead Tensor
}

// LayerWeights is one transformer block.
type LayerWeights struct {
	InputLayernorm         Tensor // (hidden)
	QProj                  Tensor // (heads*head_dim, hidden)
	KProj                  Tensor // (kv_heads*head_dim, hidden)
	VProj                  Tensor // (kv_heads*head_dim, hidden)
	OProj                  Tensor // (hidden, heads*head_dim)
	PostAttentionLayernorm Tensor // (hidden)
	GateProj               Tensor // (intermediate, hidden)
	UpProj                 Tensor // (intermediate, hidden)
	DownProj               Tensor // (hidden, intermediate)
	// QBias, KBias and VBias are the projections' biases where the
	// architecture has them (Config.QKVBias; zero Tensors otherwise).
	QBias, KBias, VBias Tensor
	// QNorm and KNorm are the per-head RMSNorm weights (head_dim) applied
	// to queries and keys before RoPE where the architecture has them
	// (Config.QKNorm).
	QNorm, KNorm Tensor
}

// Model is a loaded model folder or GGUF file: its configuration and
// memory-mapped weights. Close unmaps the weights.
type Model struct {
	// Dir is the model folder, or the GGUF file.
	Dir     string
	Config  *Config
	Weights Weights
	// Fingerprint identifies the model for sessions and the prefix cache:
	// a hex sha256 over config.json, each weight file's name, size and
	// header (which names every tensor's dtype and shape) and a sample of
	// every tensor's bytes (internal/weightsum), so that another model,
	// another quantisation or another fine-tune of the same shape
	// differs, without reading gigabytes at each start.
	Fingerprint string
	files       []*safetensors.File
	// GGUF is the model's file when it is one (its metadata holds the
	// tokenizer and the chat template).
	GGUF *gguf.File
}

// LoadModel opens a Hugging Face / MLX model folder (config.json,
// generation_config.json, and model.safetensors or the shards named by
// model.safetensors.index.json) or a GGUF file.
//
// # Errors
//
// A missing or inconsistent config key names config.json (or the GGUF
// file) and the key; a missing tensor, a wrong shape or dtype names the
// tensor and its file.
func LoadModel(dir string) (*Model, error) {
	if IsGGUF(dir) {
		return loadGGUF(dir)
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	files, err := openWeights(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		f.ReadIn() // before the fingerprint's samples are read
	}
	m := &Model{Dir: dir, Config: cfg, files: files}
	if err := m.bind(); err != nil {
		m.Close()
		return nil, err
	}
	if m.Fingerprint, err = fingerprint(dir, files); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func fingerprint(dir string, files []*safetensors.File) (string, error) {
	cfg, err := limitedfile.Read(filepath.Join(dir, "config.json"), limitedfile.Config)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(cfg)
	for _, f := range files {
		fmt.Fprintf(h, "\x00%s\x00%d\x00%s", filepath.Base(f.Path), f.Size, f.HeaderSHA256)
		names := f.Names()
		data := make([][]byte, len(names))
		for i, n := range names {
			data[i] = f.Tensors[n].Data
		}
		weightsum.Tensors(h, data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadAhead starts reading the weights into the page cache, in the
// background, so that the first forward pass does not wait for the disk;
// a caller with other work before it (the tokenizer) starts this first.
func (m *Model) ReadAhead() {
	for _, f := range m.files {
		f.ReadAhead()
	}
	if m.GGUF != nil {
		m.GGUF.ReadAhead()
	}
}

// Close unmaps the weight files; the model must not be used afterwards.
func (m *Model) Close() error {
	var errs []error
	for _, f := range m.files {
		errs = append(errs, f.Close())
	}
	if m.GGUF != nil {
		errs = append(errs, m.GGUF.Close())
	}
	return errors.Join(errs...)
}

// CheckVocabulary checks a tokenizer of ids tokens (ids 0 to ids-1),
// read from tokenizerPath, against the model before anything runs: every
// id it can produce needs a row of the embedding. Checkpoints often pad
// the embedding past the tokenizer; the other way round used to fail only
// at the first such token, in the backend, naming neither file.
func (m *Model) CheckVocabulary(tokenizerPath string, ids int) error {
	if v := m.Config.VocabSize; ids > v {
		config := filepath.Join(m.Dir, "config.json")
		if m.GGUF != nil {
			config = m.Dir
		}
		return fmt.Errorf("%s has %d tokens but the model has %d (vocab_size in %s, the rows of %s in %s): the tokenizer belongs to another model",
			tokenizerPath, ids, v, config, m.Weights.EmbedTokens.Name, m.Weights.EmbedTokens.File)
	}
	return nil
}

// WeightFiles lists the weight files' paths.
func (m *Model) WeightFiles() []string {
	out := make([]string, len(m.files))
	for i, f := range m.files {
		out[i] = f.Path
	}
	if m.GGUF != nil {
		out = append(out, m.GGUF.Path)
	}
	return out
}

func openWeights(dir string) ([]*safetensors.File, error) {
	var names []string
	index := filepath.Join(dir, "model.safetensors.index.json")
	if data, err := limitedfile.Read(index, limitedfile.Index); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(data, &idx); err != nil {
			return nil, fmt.Errorf("%s: %w", index, err)
		}
		seen := map[string]bool{}
		for _, f := range idx.WeightMap {
			if f == "" || f == "." || f == ".." || filepath.Base(f) != f {
				return nil, fmt.Errorf("%s: shard name %q is not a plain file name", index, f)
			}
			if !seen[f] {
				seen[f] = true
				names = append(names, f)
			}
		}
		sort.Strings(names)
	} else if errors.Is(err, os.ErrNotExist) {
		names = []string{"model.safetensors"}
	} else {
		return nil, err
	}
	var files []*safetensors.File
	for _, n := range names {
		f, err := safetensors.Open(filepath.Join(dir, n))
		if err != nil {
			for _, g := range files {
				g.Close()
			}
			return nil, err
		}
		files = append(files, f)
	}
	if err := distinctTensors(files); err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	return files, nil
}

// distinctTensors refuses a tensor stored in two shards: which copy a
// lookup finds would depend on the order of the files.
func distinctTensors(files []*safetensors.File) error {
	if len(files) < 2 {
		return nil
	}
	where := map[string]string{}
	for _, f := range files {
		for name := range f.Tensors {
			if other, dup := where[name]; dup {
				return fmt.Errorf("tensor %s is stored twice, in %s and %s", name, other, f.Path)
			}
			where[name] = f.Path
		}
	}
	return nil
}
