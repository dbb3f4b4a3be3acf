package tokenizer

import (
	"errors"
	"fmt"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

// OpenGGUF reads the tokenizer a GGUF file's metadata carries.
func OpenGGUF(f *gguf.File) (*Tokenizer, error) {
	v, err := ReadGGUFVocab(f.Meta)
	if err != nil {
		return nil, err
	}
	return FromGGUF(v, f.Path)
}

// ReadGGUFVocab reads the tokenizer.ggml.* keys of a GGUF file's
// metadata, for FromGGUF (and for a converter that writes the
// tokenizer.json they stand for).
func ReadGGUFVocab(m gguf.Metadata) (GGUFVocab, error) {
	v := GGUFVocab{BOS: -1, EOS: -1, EOT: -1, Unknown: -1, Padding: -1}
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
