package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/hub"
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

// openModel loads a model on the CPU backend. name is a model folder or a
// Hugging Face repo id; a repo that is not cached yet is pulled first, with
// progress on errOut.
func openModel(ctx context.Context, name string, threads int, errOut io.Writer) (*loaded, error) {
	opt := hub.OptionsFromEnv()
	opt.Progress = errOut
	dir, err := hub.Resolve(name, opt)
	if errors.Is(err, hub.ErrNotCached) {
		dir, err = hub.Pull(ctx, name, opt)
	}
	if err != nil {
		return nil, err
	}
	start := time.Now()
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
