package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// loaded is a model ready to generate: weights, tokenizer, chat template
// and a backend.
type loaded struct {
	model   *engine.Model
	tok     *tokenizer.Tokenizer // nil when the folder has no tokenizer.json
	tmpl    *chat.Template       // nil when it has no chat template
	backend engine.Backend
	took    time.Duration
}

// openModel loads the model folder dir on the CPU backend.
func openModel(dir string, threads int) (*loaded, error) {
	start := time.Now()
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("model %q: not a model folder (give the path of a folder with config.json and *.safetensors)", dir)
	}
	m, err := engine.LoadModel(dir)
	if err != nil {
		return nil, err
	}
	l := &loaded{model: m}
	tokPath := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(tokPath); err == nil {
		if l.tok, err = tokenizer.Load(tokPath); err != nil {
			m.Close()
			return nil, err
		}
		if l.tmpl, err = chat.Load(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.Close()
			return nil, err
		}
	}
	b, err := cpu.New(m, cpu.Options{Threads: threads})
	if err != nil {
		m.Close()
		return nil, err
	}
	l.backend = b
	l.took = time.Since(start)
	return l, nil
}

func (l *loaded) Close() {
	l.backend.Close()
	l.model.Close()
}

// stopTokens are the ids that end a reply: the model's eos ids and the
// chat template's end-of-turn token.
func (l *loaded) stopTokens() []int32 {
	ids := append([]int32(nil), l.model.Config.EOSTokenIDs...)
	if l.tmpl != nil && l.tok != nil {
		if id, ok := l.tok.TokenID(l.tmpl.EOS()); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// needTokenizer is the error for text work on a folder without one.
func (l *loaded) needTokenizer() error {
	if l.tok == nil {
		return fmt.Errorf("model %s has no tokenizer.json: give --prompt-ids instead of text", l.model.Dir)
	}
	return nil
}
