package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

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

// Prefault starts mapping the weights in, in the background, so that the
// first forward pass does not fault them in a page at a time; a caller
// with other work before it (the tokenizer) starts this first.
func (m *Model) Prefault() {
	for _, f := range m.files {
		f.Prefault()
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

// storedLayers is the number of transformer blocks the weights hold: one
// more than the highest N of the model.layers.N.* tensors.
func (m *Model) storedLayers() int {
	n := 0
	for _, f := range m.files {
		for name := range f.Tensors {
			rest, ok := strings.CutPrefix(name, "model.layers.")
			num, _, ok2 := strings.Cut(rest, ".")
			if i, err := strconv.Atoi(num); ok && ok2 && err == nil && i >= n {
				n = i + 1
			}
		}
	}
	return n
}

// lookup finds a tensor by name in any of the model's files.
func (m *Model) lookup(name string) (*safetensors.Tensor, string) {
	for _, f := range m.files {
		if t, ok := f.Tensors[name]; ok {
			return t, f.Path
		}
	}
	return nil, ""
}

func (m *Model) bind() error {
	c := m.Config
	// Before anything is allocated per layer.
	if have := m.storedLayers(); have < c.NumHiddenLayers {
		return fmt.Errorf("%s: num_hidden_layers is %d but %s holds %d layers", filepath.Join(m.Dir, "config.json"), c.NumHiddenLayers, m.weightsName(), have)
	}
	head, _ := m.lookup("lm_head.weight")
	bias := func(dst *Tensor, name string, shape ...int) error { return m.vector(dst, name, shape[0]) }
	return m.Weights.bind(c, hfNames, m.tensor, bias, !c.Tied(head != nil))
}

// weightNames is how a format names a model's tensors: the embedding,
// the final norm and the output layer, and each block's parts after the
// block's prefix.
type weightNames struct {
	embed, norm, head string
	layer             string // a fmt format of the layer number
	// The block's parts: norms, projections, Qwen2's biases, Qwen3's
	// head norms.
	attnNorm, q, k, v, o, mlpNorm, gate, up, down string
	qBias, kBias, vBias, qNorm, kNorm             string
}

// hfNames are a Hugging Face checkpoint's (before ".weight", which
// Model.tensor adds with its quantisation's ".scales" and ".biases").
var hfNames = weightNames{embed: "model.embed_tokens", norm: "model.norm", head: "lm_head", layer: "model.layers.%d.",
	attnNorm: "input_layernorm", q: "self_attn.q_proj", k: "self_attn.k_proj", v: "self_attn.v_proj", o: "self_attn.o_proj",
	mlpNorm: "post_attention_layernorm", gate: "mlp.gate_proj", up: "mlp.up_proj", down: "mlp.down_proj",
	qBias: "self_attn.q_proj.bias", kBias: "self_attn.k_proj.bias", vBias: "self_attn.v_proj.bias", qNorm: "self_attn.q_norm", kNorm: "self_attn.k_norm"}

// ggufNames are llama.cpp's.
var ggufNames = weightNames{embed: "token_embd.weight", norm: "output_norm.weight", head: "output.weight", layer: "blk.%d.",
	attnNorm: "attn_norm.weight", q: "attn_q.weight", k: "attn_k.weight", v: "attn_v.weight", o: "attn_output.weight",
	mlpNorm: "ffn_norm.weight", gate: "ffn_gate.weight", up: "ffn_up.weight", down: "ffn_down.weight",
	qBias: "attn_q.bias", kBias: "attn_k.bias", vBias: "attn_v.bias", qNorm: "attn_q_norm.weight", kNorm: "attn_k_norm.weight"}

// bind binds every weight of a model of configuration c, named as names
// says: get binds a matrix or a norm, bias a projection's bias, each
// checking the shape it is given; the output layer is the embedding
// unless untied. The errors name the tensors (binding stops after the
// first block that has one).
func (w *Weights) bind(c *Config, names weightNames, get, bias func(dst *Tensor, name string, shape ...int) error, untied bool) error {
	q, kv := c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim
	var errs []error
	bound := func(bind func(*Tensor, string, ...int) error) func(*Tensor, string, ...int) {
		return func(dst *Tensor, name string, shape ...int) {
			if err := bind(dst, name, shape...); err != nil {
				errs = append(errs, err)
			}
		}
	}
	tensor, vector := bound(get), bound(bias)
	tensor(&w.EmbedTokens, names.embed, c.VocabSize, c.HiddenSize)
	tensor(&w.Norm, names.norm, c.HiddenSize)
	w.Layers = make([]LayerWeights, c.NumHiddenLayers)
	for i := range w.Layers {
		l, p := &w.Layers[i], fmt.Sprintf(names.layer, i)
		tensor(&l.InputLayernorm, p+names.attnNorm, c.HiddenSize)
		tensor(&l.QProj, p+names.q, q, c.HiddenSize)
		tensor(&l.KProj, p+names.k, kv, c.HiddenSize)
		tensor(&l.VProj, p+names.v, kv, c.HiddenSize)
		tensor(&l.OProj, p+names.o, c.HiddenSize, q)
		tensor(&l.PostAttentionLayernorm, p+names.mlpNorm, c.HiddenSize)
		tensor(&l.GateProj, p+names.gate, c.IntermediateSize, c.HiddenSize)
		tensor(&l.UpProj, p+names.up, c.IntermediateSize, c.HiddenSize)
		tensor(&l.DownProj, p+names.down, c.HiddenSize, c.IntermediateSize)
		if c.QKVBias() {
			vector(&l.QBias, p+names.qBias, q)
			vector(&l.KBias, p+names.kBias, kv)
			vector(&l.VBias, p+names.vBias, kv)
		}
		if c.QKNorm() {
			tensor(&l.QNorm, p+names.qNorm, c.HeadDim)
			tensor(&l.KNorm, p+names.kNorm, c.HeadDim)
		}
		if len(errs) > 0 {
			break
		}
	}
	if untied {
		tensor(&w.LMHead, names.head, c.VocabSize, c.HiddenSize)
	} else {
		w.LMHead = w.EmbedTokens
	}
	return errors.Join(errs...)
}

// tensor binds prefix.weight (with prefix.scales and prefix.biases when
// quantised) into dst, checking its dtype and logical shape.
func (m *Model) tensor(dst *Tensor, prefix string, shape ...int) error {
	name := prefix + ".weight"
	st, file := m.lookup(name)
	if st == nil {
		return fmt.Errorf("%s: missing tensor %s", m.weightsName(), name)
	}
	*dst = Tensor{Name: name, File: file, DType: st.DType, Shape: shape, Data: st.Data}
	scales, _ := m.lookup(prefix + ".scales")
	if scales == nil {
		switch st.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16:
		default:
			return fmt.Errorf("%s: tensor %s has dtype %s (want F32, F16 or BF16, or U32 with scales and biases)", file, name, st.DType)
		}
		if !slices.Equal(st.Shape, shape) {
			return fmt.Errorf("%s: tensor %s has shape %v, want %v", file, name, st.Shape, shape)
		}
		return nil
	}
	return m.bindQuantized(dst, prefix, st, scales, file)
}

// vector binds the float tensor name of n elements (a projection's bias)
// into dst.
func (m *Model) vector(dst *Tensor, name string, n int) error {
	st, file := m.lookup(name)
	switch {
	case st == nil:
		return fmt.Errorf("%s: missing tensor %s (%s has q/k/v biases)", m.weightsName(), name, m.Config.Arch())
	case st.DType != safetensors.F32 && st.DType != safetensors.F16 && st.DType != safetensors.BF16:
		return fmt.Errorf("%s: tensor %s has dtype %s (want F32, F16 or BF16)", file, name, st.DType)
	case !slices.Equal(st.Shape, []int{n}):
		return fmt.Errorf("%s: tensor %s has shape %v, want [%d]", file, name, st.Shape, n)
	}
	*dst = Tensor{Name: name, File: file, DType: st.DType, Shape: []int{n}, Data: st.Data}
	return nil
}

func (m *Model) bindQuantized(dst *Tensor, prefix string, st, scales *safetensors.Tensor, file string) error {
	qc := m.Config.Quantization
	if qc == nil {
		return fmt.Errorf("%s: tensor %s.scales found but config.json has no \"quantization\"", file, prefix)
	}
	if st.DType != safetensors.U32 {
		return fmt.Errorf("%s: quantised tensor %s has dtype %s, want U32", file, dst.Name, st.DType)
	}
	biases, _ := m.lookup(prefix + ".biases")
	if biases == nil {
		return fmt.Errorf("%s: missing tensor %s.biases", m.weightsName(), prefix)
	}
	rows, cols := dst.Shape[0], 1
	if len(dst.Shape) == 2 {
		cols = dst.Shape[1]
	}
	if len(dst.Shape) != 2 || cols%qc.GroupSize != 0 {
		return fmt.Errorf("%s: tensor %s is quantised but its shape %v is not a matrix with columns divisible by group_size %d", file, dst.Name, dst.Shape, qc.GroupSize)
	}
	if want := []int{rows, cols * qc.Bits / 32}; !slices.Equal(st.Shape, want) {
		return fmt.Errorf("%s: tensor %s has packed shape %v, want %v for %d-bit %v", file, dst.Name, st.Shape, want, qc.Bits, dst.Shape)
	}
	groups := []int{rows, cols / qc.GroupSize}
	for _, aux := range []*safetensors.Tensor{scales, biases} {
		if !slices.Equal(aux.Shape, groups) {
			return fmt.Errorf("%s: tensor %s has shape %v, want %v (group_size %d)", file, aux.Name, aux.Shape, groups, qc.GroupSize)
		}
		switch aux.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16:
		default:
			return fmt.Errorf("%s: tensor %s has dtype %s, want F32, F16 or BF16", file, aux.Name, aux.DType)
		}
	}
	dst.Bits, dst.GroupSize = qc.Bits, qc.GroupSize
	dst.Scales = &Tensor{Name: scales.Name, File: file, DType: scales.DType, Shape: groups, Data: scales.Data}
	dst.Biases = &Tensor{Name: biases.Name, File: file, DType: biases.DType, Shape: groups, Data: biases.Data}
	return nil
}

func (m *Model) weightsName() string {
	if len(m.files) == 1 {
		return m.files[0].Path
	}
	return filepath.Join(m.Dir, "model.safetensors.index.json")
}
