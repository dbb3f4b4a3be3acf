package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// Bounds on config.json's sizes, far above any Llama (the 405B has 126
// layers, hidden 16384, intermediate 53248, 128 heads; the largest
// vocabularies are ~256k, the longest contexts ~10M positions), so that a
// hostile file is refused before anything is sized from it.
const (
	MaxLayers           = 1024
	MaxHiddenSize       = 1 << 16
	MaxIntermediateSize = 1 << 20
	MaxHeads            = 1024
	MaxHeadDim          = 1024
	MaxVocab            = 1 << 21
	MaxPositions        = 1 << 24
)

// Config is a Llama-family model's hyper-parameters, read from config.json
// (and generation_config.json for the stop tokens). Field names follow the
// checkpoint's keys.
type Config struct {
	Architectures         []string       `json:"architectures"`
	ModelType             string         `json:"model_type"`
	HiddenSize            int            `json:"hidden_size"`
	NumHiddenLayers       int            `json:"num_hidden_layers"`
	NumAttentionHeads     int            `json:"num_attention_heads"`
	NumKeyValueHeads      int            `json:"num_key_value_heads"`
	HeadDim               int            `json:"head_dim"`
	IntermediateSize      int            `json:"intermediate_size"`
	RMSNormEps            float64        `json:"rms_norm_eps"`
	RopeTheta             float64        `json:"rope_theta"`
	RopeScaling           *RopeScaling   `json:"rope_scaling"`
	TieWordEmbeddings     *bool          `json:"tie_word_embeddings"`
	VocabSize             int            `json:"vocab_size"`
	MaxPositionEmbeddings int            `json:"max_position_embeddings"`
	BOSTokenID            *int32         `json:"bos_token_id"`
	EOSTokenIDs           TokenIDs       `json:"eos_token_id"`
	HiddenAct             string         `json:"hidden_act"`
	AttentionBias         bool           `json:"attention_bias"`
	MLPBias               bool           `json:"mlp_bias"`
	SlidingWindow         *int           `json:"sliding_window"`
	UseSlidingWindow      bool           `json:"use_sliding_window"`
	Quantization          *Quantization  `json:"quantization"`
	Generation            *GenerationCfg `json:"-"`
	// PermutedQK says that each query and key head's rows are in
	// llama.cpp's order (its converter's, for RoPE on adjacent pairs):
	// the backends put the projected heads back in Hugging Face's order.
	// Set for GGUF llama files.
	PermutedQK bool `json:"-"`
	// RopeFactors divide the rotary frequencies, one per pair of a head's
	// dimensions: Llama 3's scaling as GGUF stores it (rope_freqs).
	RopeFactors []float64 `json:"-"`
}

