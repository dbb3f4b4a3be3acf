package controllers

import (
	"errors"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// Host is the controller machinery of one model: the Wasm runtime, the
// registry of controllers (the folders', then the shipped ones) and the
// driver in the decode loop, with the conversation's key-value store.
// The CLI and the chat both assemble it here.
type Host struct {
	Runtime  *Runtime
	Registry *Registry
	Driver   *Driver
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
