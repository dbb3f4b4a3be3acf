package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/hub"
)

const testCommit = "0123456789abcdef0123456789abcdef01234567"

// hubEnv points the model commands at an empty cache, empty ollama and LM
// Studio folders and a hub that does not answer, and returns the cache.
func hubEnv(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("OLLAMA_MODELS", filepath.Join(t.TempDir(), "ollama"))
	t.Setenv("LMSTUDIO_MODELS", filepath.Join(t.TempDir(), "lmstudio"))
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "1")
	return cache
}

// cacheTiny puts the tiny model in the cache as org/tiny at main.
func cacheTiny(t *testing.T, cache string) string {
	t.Helper()
	storage := filepath.Join(cache, "models--org--tiny")
	snap := filepath.Join(storage, "snapshots", testCommit)
	os.MkdirAll(snap, 0o755)
	os.MkdirAll(filepath.Join(storage, "refs"), 0o755)
	for _, n := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(tinyModel, n))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(snap, n), b, 0o644)
	}
	os.WriteFile(filepath.Join(storage, "refs", "main"), []byte(testCommit), 0o644)
	return snap
}

func runHubCmd(t *testing.T, cmd func(context.Context, []string, io.Writer, io.Writer) error, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cmd(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// tinyGGUF is a GGUF model file the engine runs.
const tinyGGUF = "../../testdata/gguf/tiny-mixed.gguf"

// ollamaTiny puts the tiny GGUF model in ollama's store as tiny:1b.
func ollamaTiny(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(tinyGGUF)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	digest := hex.EncodeToString(sum[:])
	root := os.Getenv("OLLAMA_MODELS")
	blob := filepath.Join(root, "blobs", "sha256-"+digest)
	manifest := filepath.Join(root, "manifests", "registry.ollama.ai", "library", "tiny", "1b")
	os.MkdirAll(filepath.Dir(blob), 0o755)
	os.MkdirAll(filepath.Dir(manifest), 0o755)
	os.WriteFile(blob, b, 0o644)
	m := fmt.Sprintf(`{"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%s","size":%d}]}`, digest, len(b))
	os.WriteFile(manifest, []byte(m), 0o644)
	return blob
}

func TestPullCommand(t *testing.T) {
	cache := hubEnv(t)
	_, _, err := runHubCmd(t, cmdPull, "org/tiny")
	if !errors.Is(err, hub.ErrOffline) || !strings.Contains(err.Error(), `run "driftwood pull org/tiny" on a connected machine`) {
		t.Errorf("offline pull of an uncached model: %v", err)
	}
	_, _, err = runHubCmd(t, cmdPull, "org/tiny-GGUF:Q4_K_M")
	if !errors.Is(err, hub.ErrOffline) || !strings.Contains(err.Error(), `run "driftwood pull org/tiny-GGUF:Q4_K_M" on a connected machine`) {
		t.Errorf("offline pull of an uncached GGUF file: %v", err)
	}
	if _, _, err := runHubCmd(t, cmdPull, "ollama:tiny:1b"); err == nil || !strings.Contains(err.Error(), "another app's") {
		t.Errorf("pull of an ollama model: %v", err)
	}
	snap := cacheTiny(t, cache)
	if out, _, err := runHubCmd(t, cmdPull, "org/tiny"); err != nil || out != snap+"\n" {
		t.Errorf("offline pull of a cached model: %q, %v", out, err)
	}
	if _, errOut, err := runHubCmd(t, cmdPull); err == nil || !strings.Contains(errOut, "usage: driftwood pull REPO[@REVISION][:QUANT|:FILE.gguf]") {
		t.Errorf("pull without a repo: %v, %q", err, errOut)
	}
	if _, errOut, err := runHubCmd(t, cmdPull, "-h"); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut, "HF_TOKEN") || !strings.Contains(errOut, "OLLAMA_MODELS") {
		t.Errorf("pull -h: %v, %q", err, errOut)
	}
}

func TestModelsAndRmCommands(t *testing.T) {
	cache := hubEnv(t)
	if out, _, err := runHubCmd(t, cmdModels); err != nil || !strings.HasPrefix(out, "no models in the Hugging Face cache ("+cache+"), ollama's store") {
		t.Errorf("models with nothing anywhere: %q, %v", out, err)
	}
	if out, _, err := runHubCmd(t, cmdModels, "--json"); err != nil || out != "[]\n" {
		t.Errorf("models --json with nothing anywhere: %q, %v", out, err)
	}
	snap := cacheTiny(t, cache)
	var size int64
	entries, _ := os.ReadDir(snap)
	for _, e := range entries {
		info, _ := e.Info()
		size += info.Size()
	}
	blob := ollamaTiny(t)
	st, _ := os.Stat(blob)
	out, _, err := runHubCmd(t, cmdModels)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, want := range []string{
		"NAME SIZE FORMAT RUNS",
		"org/tiny " + hub.FormatSize(size) + " f32 yes",
		"ollama:tiny:1b " + hub.FormatSize(st.Size()) + " F32 yes",
	} {
		if err != nil || len(lines) != 3 || strings.Join(strings.Fields(lines[i]), " ") != want {
			t.Errorf("models: line %d is not %q:\n%s(err %v)", i, want, out, err)
		}
	}
	out, _, err = runHubCmd(t, cmdModels, "--json")
	var list []hub.Model
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 || list[0].Name != "org/tiny" || !list[0].Runs ||
		list[1].Name != "ollama:tiny:1b" || list[1].Path != blob || list[1].Store != hub.StoreOllama {
		t.Errorf("models --json:\n%s(err %v)", out, err)
	}
	for _, bad := range []string{"ollama:tiny:1b", "org/tiny:Q4_K_M", "org/tiny@main"} {
		if _, _, err := runHubCmd(t, cmdRm, bad); err == nil {
			t.Errorf("rm %s: accepted", bad)
		}
	}
	if _, err := os.Stat(blob); err != nil {
		t.Errorf("rm touched ollama's store: %v", err)
	}
	if out, _, err := runHubCmd(t, cmdRm, "org/tiny"); err != nil || out != "removed org/tiny\n" {
		t.Errorf("rm: %q, %v", out, err)
	}
	if _, _, err := runHubCmd(t, cmdRm, "org/tiny"); !errors.Is(err, hub.ErrNotCached) {
		t.Errorf("rm of an uncached repo: %v", err)
	}
}
