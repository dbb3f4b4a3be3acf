package controllers

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/controlrecord"
)

// Host is the controllers of one model, and what the rest of the program
// knows of them: it finds and compiles controllers (in its folders, then
// the shipped ones), runs the one switched on inside the decode loop
// (it is the loop's engine.ReplyHook) with the conversation's key-value
// store, and records which controller governed each reply. It is what a
// conversation.Conversation needs of its controllers, so that the
// conversation does not depend on the Wasm host. The CLI and the chat
// both make it with NewHost; Close releases it.
type Host struct {
	rt  *wasmRuntime
	reg *registry
	d   *driver
	// listOnly says the host has no model (HostOptions.ListOnly).
	listOnly bool
}

var _ engine.ReplyHook = (*Host)(nil)

// Log is a line for the user: a controller's output, or why it stopped.
type Log struct {
	Controller string
	Text       string
	// Fault marks the message that disabled the controller.
	Fault bool
}

// HostOptions configures NewHost.
type HostOptions struct {
	// Dirs are the controllers folders, searched in order before the
	// shipped controllers.
	Dirs []string
	// CacheDir holds compiled modules ("" compiles every time). It is
	// made private to the user (0700) at its first use, not used if it
	// belongs to someone else, and trimmed to a bound (the least recently
	// used modules go first).
	CacheDir string
	// Log receives the controllers' log lines and faults, on the decode
	// loop's worker goroutine: it must not block.
	Log func(Log)
	// ListOnly makes a host without a model, to list the controllers
	// and say what arguments they take (`driftwood controllers`): NewHost
	// ignores its tokenizer and vocabulary size, and Switch and Resume
	// refuse.
	ListOnly bool
}

// errListOnly is the refusal of a host made with HostOptions.ListOnly.
var errListOnly = errors.New("this controller host only lists controllers: it has no model to run them on")

// NewHost starts the controllers for a model with tokenizer tok and vocab
// rows of logits, with the limits of ABI.md.
func NewHost(tok *tokenizer.Tokenizer, vocab int, opt HostOptions) (*Host, error) {
	if tok == nil && !opt.ListOnly {
		return nil, errors.New("controllers need the model's tokenizer.json")
	}
	rt := newWasmRuntime(defaultLimits(), opt.CacheDir)
	reg, err := newRegistry(rt, Shipped, opt.Dirs...)
	if err != nil {
		rt.Close()
		return nil, err
	}
	v := noVocab
	if !opt.ListOnly {
		v = newVocabulary(tok, vocab)
	}
	return &Host{rt: rt, reg: reg, d: newDriver(rt, v, newKVStore(), reg, opt.Log), listOnly: opt.ListOnly}, nil
}

// Close stops the controller, the watching of the folders and the Wasm
// runtime, in that order; a second call does nothing.
func (h *Host) Close() {
	if h.d == nil {
		return
	}
	h.d.Close()
	h.reg.Close()
	h.rt.Close()
	h.d, h.reg, h.rt = nil, nil, nil
}

// Begin implements engine.Hook: the controller's step starts on the
// host's worker goroutine while the backend computes the logits.
func (h *Host) Begin(tokens []int32) { h.d.Begin(tokens) }

// End implements engine.Hook: it waits for the step and returns what the
// controller decided, its mask read in place from the guest's memory.
func (h *Host) End(logits []float32) engine.Directive { return h.d.End(logits) }

// StartReply implements engine.ReplyHook: the reply's first token will
// be at position start, and it may keep at most limit tokens. A
// controller a fault disabled in the previous reply gets a fresh
// instance, and the reply's step and take-back budgets start whole.
func (h *Host) StartReply(start, limit int) { h.d.StartReply(start, limit) }

// Revocable is how many of the reply's last tokens a controller may
// still take back (0 when none runs, or none will from the next step);
// the reply's text before them is final, so a printer may show it as
// such. Call it between steps, as the decode loop's events are.
func (h *Host) Revocable() int { return h.d.Revocable() }

