// Package controllers hosts WebAssembly controllers: sandboxed modules that
// see every token of a reply and restrict what may come next (ABI.md). It
// compiles and caches modules, runs one instance per conversation behind
// engine.Hook, survives every guest fault, and reloads changed modules.
//
// Built on wasmtime-go, which has no component model: controllers are core
// Wasm modules with the small ABI of ABI.md.
package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// Limits bound what a controller may use.
type Limits struct {
	// InitTime bounds _initialize plus dw_load, and then dw_init.
	InitTime time.Duration
	// StepTime bounds one dw_begin or dw_step.
	StepTime time.Duration
	// Memory bounds the guest's linear memory in bytes.
	Memory int64
	// TakeBack bounds the tokens taken back in one reply.
	TakeBack int
	// ReplySteps bounds the steps of one reply: one that may keep n tokens
	// gets at most 2n + ReplySteps. Without take-backs every step but the
	// last keeps a token, so only a controller that keeps taking tokens
	// back runs into it.
	ReplySteps int
}

// DefaultLimits are the limits of ABI.md.
func DefaultLimits() Limits {
	return Limits{InitTime: 2 * time.Second, StepTime: 50 * time.Millisecond, Memory: 256 << 20, TakeBack: 1024, ReplySteps: 64}
}

// epochTick is how often the runtime advances wasmtime's epoch; time
// budgets are counted in ticks.
const epochTick = time.Millisecond

// Runtime compiles controllers and runs their instances. One Runtime
// serves the whole process.
type Runtime struct {
	engine   *wasmtime.Engine
	limits   Limits
	cacheDir string // compiled modules; "" disables the disk cache
	stop     chan struct{}
	stopped  chan struct{} // closed when the ticker has returned
	once     sync.Once
	mu       sync.Mutex
	modules  []*Module // closed with the runtime
	spares   map[spareKey]*instance
	order    []spareKey                 // spares from oldest to newest
	pending  map[spareKey]chan struct{} // spares being prepared; closed when done
	replaced map[*Module]bool           // modules a newer build replaced: no spares
	closed   bool
	work     sync.WaitGroup // spare preparations in flight

	// cacheOnce checks cacheDir at its first use; cacheOff then says why
	// it is not used ("" when it is).
	cacheOnce sync.Once
	cacheOff  string
	// cacheLimit bounds the cache folder's bytes (CacheLimit; tests
	// lower it).
	cacheLimit int64
}

// spareKey names what a spare instance was prepared for.
type spareKey struct {
	mod   *Module
	vocab *Vocab
}

// NewRuntime starts a runtime. cacheDir holds compiled modules keyed by the
// module's sha256 and the engine's settings, each checked against its
// checksum before it is used ("" for no disk cache); it is made private
// to the user (0700) at its first use, and not used if it belongs to
// someone else, and kept under CacheLimit bytes.
func NewRuntime(limits Limits, cacheDir string) *Runtime {
	// A fault's backtrace costs ~10 ms per trap; the user never sees it.
	os.Unsetenv("RUST_BACKTRACE")
	cfg := wasmtime.NewConfig()
	cfg.SetEpochInterruption(true)
	rt := &Runtime{engine: wasmtime.NewEngineWithConfig(cfg), limits: limits, cacheDir: cacheDir, cacheLimit: CacheLimit, stop: make(chan struct{}), stopped: make(chan struct{}),
		spares: map[spareKey]*instance{}, pending: map[spareKey]chan struct{}{}, replaced: map[*Module]bool{}}
	go rt.tick()
	return rt
}

// tick advances the epoch so that a running guest is interrupted once its
// deadline (set before each call) passes.
func (rt *Runtime) tick() {
	t := time.NewTicker(epochTick)
	defer t.Stop()
	defer close(rt.stopped)
	for {
		select {
		case <-t.C:
			rt.engine.IncrementEpoch()
		case <-rt.stop:
			return
		}
	}
}

// Close stops the runtime and frees its modules and engine. Drivers must
// be closed first; nothing of the runtime may be used afterwards.
// (wasmtime-go's finalizers run in no particular order, so freeing a
// module after its engine would crash: the runtime frees them in order.)
func (rt *Runtime) Close() {
	rt.once.Do(func() {
		rt.mu.Lock()
		rt.closed = true
		rt.mu.Unlock()
		rt.work.Wait()
		close(rt.stop)
		<-rt.stopped
		rt.mu.Lock()
		defer rt.mu.Unlock()
		for k, in := range rt.spares {
			in.close()
			rt.removeSpare(k)
		}
		for _, m := range rt.modules {
			m.linker.Close()
			m.module.Close()
		}
		rt.modules = nil
		rt.engine.Close()
	})
}

