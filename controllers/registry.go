package controllers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// Registry finds controllers by name in folders (NAME.wasm or NAME.wat),
// compiles each once, and watches the folders so that a changed file is
// recompiled on its next use. Safe for concurrent use.
type Registry struct {
	rt      *Runtime
	dirs    []string
	mu      sync.Mutex
	mods    map[string]*Module // by path
	changed map[string]bool
	watcher *fsnotify.Watcher
}

// Entry is a controller file found in the registry's folders.
type Entry struct {
	Name, Path string
}

// NewRegistry searches dirs in order (missing folders are skipped) and
// watches those that exist.
func NewRegistry(rt *Runtime, dirs ...string) (*Registry, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	r := &Registry{rt: rt, dirs: dirs, mods: map[string]*Module{}, changed: map[string]bool{}, watcher: w}
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
func (r *Registry) Close() error { return r.watcher.Close() }

func (r *Registry) watch() {
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

// List returns the controllers in the folders; a name found in an earlier
// folder hides the same name in later ones.
func (r *Registry) List() []Entry {
	seen := map[string]bool{}
	var out []Entry
	for _, d := range r.dirs {
		files, _ := os.ReadDir(d)
		for _, f := range files {
			ext := filepath.Ext(f.Name())
			if f.IsDir() || (ext != ".wasm" && ext != ".wat") {
				continue
			}
			name := strings.TrimSuffix(f.Name(), ext)
			if !seen[name] {
				seen[name] = true
				out = append(out, Entry{Name: name, Path: filepath.Join(d, f.Name())})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Find resolves a controller name (looked up in the folders) or a path to
// a .wasm or .wat file.
func (r *Registry) Find(nameOrPath string) (string, error) {
	if strings.ContainsRune(nameOrPath, filepath.Separator) || strings.HasSuffix(nameOrPath, ".wasm") || strings.HasSuffix(nameOrPath, ".wat") {
		if _, err := os.Stat(nameOrPath); err != nil {
			return "", fmt.Errorf("controller %s: %w", nameOrPath, err)
		}
		return nameOrPath, nil
	}
	for _, e := range r.List() {
		if e.Name == nameOrPath {
			return e.Path, nil
		}
	}
	var names []string
	for _, e := range r.List() {
		names = append(names, e.Name)
	}
	if len(names) == 0 {
		return "", fmt.Errorf("no controller %q: no controllers in %s (build the shipped ones with \"driftwood controllers build\")", nameOrPath, strings.Join(r.dirs, ", "))
	}
	return "", fmt.Errorf("no controller %q (have: %s)", nameOrPath, strings.Join(names, ", "))
}

// Get returns the compiled controller for a name or path.
func (r *Registry) Get(nameOrPath string) (*Module, error) {
	path, err := r.Find(nameOrPath)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	m, ok := r.mods[path]
	changed := r.changed[path]
	r.mu.Unlock()
	if ok && !changed {
		return m, nil
	}
	return r.compile(path)
}

func (r *Registry) compile(path string) (*Module, error) {
	m, err := r.rt.LoadFile(path)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.changed, path)
	if err != nil {
		return nil, err
	}
	if old := r.mods[path]; old != nil {
		r.rt.forget(old) // its spare instance is of no use any more
	}
	r.mods[path] = m
	return m, nil
}

// refresh returns the newest build of m: m itself unless its file changed
// and the new file compiles. A file that fails to compile keeps m active
// and the error is logged.
func (r *Registry) refresh(m *Module, logf func(string)) *Module {
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
