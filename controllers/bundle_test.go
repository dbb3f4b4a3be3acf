package controllers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/controlrecord"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestNewHost assembles the host as the CLI and the chat do: it finds a
// controller of its folder, is idle until one is on, and closes once.
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
	if !h.Idle() {
		t.Error("idle before any controller: false")
	}
	mod, err := h.reg.Get("none")
	if err != nil {
		t.Fatal(err)
	}
	h.d.Use(mod, "")
	if run, ok := h.Running(); !ok || run.Name != "none" || run.Path != filepath.Join(dir, "none.wat") {
		t.Errorf("running %+v, %v", run, ok)
	}
	if h.Idle() {
		t.Error("idle with a controller on: true")
	}
	h.Close()
	h.Close()
}

// TestListOnlyHost: a host made to list controllers needs no model; it
// lists its folder's controllers beside the shipped ones, says what
// argument each takes, and runs none.
func TestListOnlyHost(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "digit.wat"), []byte(only7With("(i32.const 0)", describeDigit)), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(nil, 0, HostOptions{Dirs: []string{dir}, ListOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	all := h.AllControllers()
	if len(all) != 1 || all[0].Name != "digit" || !all[0].Used || !slices.Equal(all, h.Controllers()) {
		t.Fatalf("listed %+v, %+v: want digit alone", all, h.Controllers())
	}
	if line, required := h.Argument(all[0]); line != "required: a digit" || !required {
		t.Errorf("digit takes %q (required %v)", line, required)
	}
	if _, err := h.Switch("digit", "7"); err == nil {
		t.Error("a list-only host switched a controller on")
	}
	if _, err := h.Resume(controlrecord.Controller{Name: "digit", Arg: "7"}); err == nil {
		t.Error("a list-only host resumed a controller")
	}
	if _, ok := h.Running(); ok {
		t.Error("a list-only host runs a controller")
	}
}