// ticks converts a time budget to epoch ticks.
func ticks(d time.Duration) uint64 { return uint64(d/epochTick) + 1 }

// Module is a compiled controller.
type Module struct {
	Name   string // file name without extension
	Path   string
	SHA256 string // of the .wasm bytes (or of the .wat source)
	module *wasmtime.Module
	linker *wasmtime.Linker
	// notice, when set, is told once to the user by the first driver that
	// runs the module: what became of its compile-cache entry.
	notice atomic.Pointer[string]

	rt        *Runtime
	describes bool // exports dw_describe
	described sync.Once
	argDoc    string
	argNeeded bool
	argErr    error
}

// LoadFile compiles the controller at path (.wasm, or .wat text), using
// the disk cache when it holds this module compiled with these settings.
//
// # Errors
//
// A file that cannot be read, is not a regular file (a FIFO, a device),
// is larger than limitedfile.Controller, is not Wasm, fails to compile, or
// lacks the ABI's exports gives an error naming the file and what is
// wrong.
func (rt *Runtime) LoadFile(path string) (*Module, error) {
	src, err := limitedfile.Read(path, limitedfile.Controller)
	var pe *os.PathError
	var tl *limitedfile.TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, fmt.Errorf("controller %w", err) // "controller PATH is larger than…"
	case errors.As(err, &pe):
		return nil, fmt.Errorf("controller %s: %w", path, pe.Err) // the path once
	case err != nil:
		return nil, fmt.Errorf("controller %s: %w", path, err)
	}
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".wasm"), ".wat")
	m, err := rt.Load(name, src)
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", path, err)
	}
	m.Path = path
	return m, nil
}

