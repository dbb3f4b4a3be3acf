package hub

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
)

// fakeOllama is an ollama store in a temporary folder, laid out as ollama
// writes it.
type fakeOllama struct {
	t    *testing.T
	root string
}

func newFakeOllama(t *testing.T) *fakeOllama {
	return &fakeOllama{t: t, root: t.TempDir()}
}

// blob stores b as a blob and returns its digest.
func (o *fakeOllama) blob(b []byte) string {
	o.t.Helper()
	digest := sha256Of(b)
	dir := filepath.Join(o.root, "blobs")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "sha256-"+digest), b, 0o644); err != nil {
		o.t.Fatal(err)
	}
	return "sha256:" + digest
}

// layer is a manifest's layer.
type layer struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// model writes the manifest of host/namespace/model:tag with the model
// layer (the GGUF weights) and the template and params layers ollama adds.
func (o *fakeOllama) model(name string, weights []byte) string {
	o.t.Helper()
	return o.manifest(name, layer{ollamaModelType, o.blob(weights), int64(len(weights))},
		layer{"application/vnd.ollama.image.template", o.blob([]byte("{{ .Prompt }}")), 13},
		layer{"application/vnd.ollama.image.params", o.blob([]byte(`{"stop":["<|eot_id|>"]}`)), 24})
}

// manifest writes a manifest of the layers for name (host/namespace/
// model/tag as a path) and returns its path.
func (o *fakeOllama) manifest(name string, layers ...layer) string {
	o.t.Helper()
	b, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.docker.distribution.manifest.v2+json",
		"config":        layer{"application/vnd.docker.container.image.v1+json", o.blob([]byte("{}")), 2},
		"layers":        layers,
	})
	return o.write(name, b)
}

func (o *fakeOllama) write(name string, b []byte) string {
	o.t.Helper()
	path := filepath.Join(o.root, "manifests", filepath.FromSlash(name))
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		o.t.Fatal(err)
	}
	return path
}

func TestResolveOllama(t *testing.T) {
	o := newFakeOllama(t)
	tiny := testGGUF(t, "tiny-mixed.gguf")
	o.model("registry.ollama.ai/library/llama3.2/1b", tiny)
	o.model("registry.ollama.ai/someone/tiny/latest", tiny)
	o.model("example.com:5000/team/tiny/v1", tiny)
	blob := filepath.Join(o.root, "blobs", "sha256-"+sha256Of(tiny))
	opt := Options{CacheDir: t.TempDir(), OllamaDir: o.root, Offline: true}

	for _, name := range []string{
		"ollama:llama3.2:1b",
		"ollama:library/llama3.2:1b",
		"ollama:registry.ollama.ai/library/llama3.2:1b",
		"ollama:someone/tiny",
		"ollama:someone/tiny:latest",
		"ollama:example.com:5000/team/tiny:v1",
	} {
		got, err := Resolve(name, opt)
		if err != nil || got != blob {
			t.Errorf("Resolve(%s) = %q, %v; want the blob %s", name, got, err, blob)
		}
	}
	// Opened in place: the blob is the model.
	m, err := engine.LoadModel(blob)
	if err != nil {
		t.Fatalf("the blob does not load: %v", err)
	}
	m.Close()

	// A tag that is not there names the manifest looked for and the pull.
	_, err = Resolve("ollama:llama3.2", opt)
	want := filepath.Join(o.root, "manifests", "registry.ollama.ai", "library", "llama3.2", "latest")
	if err == nil || !strings.Contains(err.Error(), "no manifest "+want) || !strings.Contains(err.Error(), `run "ollama pull llama3.2:latest"`) {
		t.Errorf("Resolve of a missing tag: %v", err)
	}
	for _, bad := range []string{"ollama:", "ollama:../x", "ollama:a/b/c/d", "ollama:x:", "ollama:.x", "ollama:ns.dot/x", "ollama:x:a/b", "ollama:" + strings.Repeat("m", 81)} {
		if _, err := Resolve(bad, opt); err == nil || !strings.Contains(err.Error(), "ollama name") {
			t.Errorf("Resolve(%q) = %v, want the name refused", bad, err)
		}
	}
}

