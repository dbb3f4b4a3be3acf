package chatopen

import (
	"errors"
	"fmt"

	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// ggufText reads the tokenizer and the chat template a GGUF file's
// metadata carries (tokenizer.ggml.*, tokenizer.chat_template): the same
// tokenizer and template code as tokenizer.json and
// tokenizer_config.json, from the other reader. A file without a chat
// template gives a nil template.
func ggufText(f *gguf.File) (*tokenizer.Tokenizer, *chat.Template, error) {
	v, err := GGUFVocab(f.Meta)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.FromGGUF(v, f.Path)
	if err != nil {
		return nil, nil, err
	}
	m := f.Meta
	if !m.Has("tokenizer.chat_template") {
		return tok, nil, nil
	}
	src, err := m.String("tokenizer.chat_template")
	if err != nil {
		return nil, nil, err
	}
	text := func(id int32) string {
		if id < 0 || int(id) >= len(v.Tokens) {
			return ""
		}
		return v.Tokens[id]
	}
	tmpl, err := chat.FromSource(src, text(v.BOS), text(v.EOS), f.Path)
	if err != nil {
		return nil, nil, err
	}
	return tok, tmpl, nil
}

// GGUFTokenizer reads the tokenizer a GGUF file's metadata carries, for
// the commands that need no model.
func GGUFTokenizer(f *gguf.File) (*tokenizer.Tokenizer, error) {
	v, err := GGUFVocab(f.Meta)
	if err != nil {
		return nil, err
	}
	return tokenizer.FromGGUF(v, f.Path)
}

// GGUFVocab reads the tokenizer.ggml.* keys of a GGUF file's metadata,
// for tokenizer.FromGGUF (and for a converter that writes the
// tokenizer.json they stand for).
func GGUFVocab(m gguf.Metadata) (tokenizer.GGUFVocab, error) {
	v := tokenizer.GGUFVocab{BOS: -1, EOS: -1, EOT: -1, Unknown: -1, Padding: -1}
	var errs []error
	str := func(dst *string, key string) {
		var err error
		if *dst, err = m.String(key); err != nil {
			errs = append(errs, err)
		}
	}
	str(&v.Model, "tokenizer.ggml.model")
	if m.Has("tokenizer.ggml.pre") {
		str(&v.Pre, "tokenizer.ggml.pre")
	}
	var err error
	if v.Tokens, err = m.Strings("tokenizer.ggml.tokens"); err != nil {
		errs = append(errs, err)
	}
	for _, o := range []struct {
		key string
		get func(string) error
	}{
		{"tokenizer.ggml.token_type", func(k string) (err error) { v.Types, err = m.Int32s(k); return }},
		{"tokenizer.ggml.scores", func(k string) (err error) { v.Scores, err = m.Float32s(k); return }},
		{"tokenizer.ggml.merges", func(k string) (err error) { v.Merges, err = m.Strings(k); return }},
	} {
		if m.Has(o.key) {
			errs = append(errs, o.get(o.key))
		}
	}
	for _, id := range []struct {
		key string
		dst *int32
	}{
		{"tokenizer.ggml.bos_token_id", &v.BOS}, {"tokenizer.ggml.eos_token_id", &v.EOS}, {"tokenizer.ggml.eot_token_id", &v.EOT},
		{"tokenizer.ggml.unknown_token_id", &v.Unknown}, {"tokenizer.ggml.padding_token_id", &v.Padding},
	} {
		if m.Has(id.key) {
			n, err := m.Uint(id.key)
			if err == nil && n >= 1<<31 {
				err = fmt.Errorf("key %s: %d is not a token id", id.key, n)
			}
			errs = append(errs, err)
			if err == nil {
				*id.dst = int32(n)
			}
		}
	}
	for _, b := range []struct {
		key string
		dst **bool
	}{
		{"tokenizer.ggml.add_bos_token", &v.AddBOS}, {"tokenizer.ggml.add_eos_token", &v.AddEOS}, {"tokenizer.ggml.add_space_prefix", &v.AddSpacePrefix},
	} {
		if m.Has(b.key) {
			on, err := m.Bool(b.key)
			errs = append(errs, err)
			*b.dst = &on
		}
	}
	return v, errors.Join(errs...)
}
