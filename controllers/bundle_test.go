package controllers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestNewHost assembles the host as the CLI and the chat do: it finds a
// controller of its folder, and closes once.
func TestNewHost(t *testing.T) {
	if _, err := NewHost(nil, 512, HostOptions{}); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("no tokenizer: %v", err)
	}
	tok, err := tokenizer.Load(filepath.Join(golden.ModelDir("tiny-f32"), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "none.wat"), []byte(allowOnly(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(tok, 512, HostOptions{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	mod, err := h.Registry.Get("none")
	if err != nil {
		t.Fatal(err)
	}
	h.Driver.Use(mod, "")
	if run, ok := h.Running(); !ok || run.Name != "none" || run.Path != filepath.Join(dir, "none.wat") {
		t.Errorf("running %+v, %v", run, ok)
	}
	h.Close()
	h.Close()
}