// Load compiles a controller from its bytes (Wasm binary or WAT text).
func (rt *Runtime) Load(name string, src []byte) (*Module, error) {
	return rt.load(name, sha256Hex(src), func() ([]byte, error) { return src, nil })
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// load compiles the controller whose bytes have the SHA-256 sha, taking
// it from the disk cache when it is there, and asking read for the bytes
// only when it is not.
func (rt *Runtime) load(name, sha string, read func() ([]byte, error)) (*Module, error) {
	m := &Module{Name: name, SHA256: sha, rt: rt}
	cache, note := rt.useCache()
	if cache {
		m.module, note = rt.loadCached(m.SHA256)
	}
	if note != "" {
		m.notice.Store(&note)
	}
	if m.module == nil {
		src, err := read()
		if err != nil {
			return nil, err
		}
		wasm := src
		if !isWasmBinary(src) {
			if wasm, err = wasmtime.Wat2Wasm(string(src)); err != nil {
				return nil, fmt.Errorf("neither a Wasm binary nor valid WAT: %v", firstLine(err.Error()))
			}
		}
		mod, err := wasmtime.NewModule(rt.engine, wasm)
		if err != nil {
			return nil, fmt.Errorf("does not compile: %v", firstLine(err.Error()))
		}
		m.module = mod
		if cache {
			rt.store(m.SHA256, mod)
		}
	}
	if err := checkExports(m.module); err != nil {
		m.module.Close()
		return nil, err
	}
	for _, e := range m.module.Exports() {
		m.describes = m.describes || e.Name() == "dw_describe"
	}
	linker, err := rt.newLinker(m.module)
	if err != nil {
		m.module.Close()
		return nil, err
	}
	m.linker = linker
	rt.mu.Lock()
	rt.modules = append(rt.modules, m)
	rt.mu.Unlock()
	return m, nil
}

func isWasmBinary(b []byte) bool {
	return len(b) >= 4 && string(b[:4]) == "\x00asm"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// requiredExports are the ABI's exports and their signatures.
var requiredExports = map[string]string{
	"dw_abi_version": "()->(i32)",
	"dw_alloc":       "(i32)->(i32)",
	"dw_load":        "(i32,i32,i32)->(i32)",
	"dw_init":        "(i32,i32)->(i32)",
	"dw_begin":       "(i32,i32)->(i32)",
	"dw_step":        "(i32,i32)->(i32)",
}

// v1Init is the signature of dw_init in ABI version 1.
const v1Init = "(i32,i32,i32,i32,i32)->(i32)"

func checkExports(mod *wasmtime.Module) error {
	have := map[string]*wasmtime.ExternType{}
	for _, e := range mod.Exports() {
		have[e.Name()] = e.Type()
	}
	if et, ok := have["dw_init"]; ok && et.FuncType() != nil && signature(et.FuncType()) == v1Init && have["dw_load"] == nil {
		return fmt.Errorf("built for ABI version 1 (dw_init takes the vocabulary, there is no dw_load); this Driftwood speaks %d: rebuild it with this version's SDK (an old build of a shipped controller can simply be deleted: this Driftwood has its own built in)", abi.Version)
	}
	var missing []string
	if mt, ok := have["memory"]; !ok || mt.MemoryType() == nil {
		missing = append(missing, "memory")
	}
	for name, sig := range requiredExports {
		et, ok := have[name]
		if !ok || et.FuncType() == nil {
			missing = append(missing, name)
			continue
		}
		if got := signature(et.FuncType()); got != sig {
			return fmt.Errorf("export %s has type %s, ABI v%d wants %s", name, got, abi.Version, sig)
		}
	}
	if et, ok := have["dw_describe"]; ok && (et.FuncType() == nil || signature(et.FuncType()) != describeSignature) {
		return fmt.Errorf("export dw_describe is not a function of type %s (see controllers/ABI.md)", describeSignature)
	}
	if len(missing) > 0 {
		return fmt.Errorf("not a Driftwood controller: missing exports %s (see controllers/ABI.md)", strings.Join(slices.Sorted(slices.Values(missing)), ", "))
	}
	return nil
}

func signature(ft *wasmtime.FuncType) string {
	list := func(vs []*wasmtime.ValType) string {
		s := make([]string, len(vs))
		for i, v := range vs {
			s[i] = v.Kind().String()
		}
		return "(" + strings.Join(s, ",") + ")"
	}
	return list(ft.Params()) + "->" + list(ft.Results())
}

// Prewarm prepares, in the background, a spare instance of mod for vocab
// (instantiated, initialised, the vocabulary loaded: everything but the
// controller's argument), unless one is ready or on its way. A switch to
// mod then costs only dw_init and the first step. At most one spare is
// kept per module and vocabulary, maxSpares in all.
func (rt *Runtime) Prewarm(mod *Module, vocab *Vocab) {
	key := spareKey{mod, vocab}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed || rt.replaced[mod] || rt.spares[key] != nil || rt.pending[key] != nil {
		return
	}
	done := make(chan struct{})
	rt.pending[key] = done
	rt.work.Add(1)
	go func() {
		defer rt.work.Done()
		in, err := rt.prepare(mod, vocab, nil)
		rt.mu.Lock()
		defer rt.mu.Unlock()
		delete(rt.pending, key)
		close(done)
		if err == nil && rt.spares[key] == nil && !rt.replaced[mod] {
			rt.spares[key] = in
			rt.order = append(rt.order, key)
			rt.evict()
		} else if err == nil {
			in.close()
		}
		// A failed spare is dropped: newInstance prepares again in the
		// foreground and reports the error.
	}()
}

// newInstance returns a running instance of mod: the spare Prewarm
// prepared (waiting for one on its way), else one prepared here; then
// started with arg.
func (rt *Runtime) newInstance(mod *Module, vocab *Vocab, arg string, kv *KV, logf func(string)) (*instance, error) {
	key := spareKey{mod, vocab}
	rt.mu.Lock()
	done := rt.pending[key]
	rt.mu.Unlock()
	if done != nil {
		<-done
	}
	rt.mu.Lock()
	in := rt.spares[key]
	rt.removeSpare(key)
	rt.mu.Unlock()
	if in == nil {
		var err error
		if in, err = rt.prepare(mod, vocab, logf); err != nil {
			return nil, err
		}
	}
	if err := in.start(arg, kv, logf); err != nil {
		return nil, err
	}
	return in, nil
}

// forget drops the spare of a module that a newer build replaced, and
// keeps it from getting another.
func (rt *Runtime) forget(mod *Module) {
	rt.mu.Lock()
	rt.replaced[mod] = true
	rt.mu.Unlock()
	rt.dropSpares(mod)
}

// dropSpares closes the ready spares of mod.
func (rt *Runtime) dropSpares(mod *Module) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for k, in := range rt.spares {
		if k.mod == mod {
			in.close()
			rt.removeSpare(k)
		}
	}
}

// maxSpares bounds the spare instances kept (13-23 MB of linear memory
// each for the shipped controllers): the modules used last.
const maxSpares = 3

// evict closes the oldest spares beyond maxSpares. rt.mu is held.
func (rt *Runtime) evict() {
	for len(rt.order) > maxSpares {
		k := rt.order[0]
		rt.spares[k].close()
		rt.removeSpare(k)
	}
}

// removeSpare forgets the spare of k, if any (without closing it). rt.mu
// is held.
func (rt *Runtime) removeSpare(k spareKey) {
	delete(rt.spares, k)
	rt.order = slices.DeleteFunc(rt.order, func(o spareKey) bool { return o == k })
}
