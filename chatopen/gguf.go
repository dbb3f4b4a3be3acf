package chatopen

import (
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// ggufText reads the tokenizer and the chat template a GGUF file's
// metadata carries (tokenizer.ggml.*, tokenizer.chat_template): the same
// tokenizer and template code as tokenizer.json and
// tokenizer_config.json, from the other reader. A file without a chat
// template gives a nil template. The tokenizer comes from the cache in
// tokenizerCache ("" for none) when it has it; note is as
// tokenizer.LoadCached's.
func ggufText(f *gguf.File, tokenizerCache string) (tok *tokenizer.Tokenizer, tmpl *chat.Template, note string, err error) {
	v, err := tokenizer.ReadGGUFVocab(f.Meta)
	if err != nil {
		return nil, nil, "", err
	}
	tok, note, err = tokenizer.FromGGUFCached(v, f.Path, tokenizerCache)
	if err != nil {
		return nil, nil, note, err
	}
	m := f.Meta
	if !m.Has("tokenizer.chat_template") {
		return tok, nil, note, nil
	}
	src, err := m.String("tokenizer.chat_template")
	if err != nil {
		return nil, nil, note, err
	}
	text := func(id int32) string {
		if id < 0 || int(id) >= len(v.Tokens) {
			return ""
		}
		return v.Tokens[id]
	}
	if tmpl, err = chat.FromSource(src, text(v.BOS), text(v.EOS), f.Path); err != nil {
		return nil, nil, note, err
	}
	return tok, tmpl, note, nil
}
