package hub

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolveModelForms: every form of name that the chat and run take
// opens through ResolveModel, downloading what is not cached.
func TestResolveModelForms(t *testing.T) {
	h := newFakeHub(t)
	addGGUFRepo(t, h)
	tiny := testGGUF(t, "tiny-mixed.gguf")
	o := newFakeOllama(t)
	o.model("registry.ollama.ai/library/tiny/1b", tiny)
	lm := fakeLMStudio(t, map[string][]byte{"pub/Tiny-GGUF/Tiny-Q4_0.gguf": tiny})
	opt := h.options(t)
	opt.OllamaDir, opt.LMStudioDir = o.root, lm

	folder := filepath.Join("..", "testdata", "models", "tiny-f32")
	file := filepath.Join("..", "testdata", "gguf", "tiny-mixed.gguf")
	for _, tc := range []struct {
		name, want, reason string
	}{
		{folder, folder, "a model folder is itself"},
		{file, file, "a GGUF file is itself"},
		{"org/tiny", filepath.Join(opt.CacheDir, "models--org--tiny", "snapshots", tinyCommit), "a repo is pulled"},
		{"org/gguf:Q4_K_M", filepath.Join(opt.CacheDir, "models--org--gguf", "snapshots", ggufCommit, "Tiny-Q4_K_M.gguf"), "a repo's GGUF file is pulled"},
		{"ollama:tiny:1b", filepath.Join(o.root, "blobs", "sha256-"+sha256Of(tiny)), "an ollama model is its blob"},
		{"lmstudio:pub/Tiny-GGUF", filepath.Join(lm, "pub", "Tiny-GGUF", "Tiny-Q4_0.gguf"), "an LM Studio model is its file"},
	} {
		if got, err := ResolveModel(context.Background(), tc.name, opt); err != nil || got != tc.want {
			t.Errorf("%s: ResolveModel(%s) = %q, %v; want %s", tc.reason, tc.name, got, err, tc.want)
		}
	}

	// What is not a model is refused without the network, and an ollama
	// model that is not there is not pulled from the hub.
	h.hubAuth = nil
	for _, tc := range []struct {
		name, want string
	}{
		{filepath.Join(folder, "config.json"), "a file, but not a GGUF file"},
		{"ollama:absent", `run "ollama pull absent:latest"`},
		{"lmstudio:pub/Absent", "no folder"},
	} {
		if _, err := ResolveModel(context.Background(), tc.name, opt); err == nil || errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ResolveModel(%s) = %v, want it to say %q", tc.name, err, tc.want)
		}
	}
	if len(h.hubAuth) > 0 {
		t.Errorf("the hub got %d requests for names that are not its", len(h.hubAuth))
	}
}
