package controllers

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/driftwoodlabs/driftwood/controllers/internal/wasmbuild"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
	"github.com/driftwoodlabs/driftwood/internal/xdg"
)

// DefaultDir is where controllers are looked up by name:
// $XDG_DATA_HOME/driftwood/controllers (by default under ~/.local/share).
func DefaultDir() string { return xdg.Data("controllers") }

// DefaultCacheDir holds compiled modules: $XDG_CACHE_HOME/driftwood/wasm.
func DefaultCacheDir() string { return xdg.Cache("wasm") }

// Build compiles the Go controllers under src (one folder with a main
// package each, e.g. controllers/examples/regex) to Wasm with the Go
// toolchain found on PATH (wasmbuild.Go: GOOS=wasip1, -buildmode=c-shared)
// and copies .wat files found under src, all into out. It returns the
// files written. A file in out overrides the shipped controller of the
// same name.
//
// # Errors
//
// A src that is not a folder says so, and that the shipped controllers
// need no build; a failed build gives the go command's output.
func Build(src, out string) ([]string, error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		abs, _ := filepath.Abs(src)
		return nil, fmt.Errorf("no controller sources in %s: build from a clone of the repository (its controllers/examples), or give the folder of your own (one folder with a main package each); the shipped controllers are built into driftwood and need no build", abs)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(src, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "main.go")); err == nil {
			dst := filepath.Join(out, e.Name()+".wasm")
			if err := wasmbuild.Go(dir, dst, ""); err != nil {
				return written, err
			}
			written = append(written, dst)
		}
		wats, _ := filepath.Glob(filepath.Join(dir, "*.wat"))
		for _, w := range wats {
			data, err := limitedfile.Read(w, limitedfile.Controller)
			if err != nil {
				return written, err
			}
			dst := filepath.Join(out, filepath.Base(w))
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				return written, err
			}
			written = append(written, dst)
		}
	}
	return written, nil
}
