package controllers

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// Host is the controller machinery of one model: the Wasm runtime, the
// registry of controllers (the folders', then the shipped ones) and the
// driver in the decode loop, with the conversation's key-value store.
// The CLI and the chat both assemble it here; it is what a
// conversation.Conversation needs of its controllers (the decode loop's
// hook, through the embedded Driver, and the methods below), so that the
// conversation does not depend on the Wasm host.
type Host struct {
	Runtime  *Runtime
	Registry *Registry
	*Driver
}

// Running is the controller that runs now, as a session records it
// (without its store); ok is false when none runs.
func (h *Host) Running() (c sessions.Controller, ok bool) {
	mod, arg := h.Driver.Current()
	if mod == nil {
		return sessions.Controller{}, false
	}
	return sessions.Controller{Name: mod.Name, Path: loadedFrom(mod), Arg: arg, SHA256: mod.SHA256}, true
}

// loadedFrom is the absolute path of the file mod was loaded from, or ""
// for a shipped controller.
func loadedFrom(mod *Module) string {
	abs, err := filepath.Abs(mod.Path)
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return abs
}

// Store is a copy of the conversation's key-value store.
func (h *Host) Store() map[string][]byte { return h.KV().Snapshot() }

// RestoreStore replaces the key-value store with kv (from a session).
func (h *Host) RestoreStore(kv map[string][]byte) error { return h.KV().Restore(kv) }

// Resume turns on the controller c names, found by name, else by the
// path it was loaded from, with its argument, through the same check as
// Switch (SwitchTo); it returns the hash of the module now running. On
// an error nothing changes.
func (h *Host) Resume(c sessions.Controller) (sha256 string, err error) {
	if h.Registry == nil {
		return "", errors.New("no controllers registry")
	}
	mod, err := h.Registry.Get(c.Name)
	if err != nil && c.Path != "" {
		if byPath, perr := h.Registry.Get(c.Path); perr == nil {
			mod, err = byPath, nil
		}
	}
	if err != nil {
		return "", err
	}
	if err := h.SwitchTo(mod, c.Arg); err != nil {
		return "", err
	}
	return mod.SHA256, nil
}

// HostOptions configures NewHost.
type HostOptions struct {
	// Dirs are the controllers folders, searched in order before the
	// shipped controllers.
	Dirs []string
	// CacheDir holds compiled modules ("" compiles every time).
	CacheDir string
	// Log receives the controllers' log lines and faults, on the driver's
	// worker goroutine: it must not block.
	Log func(Log)
}

// NewHost starts the controllers for a model with tokenizer tok and vocab
// rows of logits, with the default limits.
func NewHost(tok *tokenizer.Tokenizer, vocab int, opt HostOptions) (*Host, error) {
	if tok == nil {
		return nil, errors.New("controllers need the model's tokenizer.json")
	}
	rt := NewRuntime(DefaultLimits(), opt.CacheDir)
	reg, err := NewRegistry(rt, opt.Dirs...)
	if err != nil {
		rt.Close()
		return nil, err
	}
	d := NewDriver(rt, NewVocab(tok, vocab), NewKV(), reg, opt.Log)
	return &Host{Runtime: rt, Registry: reg, Driver: d}, nil
}

// Close stops the driver, the registry and the runtime, in that order; a
// second call does nothing.
func (h *Host) Close() {
	if h.Driver == nil {
		return
	}
	h.Driver.Close()
	h.Registry.Close()
	h.Runtime.Close()
	h.Driver, h.Registry, h.Runtime = nil, nil, nil
}
