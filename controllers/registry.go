package controllers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// registry finds controllers by name in folders (NAME.wasm or NAME.wat)
// and then among the shipped ones (Shipped), compiles each once, and
// watches the folders so that a changed file is recompiled on its next
// use. Safe for concurrent use.
type registry struct {
	rt      *wasmRuntime
	dirs    []string
	shipped fs.FS // nil: none
	mu      sync.Mutex
	mods    map[string]*Module // files, by path
	builtin map[string]*Module // shipped, by name
	changed map[string]bool
	watcher *fsnotify.Watcher
}

// Entry is a controller the registry knows: a file in one of its folders,
// or a shipped controller.
type Entry struct {
	Name string
	// Path is the file; "" for a shipped controller.
	Path string
	// Shipped says that the controller is built into the program.
	Shipped bool
	// Used says that the name finds this entry: false when a file of the
	// same name comes earlier (an earlier folder, or any folder for a
	// shipped controller).
	Used bool
}

// Source says where the entry comes from: its path, or "shipped".
func (e Entry) Source() string {
	if e.Shipped {
		return "shipped"
	}
	return e.Path
}

// newRegistry searches dirs in order (missing folders are skipped), then
// the controllers of shipped (Shipped, as it is now, for a host; nil for
// none), and watches the folders that exist.
func newRegistry(rt *wasmRuntime, shipped fs.FS, dirs ...string) (*registry, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	r := &registry{rt: rt, dirs: dirs, shipped: shipped, mods: map[string]*Module{}, builtin: map[string]*Module{}, changed: map[string]bool{}, watcher: w}
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			if err := w.Add(d); err != nil {
				w.Close()
				return nil, fmt.Errorf("watching %s: %w", d, err)
			}
		}
	}
	go r.watch()
	return r, nil
}

// Close stops watching.
func (r *registry) Close() error { return r.watcher.Close() }

func (r *registry) watch() {
	for {
		select {
		case ev, ok := <-r.watcher.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove) {
				r.mu.Lock()
				r.changed[ev.Name] = true
				r.mu.Unlock()
			}
		case _, ok := <-r.watcher.Errors:
			if !ok {
				return
			}
		}
	}
}

// All returns every controller the registry knows, by name, and for each
// name in search order: the files in the folders, in the order of the
// folders, then the shipped one. The first of each name is Used.
func (r *registry) All() []Entry {
	var out []Entry
	for _, d := range r.dirs {
		files, _ := os.ReadDir(d)
		for _, f := range files {
			ext := filepath.Ext(f.Name())
			if f.IsDir() || (ext != ".wasm" && ext != ".wat") {
				continue
			}
			out = append(out, Entry{Name: strings.TrimSuffix(f.Name(), ext), Path: filepath.Join(d, f.Name())})
		}
	}
	for _, file := range r.shippedFiles() {
		name, _ := shippedName(file)
		out = append(out, Entry{Name: name, Shipped: true})
	}
	// A stable sort keeps the search order within a name.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := range out {
		out[i].Used = i == 0 || out[i-1].Name != out[i].Name
	}
	return out
}

// shippedFiles lists the controller files of r.shipped, one per name
// (of two with the same name, the first by file name).
func (r *registry) shippedFiles() []string {
	if r.shipped == nil {
		return nil
	}
	files, _ := fs.ReadDir(r.shipped, ".")
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		if name, ok := shippedName(f.Name()); ok && !f.IsDir() && !seen[name] {
			seen[name] = true
			out = append(out, f.Name())
		}
	}
	return out
}

// List returns the controllers a name finds: of each name, the file in
// the earliest folder, else the shipped one.
func (r *registry) List() []Entry {
	var out []Entry
	for _, e := range r.All() {
		if e.Used {
			out = append(out, e)
		}
	}
	return out
}

// Find resolves a controller name (looked up in the folders, then among
// the shipped controllers) or a path to a .wasm or .wat file.
func (r *registry) Find(nameOrPath string) (Entry, error) {
	if strings.ContainsRune(nameOrPath, filepath.Separator) || strings.HasSuffix(nameOrPath, ".wasm") || strings.HasSuffix(nameOrPath, ".wat") {
		if _, err := os.Stat(nameOrPath); err != nil {
			return Entry{}, fmt.Errorf("controller %s: %w", nameOrPath, err)
		}
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(nameOrPath), ".wasm"), ".wat")
		return Entry{Name: name, Path: nameOrPath, Used: true}, nil
	}
	list := r.List()
	for _, e := range list {
		if e.Name == nameOrPath {
			return e, nil
		}
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
	}
	if len(names) == 0 {
		return Entry{}, fmt.Errorf("no controller %q: no controllers in %s, and none shipped with this program", nameOrPath, strings.Join(r.dirs, ", "))
	}
	return Entry{}, fmt.Errorf("no controller %q (have: %s)", nameOrPath, strings.Join(names, ", "))
}

// Get returns the compiled controller for a name or path.
func (r *registry) Get(nameOrPath string) (*Module, error) {
	e, err := r.Find(nameOrPath)
	if err != nil {
		return nil, err
	}
	return r.Load(e)
}

// Load returns the compiled controller of an entry (of All or List),
// also one that its name does not find (Used false): to describe it
// (Module.Describe), say.
func (r *registry) Load(e Entry) (*Module, error) {
	if e.Shipped {
		return r.getShipped(e.Name)
	}
	r.mu.Lock()
	m, ok := r.mods[e.Path]
	changed := r.changed[e.Path]
	r.mu.Unlock()
	if ok && !changed {
		return m, nil
	}
	return r.compile(e.Path)
}

// getShipped returns the shipped controller name, compiled at its first
// use (from the disk cache when it is there).
func (r *registry) getShipped(name string) (*Module, error) {
	r.mu.Lock()
	m := r.builtin[name]
	r.mu.Unlock()
	if m != nil {
		return m, nil
	}
	for _, file := range r.shippedFiles() {
		if n, _ := shippedName(file); n != name {
			continue
		}
		m, err := r.rt.LoadFS(r.shipped, file)
		if err != nil {
			return nil, fmt.Errorf("shipped %w", err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if prev := r.builtin[name]; prev != nil { // compiled meanwhile
			return prev, nil
		}
		r.builtin[name] = m
		return m, nil
	}
	return nil, fmt.Errorf("no shipped controller %q", name)
}

func (r *registry) compile(path string) (*Module, error) {
	m, err := r.rt.LoadFile(path)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.changed, path)
	if err != nil {
		return nil, err
	}
	if old := r.mods[path]; old != nil {
		r.rt.spares.forget(old) // its spare instance is of no use any more
	}
	r.mods[path] = m
	return m, nil
}

// refresh returns the newest build of m: m itself unless its file changed
// and the new file compiles. A file that fails to compile keeps m active
// and the error is logged.
func (r *registry) refresh(m *Module, logf func(string)) *Module {
	if m.Path == "" {
		return m
	}
	r.mu.Lock()
	changed := r.changed[m.Path]
	r.mu.Unlock()
	if !changed {
		return m
	}
	fresh, err := r.compile(m.Path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			logf(fmt.Sprintf("%s was removed; keeping the loaded build", m.Path))
		} else {
			logf(fmt.Sprintf("reload failed, keeping the previous build: %v", err))
		}
		return m
	}
	return fresh
}
