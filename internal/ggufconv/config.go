package ggufconv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// configFile is the config.json the folder gets: the keys Hugging Face
// and mlx-lm read for these architectures, from engine.Config.
type configFile struct {
	Architectures         []string     `json:"architectures"`
	ModelType             string       `json:"model_type"`
	HiddenSize            int          `json:"hidden_size"`
	NumHiddenLayers       int          `json:"num_hidden_layers"`
	NumAttentionHeads     int          `json:"num_attention_heads"`
	NumKeyValueHeads      int          `json:"num_key_value_heads"`
	HeadDim               int          `json:"head_dim"`
	IntermediateSize      int          `json:"intermediate_size"`
	HiddenAct             string       `json:"hidden_act"`
	RMSNormEps            json.Number  `json:"rms_norm_eps"`
	RopeTheta             float64      `json:"rope_theta"`
	RopeScaling           *ropeScaling `json:"rope_scaling,omitempty"`
	MaxPositionEmbeddings int          `json:"max_position_embeddings"`
	VocabSize             int          `json:"vocab_size"`
	TieWordEmbeddings     bool         `json:"tie_word_embeddings"`
	BOSTokenID            *int32       `json:"bos_token_id,omitempty"`
	EOSTokenID            []int32      `json:"eos_token_id,omitempty"`
	Quantization          *quantFile   `json:"quantization,omitempty"`
}

