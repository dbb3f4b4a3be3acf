package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// component is the part of a normalizer, pre-tokenizer, decoder or
// post-processor object this package looks at.
type component struct {
	Type          string      `json:"type"`
	Pretokenizers []component `json:"pretokenizers"`
	Normalizers   []component `json:"normalizers"`
	Decoders      []component `json:"decoders"`
	Processors    []component `json:"processors"`
	Pattern       struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	UseRegex       *bool  `json:"use_regex"`
	AddPrefixSpace *bool  `json:"add_prefix_space"`
	Individual     bool   `json:"individual_digits"`
	// Prepend, Replace, Strip, Metaspace.
	Prepend       string `json:"prepend"`
	Content       string `json:"content"`
	Start         int    `json:"start"`
	Stop          int    `json:"stop"`
	Replacement   string `json:"replacement"`
	PrependScheme string `json:"prepend_scheme"`
	Split         *bool  `json:"split"`
	// TemplateProcessing.
	Single        []templatePiece `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens"`
}

// describe names a component for error messages: its type, the parts of
// a Sequence and the pattern of a Split.
func (c component) describe() string {
	switch {
	case c.Type == "Sequence":
		parts := make([]string, len(c.Pretokenizers))
		for i, p := range c.Pretokenizers {
			parts[i] = p.describe()
		}
		return "Sequence[" + strings.Join(parts, ", ") + "]"
	case c.Type == "Split" && c.Pattern.Regex != nil:
		return fmt.Sprintf("Split(Regex %q)", *c.Pattern.Regex)
	case c.Type == "Split" && c.Pattern.String != nil:
		return fmt.Sprintf("Split(String %q)", *c.Pattern.String)
	case c.Type == "ByteLevel":
		return fmt.Sprintf("ByteLevel(use_regex=%v, add_prefix_space=%v)", c.UseRegex == nil || *c.UseRegex, c.prefixSpace())
	case c.Type == "":
		return "an object without type"
	}
	return c.Type
}

// byteLevel reports whether c is a ByteLevel pre-tokenizer without a
// prefix space whose use_regex (default true) equals useRegex.
func (c component) byteLevel(useRegex bool) bool {
	return c.Type == "ByteLevel" && !c.prefixSpace() && (c.UseRegex == nil || *c.UseRegex) == useRegex
}

func (c component) prefixSpace() bool { return c.AddPrefixSpace != nil && *c.AddPrefixSpace }

// parsePreTokenizer recognises the supported pre-tokenizer shapes of
// byte-level BPE: ByteLevel with use_regex (GPT-2), Sequence[Digits,
// ByteLevel with use_regex] (SmolLM, StarCoder), and Sequence[Split(Llama 3,
// Qwen or GPT-2 regex, Isolated), ByteLevel without regex] (Llama 3, Qwen2,
// Qwen3).
func parsePreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	var c component
	if isNull(raw) {
		return preTokenizer{}, errors.New("no pre_tokenizer: a byte-level BPE tokenizer needs ByteLevel")
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return preTokenizer{}, fmt.Errorf("pre_tokenizer: %w", err)
	}
	if c.byteLevel(true) {
		return preTokenizer{split: splitGPT2}, nil
	}
	if p := c.Pretokenizers; c.Type == "Sequence" && len(p) == 2 {
		if p[0].Type == "Digits" && p[1].byteLevel(true) {
			mode := digitsContiguous
			if p[0].Individual {
				mode = digitsIndividual
			}
			return preTokenizer{digits: mode, split: splitGPT2}, nil
		}
		if s := p[0]; s.Type == "Split" && s.Pattern.Regex != nil && s.Behavior == "Isolated" && !s.Invert && p[1].byteLevel(false) {
			switch *s.Pattern.Regex {
			case llama3Pattern:
				return preTokenizer{split: splitLlama3}, nil
			case qwenPattern:
				return preTokenizer{split: splitQwen}, nil
			case gpt2Pattern:
				return preTokenizer{split: splitGPT2}, nil
			}
		}
	}
	return preTokenizer{}, fmt.Errorf("unsupported pre_tokenizer %s (supported: the Llama 3, Qwen or GPT-2 split regex with ByteLevel, optionally after Digits)", c.describe())
}

// typeOf returns the "type" field of a JSON object, or the raw text.
func typeOf(raw json.RawMessage) string {
	var c component
	if json.Unmarshal(raw, &c) == nil && c.Type != "" {
		return c.Type
	}
	return string(raw)
}

// parseDecoder recognises the ByteLevel decoder and the SentencePiece-style
// Sequence[Replace("▁" → " "), ByteFallback, Fuse, Strip(" ", n, 0)] (the
// Strip optional), returning the number of leading spaces the latter
// strips.
func parseDecoder(raw json.RawMessage) (sentencePiece bool, strip int, err error) {
	var c component
	if !isNull(raw) {
		if err := json.Unmarshal(raw, &c); err != nil {
			return false, 0, fmt.Errorf("decoder: %w", err)
		}
	}
	if c.Type == "ByteLevel" {
		return false, 0, nil
	}
	d := c.Decoders
	if c.Type == "Sequence" && len(d) >= 3 && len(d) <= 4 && d[0].isReplace("▁", " ") && d[1].Type == "ByteFallback" && d[2].Type == "Fuse" {
		if len(d) == 3 {
			return true, 0, nil
		}
		if s := d[3]; s.Type == "Strip" && s.Content == " " && s.Start >= 0 && s.Stop == 0 {
			return true, s.Start, nil
		}
	}
	desc := typeOf(raw)
	if c.Type == "Sequence" {
		parts := make([]string, len(d))
		for i, p := range d {
			parts[i] = p.Type
		}
		desc = "Sequence[" + strings.Join(parts, ", ") + "]"
	}
	return false, 0, fmt.Errorf("unsupported decoder %s (supported: ByteLevel, and Sequence[Replace(\"▁\" → \" \"), ByteFallback, Fuse, Strip(\" \", n, 0)])", desc)
}

// isReplace reports whether c is a Replace of the string from by to.
func (c component) isReplace(from, to string) bool {
	return c.Type == "Replace" && c.Pattern.String != nil && *c.Pattern.String == from && c.Pattern.Regex == nil && c.Content == to
}

// parseByteLevelNormalizer accepts no normalizer or NFC (Qwen2, Qwen3).
func parseByteLevelNormalizer(raw json.RawMessage) (nfc bool, err error) {
	if isNull(raw) {
		return false, nil
	}
	if typeOf(raw) == "NFC" {
		return true, nil
	}
	return false, fmt.Errorf("unsupported normalizer %s for byte-level BPE (supported: none, NFC)", typeOf(raw))
}
