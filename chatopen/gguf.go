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
// template gives a nil template.
func ggufText(f *gguf.File) (*tokenizer.Tokenizer, *chat.Template, error) {
	v, err := tokenizer.ReadGGUFVocab(f.Meta)
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
