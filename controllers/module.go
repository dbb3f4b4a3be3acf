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

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

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

	rt        *wasmRuntime
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
func (rt *wasmRuntime) LoadFile(path string) (*Module, error) {
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
func (rt *wasmRuntime) Load(name string, src []byte) (*Module, error) {
	return rt.load(name, sha256Hex(src), func() ([]byte, error) { return src, nil })
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// load compiles the controller whose bytes have the SHA-256 sha, taking
// it from the disk cache when it is there, and asking read for the bytes
// only when it is not.
func (rt *wasmRuntime) load(name, sha string, read func() ([]byte, error)) (*Module, error) {
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