// ReplyControls returns the stretches of the reply begun at the last
// StartReply (so far, while it runs), in order, each under one
// controller: the first, From 0, names the controller active at the
// reply's start (Name "" for none); a switch adds one From the number of
// reply tokens at the step where it took effect, and a fault one with
// Name "" and Fault set ("NAME: reason"). The slice is a copy.
func (h *Host) ReplyControls() []controlrecord.ReplyControl { return h.d.ReplyControls() }

// Current returns the active (or about to be active) controller and its
// argument; mod is nil when none.
func (h *Host) Current() (mod *Module, arg string) { return h.d.Current() }

// Idle implements engine.IdleHook: no controller is on, nor about to be.
func (h *Host) Idle() bool {
	mod, _ := h.d.Current()
	return mod == nil
}

// Off switches the controller off from the next step on.
func (h *Host) Off() { h.d.Off() }

// Switch makes the controller nameOrPath (a name in the folders, then
// among the shipped controllers, or a path to a .wasm or .wat file),
// with its argument, the active one from the next step on, once it has
// checked that it runs, and returns its module. The check refuses an
// empty argument that the controller describes as required
// (Module.Describe), then starts an instance and runs its dw_init with
// arg; the controller's next step runs on that very instance. It blocks
// for the compile (the first use of a module: a second or so, unless the
// disk cache has it) and dw_init: a front-end calls it off its UI
// goroutine.
//
// # Errors
//
// A name that finds no controller, a module that does not compile, or a
// refusal: nothing changes, the previous controller stays active, and
// the key-value store keeps none of what the refused dw_init wrote. The
// error says what was refused and why: the guest's own last log lines,
// and the argument the controller takes when it describes it.
func (h *Host) Switch(nameOrPath, arg string) (*Module, error) {
	if h.listOnly {
		return nil, errListOnly
	}
	mod, err := h.reg.Get(nameOrPath)
	if err != nil {
		return nil, err
	}
	if err := h.d.SwitchTo(mod, arg); err != nil {
		return nil, err
	}
	return mod, nil
}

// Running is the controller that runs now, as a session records it
// (without its store); ok is false when none runs.
func (h *Host) Running() (c controlrecord.Controller, ok bool) {
	mod, arg := h.d.Current()
	if mod == nil {
		return controlrecord.Controller{}, false
	}
	return controlrecord.Controller{Name: mod.Name, Path: loadedFrom(mod), Arg: arg, SHA256: mod.SHA256}, true
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
func (h *Host) Store() map[string][]byte { return h.d.kv.Snapshot() }

// RestoreStore replaces the key-value store with kv (from a session).
func (h *Host) RestoreStore(kv map[string][]byte) error { return h.d.kv.Restore(kv) }

// Resume turns on the controller c names, found by name, else by the
// path it was loaded from, with its argument, through the same check as
// Switch; it returns the hash of the module now running. On an error
// nothing changes.
func (h *Host) Resume(c controlrecord.Controller) (sha256 string, err error) {
	if h.listOnly {
		return "", errListOnly
	}
	mod, err := h.reg.Get(c.Name)
	if err != nil && c.Path != "" {
		if byPath, perr := h.reg.Get(c.Path); perr == nil {
			mod, err = byPath, nil
		}
	}
	if err != nil {
		return "", err
	}
	if err := h.d.SwitchTo(mod, c.Arg); err != nil {
		return "", err
	}
	return mod.SHA256, nil
}

// Controllers returns the controllers a name finds, by name: of each
// name, the file in the earliest folder, else the shipped one.
func (h *Host) Controllers() []Entry { return h.reg.List() }

// AllControllers returns every controller the host knows, by name, and
// for each name in search order: the files in the folders, in the order
// of the folders, then the shipped one. The first of each name is Used;
// the others are the ones it overrides.
func (h *Host) AllControllers() []Entry { return h.reg.All() }

// Argument describes the argument entry e's controller takes in one line
// for people ("required: a Go regular expression, …", "optional: …",
// "(not described)", or why it could not be asked), and whether an
// empty argument is refused. It compiles the module first when it has
// not been (a second or so): listings call it off their UI goroutine.
func (h *Host) Argument(e Entry) (line string, required bool) { return h.reg.Argument(e) }
