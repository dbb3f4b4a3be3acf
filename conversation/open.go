package conversation

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

// OpenOptions says how to open a model.
type OpenOptions struct {
	// Threads for the CPU backend; 0 means one per core.
	Threads int
	// Progress receives download progress when the model must be pulled
	// first; nil means none.
	Progress io.Writer
	// OnProgress, when set, receives each download progress report
	// instead (hub.Options.OnProgress).
	OnProgress func(hub.ProgressReport)
	// Hub is where repo ids are resolved; the zero value means the
	// environment's settings (hub.OptionsFromEnv).
	Hub *hub.Options
	// NewBackend prepares the loaded model for a backend; nil means the
	// CPU backend with Threads.
	NewBackend func(*engine.Model) (engine.Backend, error)
}

// Open loads a model ready to chat: name is a model folder or a Hugging
// Face repo id (pulled into the cache first if it is not there yet). The
// tokenizer and chat template are loaded when the folder has them
// (Tok/Template stay nil otherwise). LoadTime is set.
func Open(ctx context.Context, name string, opt OpenOptions) (*Model, error) {
	hopt := hub.OptionsFromEnv()
	if opt.Hub != nil {
		hopt = *opt.Hub
	}
	hopt.Progress, hopt.OnProgress = opt.Progress, opt.OnProgress
	dir, err := hub.Resolve(name, hopt)
	if errors.Is(err, hub.ErrNotCached) {
		dir, err = hub.Pull(ctx, name, hopt)
	}
	if err != nil {
		return nil, err
	}
	start := time.Now()
	m, err := engine.LoadModel(dir)
	if err != nil {
		return nil, err
	}
	mod := &Model{Name: name, Model: m}
	if err := mod.loadText(dir); err != nil {
		m.Close()
		return nil, err
	}
	newBackend := opt.NewBackend
	if newBackend == nil {
		newBackend = func(m *engine.Model) (engine.Backend, error) { return cpu.New(m, cpu.Options{Threads: opt.Threads}) }
	}
	b, err := newBackend(m)
	if err != nil {
		m.Close()
		return nil, err
	}
	mod.Backend = b
	mod.LoadTime = time.Since(start)
	return mod, nil
}

func (m *Model) loadText(dir string) error {
	path := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	var err error
	if m.Tok, err = tokenizer.Load(path); err != nil {
		return err
	}
	if err := m.Model.CheckVocabulary(path, m.Tok.VocabSize()); err != nil {
		return err
	}
	if m.Template, err = chat.Load(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Close frees the backend and unmaps the weights.
func (m *Model) Close() {
	m.Backend.Close()
	m.Model.Close()
}

// StopTokens are the ids that end a reply: the model's end-of-sequence ids
// and the chat template's end-of-turn token.
func (m *Model) StopTokens() []int32 {
	ids := append([]int32(nil), m.Model.Config.EOSTokenIDs...)
	if m.Template != nil && m.Tok != nil {
		if id, ok := m.Tok.TokenID(m.Template.EOS()); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// NeedTokenizer is the error for text work on a folder without one.
func (m *Model) NeedTokenizer() error {
	if m.Tok == nil {
		return fmt.Errorf("model %s has no tokenizer.json: give token ids instead of text", m.Model.Dir)
	}
	return nil
}
