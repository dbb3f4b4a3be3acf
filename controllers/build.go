package controllers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// DefaultDir is where controllers are looked up by name:
// $XDG_DATA_HOME/driftwood/controllers (by default under ~/.local/share).
func DefaultDir() string { return xdgDir("XDG_DATA_HOME", ".local/share", "controllers") }

// DefaultCacheDir holds compiled modules: $XDG_CACHE_HOME/driftwood/wasm.
func DefaultCacheDir() string { return xdgDir("XDG_CACHE_HOME", ".cache", "wasm") }

func xdgDir(env, fallback, leaf string) string {
	dir := os.Getenv(env)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "."
		}
		dir = filepath.Join(home, fallback)
	}
	return filepath.Join(dir, "driftwood", leaf)
}

// Build compiles the Go controllers under src (one folder with a main
// package each, e.g. controllers/examples/regex) to Wasm with the Go
// toolchain (GOOS=wasip1, -buildmode=c-shared) and copies .wat files found
// under src, all into out. It returns the files written.
func Build(src, out string) ([]string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("controller sources: %w (run from the repository root, or give the folder)", err)
	}
	var written []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(src, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "main.go")); err == nil {
			dst := filepath.Join(out, e.Name()+".wasm")
			cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-trimpath", "-o", dst, ".")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
			if msg, err := cmd.CombinedOutput(); err != nil {
				return written, fmt.Errorf("building %s: %v\n%s", dir, err, strings.TrimSpace(string(msg)))
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
