package mlxc

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// EnvVar names the environment variable that points at libmlxc (the file,
// or the folder holding it). When set it is the only place looked at.
const EnvVar = "DRIFTWOOD_MLXC"

// Search says where to look for libmlxc. The zero value searches the
// environment and the platform's usual places.
type Search struct {
	// Path is an explicit library path (a file or its folder), from the
	// configuration; used when DRIFTWOOD_MLXC is unset.
	Path string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// GOOS picks the file name and the usual places; "" means runtime.GOOS.
	GOOS string
}

// LibraryName is libmlxc's file name on goos.
func LibraryName(goos string) string {
	if goos == "darwin" || goos == "ios" {
		return "libmlxc.dylib"
	}
	return "libmlxc.so"
}

// Candidates lists, in order, the files Find looks for: DRIFTWOOD_MLXC
// alone when set, else the explicit Path alone when set, else
// /opt/homebrew/lib (macOS), /usr/local/lib, then each folder of
// DYLD_LIBRARY_PATH (macOS) or LD_LIBRARY_PATH.
func (s Search) Candidates() []string {
	getenv, goos := s.Getenv, s.GOOS
	if getenv == nil {
		getenv = os.Getenv
	}
	if goos == "" {
		goos = runtime.GOOS
	}
	name := LibraryName(goos)
	if p := getenv(EnvVar); p != "" {
		return []string{explicit(p, name)}
	}
	if s.Path != "" {
		return []string{explicit(s.Path, name)}
	}
	var dirs []string
	pathVar := "LD_LIBRARY_PATH"
	if goos == "darwin" || goos == "ios" {
		dirs = append(dirs, "/opt/homebrew/lib")
		pathVar = "DYLD_LIBRARY_PATH"
	}
	dirs = append(dirs, "/usr/local/lib")
	for _, d := range filepath.SplitList(getenv(pathVar)) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		if p := filepath.Join(d, name); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// explicit turns a configured path into a file path: a folder (or a path
// ending in a separator) gets the library's file name appended.
func explicit(p, name string) string {
	if strings.HasSuffix(p, string(filepath.Separator)) {
		return filepath.Join(p, name)
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return filepath.Join(p, name)
	}
	return p
}

// Find returns the first candidate that is a regular file.
//
// # Errors
//
// *NotFoundError, listing every candidate, when none exists.
func (s Search) Find() (string, error) {
	c := s.Candidates()
	for _, p := range c {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", &NotFoundError{Looked: c}
}

// NotFoundError says libmlxc was not found and where it was looked for.
type NotFoundError struct {
	Looked []string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("libmlxc not found (looked for %s); install mlx-c (macOS: brew install mlx-c) or set %s to the library's path",
		strings.Join(e.Looked, ", "), EnvVar)
}