// ropeScaling is config.json's llama3 rope_scaling.
type ropeScaling struct {
	RopeType                      string  `json:"rope_type"`
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`
	HighFreqFactor                float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
}

type quantFile struct {
	GroupSize int `json:"group_size"`
	Bits      int `json:"bits"`
}

// configJSON is the folder's config.json for a GGUF file's configuration
// c, with the folder's quantisation (bits, 0 for none) and tied or untied
// output layer. rope_theta is the GGUF file's float32 as a float64, as
// engine.Config has it; rms_norm_eps is written as the shortest decimal
// of its float32 (1e-05, not 0.000009999999747378752), which the
// backends use as that float32.
func configJSON(c *engine.Config, bits int, tied bool) ([]byte, error) {
	rs, err := ropeScalingOf(c)
	if err != nil {
		return nil, err
	}
	f := configFile{
		Architectures: c.Architectures, ModelType: c.ModelType,
		HiddenSize: c.HiddenSize, NumHiddenLayers: c.NumHiddenLayers,
		NumAttentionHeads: c.NumAttentionHeads, NumKeyValueHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim,
		IntermediateSize: c.IntermediateSize, HiddenAct: c.HiddenAct,
		RMSNormEps: json.Number(strconv.FormatFloat(c.RMSNormEps, 'g', -1, 32)), RopeTheta: c.RopeTheta, RopeScaling: rs,
		MaxPositionEmbeddings: c.MaxPositionEmbeddings, VocabSize: c.VocabSize,
		TieWordEmbeddings: tied, BOSTokenID: c.BOSTokenID, EOSTokenID: c.EOSTokenIDs,
	}
	if bits != 0 {
		f.Quantization = &quantFile{GroupSize: group, Bits: bits}
	}
	return marshal(f)
}

// marshal is json.MarshalIndent without HTML escapes: a chat template
// and its tokens ("<|eot_id|>") stay readable.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(v)
	return b.Bytes(), err
}

// ropeTol bounds the relative difference of each rotary frequency that a
// rope_scaling may give from the file's: rope_freqs are float32, so its
// own rounding is 6e-8.
const ropeTol = 1e-6

// ropeScalingOf is the llama3 rope_scaling that gives the frequencies
// that c's rope_freqs (Config.RopeFactors) give, nil when there are
// none or all are 1. llama3 scaling divides the frequencies of
// wavelengths above lowWL (L/low_freq_factor) by factor, keeps those
// below highWL (L/high_freq_factor), and between them blends the two
// linearly in 1/wavelength: 1/f = 1/factor + (1 − 1/factor)·s, s rising
// from 0 at lowWL to 1 at highWL. So factor is the largest of the
// factors, and the ones between 1 and factor fix the line, when two or
// more are; L is then lowWL rounded. With fewer, L is the longest whole
// wavelength at or below the shortest divided by the whole factor, and
// low_freq_factor 1, as Llama 3's. The parameters are rounded to 6
// digits where that keeps every frequency within ropeTol.
//
// # Errors
//
// Factors that no llama3 scaling gives within ropeTol.
func ropeScalingOf(c *engine.Config) (*ropeScaling, error) {
	f := c.RopeFactors
	if !slices.ContainsFunc(f, func(x float64) bool { return x != 1 }) {
		return nil, nil
	}
	top := slices.Max(f)
	type point struct{ u, s float64 } // 1/wavelength, s
	var mids []point
	lowU, highU := 0.0, math.Inf(1) // the edges of the factors top and 1
	for i, x := range f {
		u := 1 / (2 * math.Pi * math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim)))
		switch x {
		case top:
			lowU = max(lowU, u)
		case 1:
			highU = min(highU, u)
		default:
			mids = append(mids, point{u, (1/x - 1/top) / (1 - 1/top)})
		}
	}
	uLo, uHi := 1/math.Floor(1/lowU), highU
	switch n := len(mids); {
	case n >= 2:
		a, b := mids[0], mids[n-1]
		slope := (b.s - a.s) / (b.u - a.u)
		uLo = a.u - a.s/slope
		uHi = uLo + 1/slope
	case n == 1:
		uHi = uLo + (mids[0].u-uLo)/mids[0].s
	case math.IsInf(uHi, 1):
		uHi = 2 * uLo
	}
	err := fmt.Errorf("tensor rope_freqs.weight: its factors (%g to %g) are not those of any llama3 rope scaling, the one Driftwood writes to config.json", slices.Min(f), top)
	if !(uLo > 0 && uHi > uLo && top > 1) || math.IsInf(uHi, 0) {
		return nil, err
	}
	L := max(1, math.Round(1/uLo))
	raw := ropeScaling{RopeType: "llama3", Factor: top, LowFreqFactor: L * uLo, HighFreqFactor: L * uHi, OriginalMaxPositionEmbeddings: int(L)}
	rounded := raw
	for _, p := range []*float64{&rounded.Factor, &rounded.LowFreqFactor, &rounded.HighFreqFactor} {
		*p, _ = strconv.ParseFloat(strconv.FormatFloat(*p, 'g', 6, 64), 64)
	}
	for _, s := range []ropeScaling{rounded, raw} {
		if sameFrequencies(c, s) {
			return &s, nil
		}
	}
	return nil, err
}

// sameFrequencies reports whether rope_scaling s gives c's rotary
// frequencies within ropeTol.
func sameFrequencies(c *engine.Config, s ropeScaling) bool {
	try := *c
	try.RopeFactors = nil
	try.RopeScaling = &engine.RopeScaling{RopeType: s.RopeType, Factor: s.Factor, LowFreqFactor: s.LowFreqFactor,
		HighFreqFactor: s.HighFreqFactor, OriginalMaxPositionEmbeddings: s.OriginalMaxPositionEmbeddings}
	got, want := try.InvFreq(), c.InvFreq()
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= ropeTol*want[i]) {
			return false
		}
	}
	return true
}

// tokenizerConfigFile is the folder's tokenizer_config.json: the chat
// template and the texts of the tokens it calls bos_token and eos_token.
// tokenizer_class keeps transformers from putting its own BOS handling
// on the tokenizer.json (LlamaTokenizerFast would).
type tokenizerConfigFile struct {
	TokenizerClass string `json:"tokenizer_class"`
	BOSToken       string `json:"bos_token,omitempty"`
	EOSToken       string `json:"eos_token,omitempty"`
	ChatTemplate   string `json:"chat_template,omitempty"`
}

// tokenizerConfig is the tokenizer_config.json for a GGUF file's metadata
// and vocabulary v: tokenizer.chat_template, and the texts of v's BOS
// and EOS, as chatopen reads them from the file.
func tokenizerConfig(m gguf.Metadata, v tokenizer.GGUFVocab) ([]byte, error) {
	f := tokenizerConfigFile{TokenizerClass: "PreTrainedTokenizerFast"}
	if v.BOS >= 0 {
		f.BOSToken = v.Tokens[v.BOS]
	}
	if v.EOS >= 0 {
		f.EOSToken = v.Tokens[v.EOS]
	}
	if m.Has("tokenizer.chat_template") {
		var err error
		if f.ChatTemplate, err = m.String("tokenizer.chat_template"); err != nil {
			return nil, err
		}
	}
	return marshal(f)
}
