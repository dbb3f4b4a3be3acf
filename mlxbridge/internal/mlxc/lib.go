// Package mlxc binds the mlx-c library (libmlxc), opened at run time with
// purego: discovery of the library file, the table of C functions checked
// when it opens, MLX errors turned into Go errors, and typed wrappers over
// arrays, streams and the operations a Llama forward pass needs.
//
// Every call into MLX runs on one goroutine locked to its OS thread: code
// gets a *Thread only inside Lib.Do, and Do hands its function to that
// goroutine.
package mlxc

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Lib is a loaded libmlxc. A library file is loaded once per process and
// stays loaded: MLX keeps process-wide state (its error handler, caches and
// worker threads), so every user of the file shares one Lib.
type Lib struct {
	// Path is the library file that was opened.
	Path string
	// Version is MLX's version as the library reports it (mlx_version).
	Version string
	// Release is the mlx-c release recognised by the library's functions
	// (mlx-c itself has no version function); its declarations are the
	// ones bound.
	Release Release

	api *api
	d   *dispatcher
	t   Thread
	// keepMemory is Wrap's destructor, a C function that does nothing.
	keepMemory uintptr
	// errMsg is the last message given to the error handler; it is
	// written and read only on the MLX thread.
	errMsg string
}

func newLib(path string, a *api) *Lib {
	l := &Lib{Path: path, api: a, d: newDispatcher()}
	l.t.lib = l
	return l
}

// Do runs f on the MLX thread with a Thread for making MLX calls, and
// waits for it. Arrays made during f are freed when it returns, unless
// kept (Thread.Keep). Do returns f's error, or else the first failed MLX
// call's. Do must not be called from inside f.
func (l *Lib) Do(f func(t *Thread) error) error {
	var err error
	l.d.do(func() { err = l.t.run(f) })
	return err
}

// init installs handler, a C function pointer calling l.onError, as the
// error handler (before any other call: mlx-c's default one prints and
// exits the process) and reads the version. It runs on the MLX thread.
func (l *Lib) init(handler uintptr) error {
	l.api.setErrorHandler(handler, 0, 0)
	var s cString
	if l.api.version(&s) != 0 {
		return &Error{Func: "mlx_version", Msg: l.takeErr()}
	}
	l.Version = goString(l.api.stringData(s))
	l.api.stringFree(s)
	if r := &l.Release; !r.Newer && r.index == len(releases)-1 && newerMLX(l.Version) {
		r.Newer = true
		r.Why = fmt.Sprintf("its MLX %s is newer than the %s that mlx-c %s builds against", l.Version, releases[r.index].mlx, r.Name)
	}
	return nil
}

// onError receives the messages of MLX's error handler. MLX calls the
// handler on the thread of the failing call, that is the MLX thread,
// before the call returns non-zero.
func (l *Lib) onError(msg *byte) {
	l.errMsg = goString(unsafe.Pointer(msg))
}

// takeErr returns and clears the handler's last message.
func (l *Lib) takeErr() string {
	m := l.errMsg
	l.errMsg = ""
	if m == "" {
		m = "failed (no message from MLX)"
	}
	return m
}

// bind looks up every function of a as release rel declares it and
// picks the field of a whose Go type matches the declaration; only when
// every required function is found does it register them.
//
// # Errors
//
// *MissingSymbolsError naming each function the library lacks; a plain
// error when a declaration matches no field (a release the table has and
// symbols does not cover, which a test rules out).
func bind(a *api, path string, rel Release, lookup func(string) (uintptr, error), register func(fptr any, addr uintptr)) error {
	type binding struct {
		fn   any
		addr uintptr
	}
	var (
		todo    []binding
		missing []string
	)
	syms := a.symbols()
	required := 0
	for _, s := range syms {
		if !s.optional {
			required++
		}
		c, declared := declIn(s.name, rel.index)
		p, err := lookup(s.name)
		found := err == nil && p != 0
		if !declared || !found {
			if !s.optional {
				missing = append(missing, s.name)
			}
			continue
		}
		var fn any
		for _, f := range s.fns {
			if matches(c, reflect.TypeOf(f).Elem()) {
				fn = f
				break
			}
		}
		if fn == nil {
			return fmt.Errorf("%s: mlx-c %s declares %s, which Driftwood has no binding for", path, rel.Name, c)
		}
		todo = append(todo, binding{fn, p})
	}
	if len(missing) > 0 {
		return &MissingSymbolsError{Path: path, Names: missing, Total: required}
	}
	for _, b := range todo {
		register(b.fn, b.addr)
	}
	a.adapt()
	return nil
}

// goString copies a NUL-terminated C string.
func goString(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}
