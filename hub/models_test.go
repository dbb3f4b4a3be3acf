package hub

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

// cacheGGUF lays GGUF files into the cache as a pull of org/name:QUANT
// leaves them, and returns their paths in the snapshot.
func cacheGGUF(t *testing.T, cache, repo, commit string, files map[string][]byte) map[string]string {
	t.Helper()
	storage := filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
	os.MkdirAll(filepath.Join(storage, "blobs"), 0o755)
	paths := map[string]string{}
	for name, b := range files {
		etag := sha256Of(b)
		if err := os.WriteFile(filepath.Join(storage, "blobs", etag), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := linkSnapshot(storage, commit, name, etag); err != nil {
			t.Fatal(err)
		}
		paths[name] = filepath.Join(storage, "snapshots", commit, name)
	}
	if err := writeRef(storage, "main", commit); err != nil {
		t.Fatal(err)
	}
	return paths
}

func TestModels(t *testing.T) {
	mixed, kquants := testGGUF(t, "tiny-mixed.gguf"), testGGUF(t, "tiny-kquants.gguf")
	gemma := headerGGUF(t, "gemma3", 15)
	iq2 := headerGGUF(t, "llama", 19, gguf.WriteTensor{Name: "token_embd.weight", Type: gguf.IQ2_XXS, Dims: []int{256}, Data: make([]byte, 66)})

	cache := t.TempDir()
	folder := cacheFromTestdata(t, cache, "org/tiny", "tiny-f32", tinyCommit, inferenceNames...)
	old := filepath.Join(cache, "models--org--tiny", "snapshots", shardedCommit)
	os.MkdirAll(old, 0o755)
	os.WriteFile(filepath.Join(old, "config.json"), []byte(`{"architectures": ["LlamaForCausalLM"]}`), 0o644)
	hf := cacheGGUF(t, cache, "org/gguf", ggufCommit, map[string][]byte{"Tiny-Q4_K_M.gguf": mixed, "Tiny-Q4_K_S.gguf": kquants, "mmproj-Tiny-F16.gguf": headerGGUF(t, "clip", 1)})

	o := newFakeOllama(t)
	o.model("registry.ollama.ai/library/llama3.2/1b", mixed)
	o.model("registry.ollama.ai/someone/gemma/latest", gemma)
	o.manifest("registry.ollama.ai/library/cloud/latest", layer{"application/vnd.ollama.image.template", o.blob([]byte("x")), 1})
	o.write("registry.ollama.ai/library/stray", []byte("a file where a model's folder would be"))

	lm := fakeLMStudio(t, map[string][]byte{
		"pub/Tiny-GGUF/Tiny-Q4_K_S.gguf":            kquants,
		"pub/Tiny-GGUF/mmproj-Tiny-F16.gguf":        headerGGUF(t, "clip", 1),
		"pub/Odd-GGUF/Odd-IQ2_XXS.gguf":             iq2,
		"pub/Big-GGUF/Big-Q8_0-00001-of-00002.gguf": mixed,
		"pub/Big-GGUF/Big-Q8_0-00002-of-00002.gguf": mixed,
	})
	opt := Options{CacheDir: cache, OllamaDir: o.root, LMStudioDir: lm}

	models, err := Models(opt)
	if err != nil {
		t.Fatal(err)
	}
	blob := func(b []byte) string { return filepath.Join(o.root, "blobs", "sha256-"+sha256Of(b)) }
	want := []struct {
		m       Model
		problem string
		reason  string
	}{
		{Model{Name: "org/gguf:Q4_K_S", Store: StoreHuggingFace, Path: hf["Tiny-Q4_K_S.gguf"], Size: int64(len(kquants)), Format: "Q4_K_S", Runs: true},
			"", "a GGUF file whose quantisation picks it is named by it"},
		{Model{Name: "org/gguf:Tiny-Q4_K_M.gguf", Store: StoreHuggingFace, Path: hf["Tiny-Q4_K_M.gguf"], Size: int64(len(mixed)), Format: "F32", Runs: true},
			"", "one whose general.file_type is not in its name is named by its file"},
		{Model{Name: "org/tiny", Store: StoreHuggingFace, Path: folder, Format: "f32", Runs: true},
			"", "a model folder at main"},
		{Model{Name: "org/tiny@" + shardedCommit, Store: StoreHuggingFace, Path: old},
			"config.json", "another snapshot, named by its commit"},
		{Model{Name: "ollama:cloud:latest", Store: StoreOllama, Path: filepath.Join(o.root, "manifests", "registry.ollama.ai", "library", "cloud", "latest")},
			"has no layer of type application/vnd.ollama.image.model", "a manifest without weights is listed with why"},
		{Model{Name: "ollama:llama3.2:1b", Store: StoreOllama, Path: blob(mixed), Size: int64(len(mixed)), Format: "F32", Runs: true},
			"", "an ollama model is its blob"},
		{Model{Name: "ollama:someone/gemma:latest", Store: StoreOllama, Path: blob(gemma), Size: int64(len(gemma)), Format: "Q4_K_M"},
			`general.architecture "gemma3" is not supported`, "an architecture Driftwood does not run"},
		{Model{Name: "lmstudio:pub/Big-GGUF/Big-Q8_0-00001-of-00002.gguf", Store: StoreLMStudio, Path: filepath.Join(lm, "pub", "Big-GGUF", "Big-Q8_0-00001-of-00002.gguf"), Size: int64(len(mixed)), Format: "F32"},
			"split into 2 files", "a split file is listed once, by its first part, as not running"},
		{Model{Name: "lmstudio:pub/Odd-GGUF/Odd-IQ2_XXS.gguf", Store: StoreLMStudio, Path: filepath.Join(lm, "pub", "Odd-GGUF", "Odd-IQ2_XXS.gguf"), Size: int64(len(iq2)), Format: "IQ2_XXS"},
			"tensor token_embd.weight is IQ2_XXS, which Driftwood does not read", "a tensor type Driftwood does not read"},
		{Model{Name: "lmstudio:pub/Tiny-GGUF/Tiny-Q4_K_S.gguf", Store: StoreLMStudio, Path: filepath.Join(lm, "pub", "Tiny-GGUF", "Tiny-Q4_K_S.gguf"), Size: int64(len(kquants)), Format: "Q4_K_S", Runs: true},
			"", "an LM Studio file, without its projector"},
	}
	if len(models) != len(want) {
		names := make([]string, len(models))
		for i, m := range models {
			names[i] = m.Name
		}
		t.Fatalf("Models listed %d: %v; want %d", len(models), names, len(want))
	}
	for i, w := range want {
		got := models[i]
		if w.m.Size == 0 {
			w.m.Size = got.Size
		}
		if w.m.Format == "" {
			w.m.Format = got.Format
		}
		problem, summary := got.Problem, got.Summary
		got.Problem, got.Summary = "", ""
		if got != w.m || !strings.Contains(problem, w.problem) || (w.problem == "") != (problem == "") {
			t.Errorf("%s:\n got %+v (problem %q)\nwant %+v (problem %q)", w.reason, got, problem, w.m, w.problem)
		}
		if got.Runs && summary == "" {
			t.Errorf("%s: no summary", w.reason)
		}
	}
	if s := models[5].Summary; s != "llama 3 layers, hidden 64 (driftwood random tiny-f32)" {
		t.Errorf("a GGUF summary: %q", s)
	}

	// Every name listed opens to the path listed.
	for _, m := range models {
		if !m.Runs {
			continue
		}
		if got, err := ResolveModel(context.Background(), m.Name, Options{CacheDir: cache, OllamaDir: o.root, LMStudioDir: lm, Offline: true}); err != nil || got != m.Path {
			t.Errorf("ResolveModel(%s) = %q, %v; want %s", m.Name, got, err, m.Path)
		}
	}

	// A store that cannot be read is an error; the others are listed.
	opt.LMStudioDir = filepath.Join(folder, "config.json")
	models, err = Models(opt)
	if err == nil || !strings.Contains(err.Error(), "LM Studio's folder "+opt.LMStudioDir) || len(models) != 7 {
		t.Errorf("Models with LM Studio's folder a file: %d models, %v", len(models), err)
	}
	// Stores that do not exist list nothing.
	empty := t.TempDir()
	if models, err := Models(Options{CacheDir: filepath.Join(empty, "a"), OllamaDir: filepath.Join(empty, "b"), LMStudioDir: filepath.Join(empty, "c")}); err != nil || len(models) != 0 {
		t.Errorf("Models of no stores = %v, %v", models, err)
	}
}

// TestGGUFArchitecturesAreTheEngines holds the listing's quick check to
// the engine's: an architecture the listing says runs must get past the
// engine's architecture check, and one it refuses must be refused there.
func TestGGUFArchitecturesAreTheEngines(t *testing.T) {
	dir := t.TempDir()
	for _, arch := range []string{"llama", "qwen2", "qwen3", "mistral", "gemma3", "phi3", "qwen3moe", "clip"} {
		path := filepath.Join(dir, arch+".gguf")
		os.WriteFile(path, headerGGUF(t, arch, 1), 0o644)
		_, err := engine.LoadModel(path)
		refused := err != nil && strings.Contains(err.Error(), "general.architecture") && strings.Contains(err.Error(), "not supported")
		if refused == ggufArchitectures[arch] {
			t.Errorf("%s: the listing says runs=%v, the engine says %v", arch, ggufArchitectures[arch], err)
		}
	}
}

func TestGGUFQuant(t *testing.T) {
	for _, tc := range []struct {
		b      []byte
		want   string
		reason string
	}{
		{headerGGUF(t, "llama", 15), "Q4_K_M", "general.file_type names it"},
		{headerGGUF(t, "llama", 32), "BF16", "BF16 is 32"},
		{headerGGUF(t, "llama", 999, gguf.WriteTensor{Name: "a", Type: gguf.Q8_0, Dims: []int{64}, Data: make([]byte, 68)},
			gguf.WriteTensor{Name: "b", Type: gguf.F32, Dims: []int{4}, Data: make([]byte, 16)}), "Q8_0",
			"an unknown file type falls back to the type of most bytes"},
	} {
		path := filepath.Join(t.TempDir(), "m.gguf")
		os.WriteFile(path, tc.b, 0o644)
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := ggufQuant(f); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.reason, got, tc.want)
		}
		f.Close()
	}
}

func TestPrintable(t *testing.T) {
	if got := printable("Llama\x1b[2J 3.2\u0007\xff" + strings.Repeat("x", 100)); strings.ContainsAny(got, "\x1b\u0007") || len([]rune(got)) != 80 || !strings.HasPrefix(got, "Llama[2J 3.2?") {
		t.Errorf("printable = %q", got)
	}
}
