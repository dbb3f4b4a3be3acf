// Package chatopen is the one way to open a chat: it turns a model name
// (a folder, or a Hugging Face repo id pulled into the cache first, with
// structured progress reports), a backend choice and settings into a
// loaded model (weights, tokenizer, chat template, backend), and the
// loaded model into a ready conversation (context window clamped to
// the model, generator settings, system prompt). run, bench, the
// session commands and the chat all open their model here, so that a
// change to the recipe lands once.
package chatopen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/hub"
	"github.com/driftwoodlabs/driftwood/internal/xdg"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// Options says how to open a model.
type Options struct {
	// Threads for the CPU backend; 0 means one per physical core.
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
	// NewBackend prepares the loaded model for the chosen backend; nil
	// means the CPU backend with Threads.
	NewBackend func(*engine.Model) (engine.Backend, error)
	// TokenizerCache is the folder of decoded tokenizers, from
	// tokenizer.json files and GGUF metadata (tokenizer.LoadCached,
	// FromGGUFCached; DefaultTokenizerCache); "" means none.
	TokenizerCache string
	// Note, when set, receives a line for the user about what the load
	// passed over (a cache entry that failed its checks and was
	// deleted); the model loads either way.
	Note func(string)
}

// DefaultTokenizerCache is $XDG_CACHE_HOME/driftwood/tokenizers.
func DefaultTokenizerCache() string { return xdg.Cache("tokenizers") }

// Loaded is a model ready to generate: its weights prepared for a
// backend, and its tokenizer and chat template when the folder has them.
// Close frees it.
type Loaded struct {
	// Name is how the user named the model (a repo id or a folder).
	Name string
	// Source is what opens the model again, recorded in its sessions.
	Source   sessions.ModelSource
	Weights  *engine.Model
	Tok      *tokenizer.Tokenizer // nil without tokenizer.json
	Template *chat.Template       // nil without a chat template
	Backend  engine.Backend
	// Rebuild is the conversations' conversation.Runtime.Rebuild.
	Rebuild func(tokens []int32, window int) (*engine.KVState, error)
	// LoadTime is how long Open took (without a download).
	LoadTime time.Duration
	// endOfTurn are the chat template's eos_token and the token it ends
	// an assistant turn with: they differ in a base model that ships a
	// ChatML template (eos <|endoftext|>, turns ending at <|im_end|>).
	endOfTurn []int32
}

