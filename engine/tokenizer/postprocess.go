package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
)

// templatePiece is one item of a TemplateProcessing "single" template:
// a special token or the sequence ($A).
type templatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

// setPostProcessor reads the special tokens that the post-processor adds
// around one sequence: none for ByteLevel (Qwen), the BOS of a
// TemplateProcessing "<s> $A" (Llama 2, Mistral, Llama 3). A Sequence of
// those is accepted; other post-processors are refused.
func (t *Tokenizer) setPostProcessor(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("post_processor: %w", err)
	}
	list := []component{c}
	if c.Type == "Sequence" {
		list = c.Processors
	}
	templates := 0
	for _, p := range list {
		switch p.Type {
		case "ByteLevel":
			// Offsets only; no tokens added.
		case "TemplateProcessing":
			templates++
			if err := t.setTemplate(p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unsupported post_processor %s (supported: ByteLevel, TemplateProcessing, a Sequence of them)", typeName(p))
		}
	}
	if templates > 1 {
		return fmt.Errorf("unsupported post_processor with %d TemplateProcessing steps", templates)
	}
	return nil
}

func typeName(c component) string {
	if c.Type == "" {
		return "an object without type"
	}
	return c.Type
}

// setTemplate reads the single-sequence template of a TemplateProcessing.
func (t *Tokenizer) setTemplate(c component) error {
	seen := false
	for _, p := range c.Single {
		switch {
		case p.Sequence != nil && p.SpecialToken == nil && !seen:
			seen = true
		case p.SpecialToken != nil && p.Sequence == nil:
			name := p.SpecialToken.ID
			st, ok := c.SpecialTokens[name]
			if !ok {
				return fmt.Errorf("post_processor: the template uses %q, which special_tokens does not define", name)
			}
			for _, id := range st.IDs {
				if id < 0 || int(id) >= len(t.tokens) {
					return fmt.Errorf("post_processor: special token %q has id %d, outside the vocabulary", name, id)
				}
			}
			if seen {
				t.suffix = append(t.suffix, st.IDs...)
			} else {
				t.prefix = append(t.prefix, st.IDs...)
			}
		default:
			return fmt.Errorf("post_processor: unsupported TemplateProcessing single template (want special tokens around one sequence)")
		}
	}
	if !seen {
		return fmt.Errorf("post_processor: TemplateProcessing single template without the sequence")
	}
	return nil
}

// AddSpecialTokens returns ids with the special tokens that the
// tokenizer's post-processor adds around one sequence (Hugging Face's
// add_special_tokens=True): the BOS for Llama 2, Mistral and Llama 3,
// nothing for Qwen.
func (t *Tokenizer) AddSpecialTokens(ids []int32) []int32 {
	return slices.Concat(t.prefix, ids, t.suffix)
}