// RopeScaling is config.json's rope_scaling: nil or rope_type "llama3".
type RopeScaling struct {
	RopeType                      string  `json:"rope_type"`
	Type                          string  `json:"type"` // older spelling of rope_type
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`
	HighFreqFactor                float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
}

// Quantization is MLX's affine quantisation of the linear layers.
type Quantization struct {
	GroupSize int    `json:"group_size"`
	Bits      int    `json:"bits"`
	Mode      string `json:"mode"`
}

// GenerationCfg is the part of generation_config.json that Driftwood uses:
// stop tokens and the model author's sampling defaults.
type GenerationCfg struct {
	BOSTokenID  *int32   `json:"bos_token_id"`
	EOSTokenIDs TokenIDs `json:"eos_token_id"`
	DoSample    *bool    `json:"do_sample"`
	Temperature *float64 `json:"temperature"`
	TopP        *float64 `json:"top_p"`
	TopK        *int     `json:"top_k"`
}

// TokenIDs accepts a token id written as one int or as a list of ints.
type TokenIDs []int32

// UnmarshalJSON implements json.Unmarshaler.
func (t *TokenIDs) UnmarshalJSON(b []byte) error {
	var one int32
	if err := json.Unmarshal(b, &one); err == nil {
		*t = TokenIDs{one}
		return nil
	}
	var many []int32
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("want a token id or a list of token ids")
	}
	*t = many
	return nil
}

// LoadConfig reads dir/config.json and, when present,
// dir/generation_config.json, fills defaults and validates the result.
func LoadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "config.json")
	data, err := limitedfile.Read(path, limitedfile.Config)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	gpath := filepath.Join(dir, "generation_config.json")
	if gdata, err := limitedfile.Read(gpath, limitedfile.Config); err == nil {
		var g GenerationCfg
		if err := json.Unmarshal(gdata, &g); err != nil {
			return nil, fmt.Errorf("%s: %w", gpath, jsonError(err))
		}
		if err := c.checkTokenIDs(g.BOSTokenID, g.EOSTokenIDs); err != nil {
			return nil, fmt.Errorf("%s: %w", gpath, err)
		}
		c.Generation = &g
		c.EOSTokenIDs = union(c.EOSTokenIDs, g.EOSTokenIDs)
		if c.BOSTokenID == nil {
			c.BOSTokenID = g.BOSTokenID
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return c, nil
}

// ParseConfig decodes config.json (unknown keys are ignored), fills the
// defaults that Hugging Face fills, and validates it.
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, jsonError(err)
	}
	c.setDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("key %q: wrong type (%s where %s was expected)", te.Field, te.Value, te.Type)
	}
	return err
}

func (c *Config) setDefaults() {
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if c.HeadDim == 0 && c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if c.RMSNormEps == 0 {
		c.RMSNormEps = 1e-6
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	if c.HiddenAct == "" {
		c.HiddenAct = "silu"
	}
	if s := c.RopeScaling; s != nil {
		if s.RopeType == "" {
			s.RopeType = s.Type
		}
		if s.RopeType == "" || s.RopeType == "default" {
			c.RopeScaling = nil // no scaling, as if the key were absent
		}
	}
}

func (c *Config) validate() error {
	if err := c.checkArch(); err != nil {
		return err
	}
	for _, k := range []struct {
		key    string
		v, max int
	}{
		{"hidden_size", c.HiddenSize, MaxHiddenSize},
		{"num_hidden_layers", c.NumHiddenLayers, MaxLayers},
		{"num_attention_heads", c.NumAttentionHeads, MaxHeads},
		{"intermediate_size", c.IntermediateSize, MaxIntermediateSize},
		{"vocab_size", c.VocabSize, MaxVocab},
		{"max_position_embeddings", c.MaxPositionEmbeddings, MaxPositions},
	} {
		if k.v <= 0 {
			return fmt.Errorf("key %q: missing or not positive", k.key)
		}
		if k.v > k.max {
			return fmt.Errorf("key %q: %d is more than Driftwood supports (%d)", k.key, k.v, k.max)
		}
	}
	switch {
	case c.NumKeyValueHeads <= 0 || c.NumAttentionHeads%c.NumKeyValueHeads != 0:
		return fmt.Errorf("key \"num_key_value_heads\": %d does not divide num_attention_heads %d", c.NumKeyValueHeads, c.NumAttentionHeads)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0 || c.HeadDim > MaxHeadDim:
		return fmt.Errorf("key \"head_dim\": %d is not a positive even number up to %d", c.HeadDim, MaxHeadDim)
	case c.RMSNormEps < 0 || math.IsNaN(c.RMSNormEps):
		return fmt.Errorf("key \"rms_norm_eps\": %g is negative", c.RMSNormEps)
	case c.RopeTheta <= 0:
		return fmt.Errorf("key \"rope_theta\": %g is not positive", c.RopeTheta)
	case c.HiddenAct != "silu":
		return fmt.Errorf("key \"hidden_act\": %q is not supported (want silu)", c.HiddenAct)
	case c.AttentionBias || c.MLPBias:
		return errors.New("keys \"attention_bias\"/\"mlp_bias\": biased projections are not supported (Qwen2's q/k/v biases are)")
	}
	if s := c.RopeScaling; s != nil {
		switch s.RopeType {
		case "llama3":
			if s.Factor <= 0 || s.LowFreqFactor <= 0 || s.HighFreqFactor <= s.LowFreqFactor || s.OriginalMaxPositionEmbeddings <= 0 {
				return errors.New("key \"rope_scaling\": llama3 scaling needs factor > 0, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0")
			}
		default:
			return fmt.Errorf("key \"rope_scaling\": rope_type %q is not supported (want llama3 or none)", s.RopeType)
		}
	}
	if q := c.Quantization; q != nil {
		if q.Bits != 4 && q.Bits != 8 {
			return fmt.Errorf("key \"quantization\": %d-bit weights are not supported (want 4 or 8)", q.Bits)
		}
		if q.GroupSize != 32 && q.GroupSize != 64 && q.GroupSize != 128 {
			return fmt.Errorf("key \"quantization\": group_size %d is not supported (want 32, 64 or 128)", q.GroupSize)
		}
		if q.Mode != "" && q.Mode != "affine" {
			return fmt.Errorf("key \"quantization\": mode %q is not supported (want affine)", q.Mode)
		}
	}
	return c.checkTokenIDs(c.BOSTokenID, c.EOSTokenIDs)
}

// checkTokenIDs checks that bos_token_id and eos_token_id name tokens of
// the vocabulary.
func (c *Config) checkTokenIDs(bos *int32, eos TokenIDs) error {
	if bos != nil && (*bos < 0 || int(*bos) >= c.VocabSize) {
		return fmt.Errorf("key \"bos_token_id\": %d is outside the vocabulary of %d (vocab_size)", *bos, c.VocabSize)
	}
	for _, id := range eos {
		if id < 0 || int(id) >= c.VocabSize {
			return fmt.Errorf("key \"eos_token_id\": %d is outside the vocabulary of %d (vocab_size)", id, c.VocabSize)
		}
	}
	return nil
}

// Tied reports whether the output layer shares the embedding's weights.
// Without the key, hasLMHead (whether the checkpoint stores lm_head.weight)
// decides: mlx-lm defaults to tied and transformers to untied, and the
// weights themselves settle it either way.
func (c *Config) Tied(hasLMHead bool) bool {
	if c.TieWordEmbeddings != nil {
		return *c.TieWordEmbeddings
	}
	return !hasLMHead
}

// Describe is a one-line summary of the shape, for logs and `models`.
func (c *Config) Describe() string {
	s := fmt.Sprintf("%s %d layers, hidden %d, %d/%d heads of %d, vocab %d", c.Arch(), c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.VocabSize)
	if q := c.Quantization; q != nil {
		s += fmt.Sprintf(", q%d/g%d", q.Bits, q.GroupSize)
	}
	return s
}

func union(a, b TokenIDs) TokenIDs {
	out := append(TokenIDs(nil), a...)
	for _, id := range b {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Architectures Driftwood runs: config.json's architectures[0] and its
// model_type. All are Llama's block; Qwen2 adds biases to the q, k and v
// projections, Qwen3 an RMSNorm of each query and key head before RoPE,
// Mistral nothing (its sliding window is refused when set).
var architectures = map[string]string{
	"LlamaForCausalLM":   "llama",
	"MistralForCausalLM": "mistral",
	"Qwen2ForCausalLM":   "qwen2",
	"Qwen3ForCausalLM":   "qwen3",
}

// Arch is the model's architecture: llama, mistral, qwen2 or qwen3
// (model_type's spelling; llama when config.json names none).
func (c *Config) Arch() string {
	if len(c.Architectures) > 0 {
		return architectures[c.Architectures[0]]
	}
	if c.ModelType != "" {
		return c.ModelType
	}
	return "llama"
}

// QKVBias reports whether the q, k and v projections have biases (Qwen2's
// always do).
func (c *Config) QKVBias() bool { return c.Arch() == "qwen2" }

// QKNorm reports whether each query and key head is RMS-normed before
// RoPE (Qwen3).
func (c *Config) QKNorm() bool { return c.Arch() == "qwen3" }

func (c *Config) checkArch() error {
	names := make([]string, 0, len(architectures))
	for a := range architectures {
		names = append(names, a)
	}
	slices.Sort(names)
	if len(c.Architectures) > 0 {
		arch, ok := architectures[c.Architectures[0]]
		if !ok {
			return fmt.Errorf("key \"architectures\": %q is not supported (Driftwood runs %s)", c.Architectures[0], strings.Join(names, ", "))
		}
		if c.ModelType != "" && c.ModelType != arch {
			return fmt.Errorf("key \"model_type\": %q does not match architectures %q", c.ModelType, c.Architectures[0])
		}
	} else if c.ModelType != "" && !slices.Contains(slices.Collect(maps.Values(architectures)), c.ModelType) {
		return fmt.Errorf("key \"model_type\": %q is not supported (Driftwood runs llama, mistral, qwen2, qwen3)", c.ModelType)
	}
	switch arch := c.Arch(); {
	case arch == "mistral" && c.SlidingWindow != nil:
		return fmt.Errorf("key \"sliding_window\": %d: sliding-window attention is not implemented (Mistral 7B v0.2 and later set it to null)", *c.SlidingWindow)
	case (arch == "qwen2" || arch == "qwen3") && c.UseSlidingWindow:
		return errors.New("key \"use_sliding_window\": sliding-window attention is not implemented")
	}
	return nil
}
