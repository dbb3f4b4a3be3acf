package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

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