// Open loads a model: name is a model folder or a Hugging Face repo id
// (pulled into the cache first if it is not there yet). The tokenizer
// and chat template are loaded when the folder has them (Tok/Template
// stay nil otherwise).
func Open(ctx context.Context, name string, opt Options) (*Loaded, error) {
	hopt := hub.OptionsFromEnv()
	if opt.Hub != nil {
		hopt = *opt.Hub
	}
	hopt.Progress, hopt.OnProgress = opt.Progress, opt.OnProgress
	dir, err := hub.ResolveModel(ctx, name, hopt)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	// Loading keeps nearly all it allocates (a GGUF vocabulary's strings,
	// the tokenizer's tables), so at the default GOGC the collector ran
	// cycle after cycle over a heap that only grew: a fifth of a 1B GGUF
	// model's load. The setting comes back when the load is done; a
	// GOGC already higher (or off) is left as it is.
	prev := debug.SetGCPercent(loadGCPercent)
	if prev < 0 || prev > loadGCPercent {
		debug.SetGCPercent(prev)
	}
	defer debug.SetGCPercent(prev)
	m, err := engine.LoadModel(dir)
	if err != nil {
		return nil, err
	}
	m.ReadAhead() // while the tokenizer loads
	l := &Loaded{Name: name, Weights: m, Source: sourceOf(name, dir)}
	if err := l.loadText(dir, opt.TokenizerCache, opt.Note); err != nil {
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
	l.Backend = b
	l.LoadTime = time.Since(start)
	return l, nil
}

// loadGCPercent is the least GOGC while a model loads.
const loadGCPercent = 400

// sourceOf is what opens the model the user named name (found at path, a
// folder or a GGUF file) again: the store's name for a model of ollama's
// or LM Studio's; its repo and commit when it is in a snapshot of the
// Hugging Face cache; and its absolute path.
func sourceOf(name, path string) sessions.ModelSource {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	src := sessions.ModelSource{Path: abs}
	if strings.HasPrefix(name, "ollama:") || strings.HasPrefix(name, "lmstudio:") {
		src.Store = name
		return src
	}
	snapshot := abs
	if engine.IsGGUF(abs) {
		snapshot, src.File = filepath.Dir(abs), filepath.Base(abs)
	}
	var ok bool
	if src.Repo, src.Revision, ok = hub.SnapshotOf(snapshot); !ok {
		src.File = ""
	}
	return src
}

func (l *Loaded) loadText(dir, tokenizerCache string, note func(string)) error {
	if f := l.Weights.GGUF; f != nil {
		tok, tmpl, passed, err := ggufText(f, tokenizerCache)
		if err != nil {
			return err
		}
		if passed != "" && note != nil {
			note(passed)
		}
		if err := l.Weights.CheckVocabulary(f.Path, tok.VocabSize()); err != nil {
			return err
		}
		l.Tok, l.Template = tok, tmpl
		l.setEndOfTurn()
		return nil
	}
	path := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	tok, passed, err := tokenizer.LoadCached(path, tokenizerCache)
	if err != nil {
		return err
	}
	if passed != "" && note != nil {
		note(passed)
	}
	l.Tok = tok
	if err := l.Weights.CheckVocabulary(path, l.Tok.VocabSize()); err != nil {
		return err
	}
	if l.Template, err = chat.Load(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	l.setEndOfTurn()
	return nil
}

// setEndOfTurn finds the chat template's eos_token and end of turn among
// the tokenizer's tokens.
func (l *Loaded) setEndOfTurn() {
	if l.Template == nil {
		return
	}
	if id, ok := l.Tok.TokenID(l.Template.EOS()); ok {
		l.endOfTurn = append(l.endOfTurn, id)
	}
	if id, ok := l.Template.EndOfTurn(l.Tok); ok {
		l.endOfTurn = append(l.endOfTurn, id)
	}
}

// Close frees the backend and unmaps the weights.
func (l *Loaded) Close() {
	l.Backend.Close()
	l.Weights.Close()
}

// Describe names the model for people: its name (a folder's or a file's
// base name) and shape.
func (l *Loaded) Describe() string {
	name := l.Name
	if _, err := os.Stat(name); name == "" || err == nil {
		name = filepath.Base(filepath.Clean(l.Weights.Dir))
	}
	return name + " (" + l.Weights.Config.Describe() + ")"
}

// StopTokens are the ids that end a reply: the model's end-of-sequence
// ids and the chat template's ends of turn.
func (l *Loaded) StopTokens() []int32 {
	ids := append([]int32(nil), l.Weights.Config.EOSTokenIDs...)
	for _, id := range l.endOfTurn {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// NeedTokenizer is the error for text work on a folder without one.
func (l *Loaded) NeedTokenizer() error {
	if l.Tok == nil {
		return fmt.Errorf("model %s has no tokenizer.json: give token ids instead of text", l.Weights.Dir)
	}
	return nil
}

// CanChat is the error for a chat on a folder without a tokenizer or a
// chat template (a base model rather than an instruct one).
func (l *Loaded) CanChat() error {
	if l.Tok == nil || l.Template == nil {
		return fmt.Errorf("%s has no tokenizer or no chat template: chatting needs an instruct (chat) model folder", l.Name)
	}
	return nil
}

// Window is the context window for a requested size: the request
// clamped to what the model was trained for (engine.Config.Window).
func (l *Loaded) Window(requested int) int { return l.Weights.Config.Window(requested) }

// Generator is a decode loop on the model's backend with sampling s,
// replies bounded to maxTokens (0: no bound) and ended by StopTokens.
func (l *Loaded) Generator(s engine.SamplerConfig, maxTokens int) *engine.Generator {
	vocab := l.Weights.Config.VocabSize
	gen := engine.NewGenerator(l.Backend, engine.NewSampler(s, vocab), vocab)
	gen.StopTokens, gen.MaxTokens = l.StopTokens(), maxTokens
	return gen
}

// ChatOptions are a new conversation's settings.
type ChatOptions struct {
	// Context is the context window asked for; the model's trained
	// length bounds it (Window).
	Context   int
	Sampler   engine.SamplerConfig
	MaxTokens int
	// System is the system prompt ("" for none).
	System string
	// Controller, when not nil, sees every step of every reply.
	Controller conversation.Controller
	// Prefixes, when not nil, is the prefix cache the first reply starts
	// from (conversation.Options.Prefixes).
	Prefixes *sessions.Prefixes
	// IgnoreEOS keeps replies going past end-of-turn tokens
	// (conversation.Options.IgnoreEOS).
	IgnoreEOS bool
}

// Chat starts an empty conversation on the model.
func (l *Loaded) Chat(opt ChatOptions) (*conversation.Conversation, error) {
	rt := conversation.Runtime{Label: l.Describe(), Source: l.Source, Weights: l.Weights, Tok: l.Tok, Template: l.Template, Backend: l.Backend, Generator: l.Generator, Rebuild: l.Rebuild}
	conv, err := conversation.New(rt, conversation.Options{Window: l.Window(opt.Context), Sampler: opt.Sampler, MaxTokens: opt.MaxTokens, Controller: opt.Controller, Prefixes: opt.Prefixes, IgnoreEOS: opt.IgnoreEOS})
	if err != nil {
		return nil, err
	}
	conv.SetSystem(opt.System)
	return conv, nil
}
