//go:build darwin || linux

package mlxc

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/ebitengine/purego"
)

// opened holds the libraries loaded so far, by resolved path.
var opened struct {
	sync.Mutex
	libs map[string]*Lib
}

// Open loads the library at path (once per process; later calls return the
// same Lib), recognises its mlx-c release, binds every function Driftwood
// uses as that release declares it, installs the error handler and reads
// MLX's version.
//
// # Errors
//
// The loader's message when the file cannot be loaded (not a library, a
// dependency missing); *TooOldError for an mlx-c before MinCAPI;
// *MissingSymbolsError naming each missing function.
func Open(path string) (*Lib, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("loading libmlxc: %w", err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, err
	}
	opened.Lock()
	defer opened.Unlock()
	if l := opened.libs[real]; l != nil {
		return l, nil
	}
	h, err := purego.Dlopen(real, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	dlsym := func(name string) (uintptr, error) { return purego.Dlsym(h, name) }
	exports, _ := exportedNames(real) // nil when unreadable: then detect takes it as possibly newer
	rel, err := detect(path, func(name string) bool { p, err := dlsym(name); return err == nil && p != 0 }, exports)
	if err != nil {
		purego.Dlclose(h)
		return nil, err
	}
	a := new(api)
	if err := bind(a, path, rel, dlsym, purego.RegisterFunc); err != nil {
		purego.Dlclose(h)
		return nil, err
	}
	if opened.libs == nil {
		opened.libs = map[string]*Lib{}
	}
	l := newLib(path, a)
	l.Release = rel
	// One callback per library: mlx-c drops the handler's data pointer
	// unless it is given a destructor, so the callback itself knows its Lib.
	handler := purego.NewCallback(func(msg *byte, _ uintptr) { l.onError(msg) })
	l.keepMemory = keepMemory()
	l.d.do(func() { err = l.init(handler) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	opened.libs[real] = l
	return l, nil
}

// keepMemory is the destructor Wrap gives MLX: it does nothing, since
// the wrapped memory is the caller's. One C callback serves every
// library (purego can make only a bounded number of them).
var keepMemory = sync.OnceValue(func() uintptr { return purego.NewCallback(func(uintptr) {}) })
