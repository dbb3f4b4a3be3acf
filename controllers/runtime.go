// Package controllers hosts WebAssembly controllers: sandboxed modules that
// see every token of a reply and restrict what may come next (ABI.md). It
// compiles and caches modules, runs one instance per conversation behind
// engine.Hook, survives every guest fault, and reloads changed modules.
// Host is its entry point.
//
// Built on wasmtime-go, which has no component model: controllers are core
// Wasm modules with the small ABI of ABI.md.
package controllers

import (
	"os"
	"sync"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// guestLimits bound what a controller may use.
type guestLimits struct {
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

// defaultLimits are the limits of ABI.md.
func defaultLimits() guestLimits {
	return guestLimits{InitTime: 2 * time.Second, StepTime: 50 * time.Millisecond, Memory: 256 << 20, TakeBack: 1024, ReplySteps: 64}
}

// epochTick is how often the runtime advances wasmtime's epoch; time
// budgets are counted in ticks.
const epochTick = time.Millisecond

// wasmRuntime compiles controllers (module.go, with the disk cache of
// cache.go) and runs their instances, taking a spare one when it has
// it (spares.go). One serves a Host.
type wasmRuntime struct {
	engine   *wasmtime.Engine
	limits   guestLimits
	cacheDir string // compiled modules; "" disables the disk cache
	stop     chan struct{}
	stopped  chan struct{} // closed when the ticker has returned
	once     sync.Once
	mu       sync.Mutex
	modules  []*Module // closed with the runtime
	spares   *sparePool

	// cacheOnce checks cacheDir at its first use; cacheOff then says why
	// it is not used ("" when it is).
	cacheOnce sync.Once
	cacheOff  string
	// cacheLimit bounds the cache folder's bytes (maxCacheBytes; tests
	// lower it).
	cacheLimit int64
}

// newWasmRuntime starts a runtime. cacheDir holds compiled modules keyed
// by the module's sha256 and the engine's settings, each checked against
// its checksum before it is used ("" for no disk cache); it is made
// private to the user (0700) at its first use, and not used if it belongs
// to someone else, and kept under maxCacheBytes bytes.
func newWasmRuntime(limits guestLimits, cacheDir string) *wasmRuntime {
	// A fault's backtrace costs ~10 ms per trap; the user never sees it.
	os.Unsetenv("RUST_BACKTRACE")
	cfg := wasmtime.NewConfig()
	cfg.SetEpochInterruption(true)
	rt := &wasmRuntime{engine: wasmtime.NewEngineWithConfig(cfg), limits: limits, cacheDir: cacheDir, cacheLimit: maxCacheBytes, stop: make(chan struct{}), stopped: make(chan struct{})}
	rt.spares = newSparePool(func(mod *Module, vocab *vocabulary) (*instance, error) { return rt.prepare(mod, vocab, nil) })
	go rt.tick()
	return rt
}

// tick advances the epoch so that a running guest is interrupted once its
// deadline (set before each call) passes.
func (rt *wasmRuntime) tick() {
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

// Close stops the runtime and frees its spares, modules and engine.
// Drivers must be closed first; nothing of the runtime may be used
// afterwards. (wasmtime-go's finalizers run in no particular order, so
// freeing a module after its engine would crash: the runtime frees them
// in order.)
func (rt *wasmRuntime) Close() {
	rt.once.Do(func() {
		rt.spares.close()
		close(rt.stop)
		<-rt.stopped
		rt.mu.Lock()
		defer rt.mu.Unlock()
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

// newInstance returns a running instance of mod: the spare prepared in
// the background (waiting for one on its way), else one prepared here;
// then started with arg.
func (rt *wasmRuntime) newInstance(mod *Module, vocab *vocabulary, arg string, kv *kvStore, logf func(string)) (*instance, error) {
	in := rt.spares.take(mod, vocab)
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