func TestResolveOllamaRefusals(t *testing.T) {
	tiny := testGGUF(t, "tiny-mixed.gguf")
	outside := filepath.Join(t.TempDir(), "weights.gguf")
	os.WriteFile(outside, tiny, 0o644)
	for _, tc := range []struct {
		reason string
		setup  func(o *fakeOllama)
		want   string
	}{
		{"a digest that climbs out of the blobs folder names no blob", func(o *fakeOllama) {
			o.manifest("registry.ollama.ai/library/m/latest", layer{ollamaModelType, "sha256:../../../" + outside, int64(len(tiny))})
		}, "is not sha256:<64 hex digits>"},
		{"a blob that is a link to a file outside the store is refused", func(o *fakeOllama) {
			digest := sha256Of(tiny)
			os.MkdirAll(filepath.Join(o.root, "blobs"), 0o755)
			os.Symlink(outside, filepath.Join(o.root, "blobs", "sha256-"+digest))
			o.manifest("registry.ollama.ai/library/m/latest", layer{ollamaModelType, "sha256:" + digest, int64(len(tiny))})
		}, "is a symbolic link: refused"},
		{"a blobs folder that is a link out of the store is refused", func(o *fakeOllama) {
			elsewhere := t.TempDir()
			os.WriteFile(filepath.Join(elsewhere, "sha256-"+sha256Of(tiny)), tiny, 0o644)
			os.Symlink(elsewhere, filepath.Join(o.root, "blobs"))
			o.manifest("registry.ollama.ai/library/m/latest", layer{ollamaModelType, "sha256:" + sha256Of(tiny), int64(len(tiny))})
		}, "outside ollama's store"},
		{"a manifest past the bound is not read whole", func(o *fakeOllama) {
			o.write("registry.ollama.ai/library/m/latest", bytes.Repeat([]byte(" "), maxManifestBytes+1))
		}, "larger than 64 KiB"},
		{"a manifest without a model layer (a cloud model)", func(o *fakeOllama) {
			o.manifest("registry.ollama.ai/library/m/latest", layer{"application/vnd.ollama.image.template", o.blob([]byte("x")), 1})
		}, "has no layer of type application/vnd.ollama.image.model"},
		{"two model layers", func(o *fakeOllama) {
			d := o.blob(tiny)
			o.manifest("registry.ollama.ai/library/m/latest", layer{ollamaModelType, d, int64(len(tiny))}, layer{ollamaModelType, d, int64(len(tiny))})
		}, "has 2 layers of type"},
		{"a blob shorter than the manifest says (an interrupted pull)", func(o *fakeOllama) {
			o.manifest("registry.ollama.ai/library/m/latest", layer{ollamaModelType, o.blob(tiny), int64(len(tiny)) + 1})
		}, "bytes, but manifest"},
		{"a blob that is missing", func(o *fakeOllama) {
			o.manifest("registry.ollama.ai/library/m/latest", layer{ollamaModelType, "sha256:" + strings.Repeat("0", 64), 1})
		}, "which is missing"},
		{"a blob that is not GGUF", func(o *fakeOllama) {
			o.manifest("registry.ollama.ai/library/m/latest", layer{ollamaModelType, o.blob([]byte("safetensors?")), 12})
		}, "is not a GGUF file"},
		{"a manifest that is not JSON", func(o *fakeOllama) {
			o.write("registry.ollama.ai/library/m/latest", []byte("{"))
		}, "unexpected end of JSON"},
	} {
		o := newFakeOllama(t)
		tc.setup(o)
		_, err := Resolve("ollama:m", Options{OllamaDir: o.root})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "model ollama:m: ") {
			t.Errorf("%s: err = %v, want it to say %q", tc.reason, err, tc.want)
		}
	}
}

// TestResolveOllamaDoesNotHangOnAFIFO: a manifest is read through
// limitedfile, which does not wait for a FIFO's writer.
func TestResolveOllamaDoesNotHangOnAFIFO(t *testing.T) {
	o := newFakeOllama(t)
	path := o.write("registry.ollama.ai/library/m/latest", nil)
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Resolve("ollama:m", Options{OllamaDir: o.root}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("err = %v, want the FIFO named", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Resolve is still blocked on a FIFO after 5 s")
	}
}

func TestParseOllamaName(t *testing.T) {
	for in, want := range map[string]ollamaName{
		"llama3.2":             {"registry.ollama.ai", "library", "llama3.2", "latest"},
		"llama3.2:1b":          {"registry.ollama.ai", "library", "llama3.2", "1b"},
		"someone/model:q4_K_M": {"registry.ollama.ai", "someone", "model", "q4_K_M"},
		"hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M": {"hf.co", "bartowski", "Llama-3.2-1B-Instruct-GGUF", "Q4_K_M"},
		"localhost:11434/ns/m":                              {"localhost:11434", "ns", "m", "latest"},
	} {
		got, err := parseOllamaName(in)
		if err != nil || got != want {
			t.Errorf("parseOllamaName(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for n, want := range map[ollamaName]string{
		{"registry.ollama.ai", "library", "llama3.2", "1b"}: "llama3.2:1b",
		{"registry.ollama.ai", "someone", "m", "latest"}:    "someone/m:latest",
		{"hf.co", "bartowski", "m", "Q4_K_M"}:               "hf.co/bartowski/m:Q4_K_M",
	} {
		if got := n.String(); got != want {
			t.Errorf("%v.String() = %q, want %q", n, got, want)
		}
	}
}

func TestDefaultStoreDirs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("OLLAMA_MODELS", "")
	t.Setenv("LMSTUDIO_MODELS", "")
	if got, want := DefaultOllamaDir(), filepath.Join(home, ".ollama", "models"); got != want {
		t.Errorf("DefaultOllamaDir() = %s, want %s", got, want)
	}
	if got, want := DefaultLMStudioDir(), filepath.Join(home, ".lmstudio", "models"); got != want {
		t.Errorf("DefaultLMStudioDir() with neither folder = %s, want %s", got, want)
	}
	old := filepath.Join(home, ".cache", "lm-studio", "models")
	os.MkdirAll(old, 0o755)
	if got := DefaultLMStudioDir(); got != old {
		t.Errorf("DefaultLMStudioDir() with only the older folder = %s, want %s", got, old)
	}
	os.MkdirAll(filepath.Join(home, ".lmstudio", "models"), 0o755)
	if got, want := DefaultLMStudioDir(), filepath.Join(home, ".lmstudio", "models"); got != want {
		t.Errorf("DefaultLMStudioDir() with both = %s, want %s", got, want)
	}
	t.Setenv("OLLAMA_MODELS", "~/o")
	t.Setenv("LMSTUDIO_MODELS", "$HOME/l")
	if got := DefaultOllamaDir(); got != filepath.Join(home, "o") {
		t.Errorf("OLLAMA_MODELS: %s", got)
	}
	if got := DefaultLMStudioDir(); got != filepath.Join(home, "l") {
		t.Errorf("LMSTUDIO_MODELS: %s", got)
	}
}
