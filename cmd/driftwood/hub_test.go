package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/hub"
)

const testCommit = "0123456789abcdef0123456789abcdef01234567"

// hubEnv points the model commands at an empty cache and a hub that does
// not answer, and returns the cache.
func hubEnv(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
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

func TestPullCommand(t *testing.T) {
	cache := hubEnv(t)
	_, _, err := runHubCmd(t, cmdPull, "org/tiny")
	if !errors.Is(err, hub.ErrOffline) || !strings.Contains(err.Error(), `run "driftwood pull org/tiny" on a connected machine`) {
		t.Errorf("offline pull of an uncached model: %v", err)
	}
	snap := cacheTiny(t, cache)
	if out, _, err := runHubCmd(t, cmdPull, "org/tiny"); err != nil || out != snap+"\n" {
		t.Errorf("offline pull of a cached model: %q, %v", out, err)
	}
	if _, errOut, err := runHubCmd(t, cmdPull); err == nil || !strings.Contains(errOut, "usage: driftwood pull REPO") {
		t.Errorf("pull without a repo: %v, %q", err, errOut)
	}
	if _, errOut, err := runHubCmd(t, cmdPull, "-h"); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut, "HF_TOKEN") {
		t.Errorf("pull -h: %v, %q", err, errOut)
	}
}

func TestModelsAndRmCommands(t *testing.T) {
	cache := hubEnv(t)
	if out, _, err := runHubCmd(t, cmdModels); err != nil || !strings.HasPrefix(out, "no models in "+cache) {
		t.Errorf("models on an empty cache: %q, %v", out, err)
	}
	if out, _, err := runHubCmd(t, cmdModels, "--json"); err != nil || out != "[]\n" {
		t.Errorf("models --json on an empty cache: %q, %v", out, err)
	}
	snap := cacheTiny(t, cache)
	var size int64
	entries, _ := os.ReadDir(snap)
	for _, e := range entries {
		info, _ := e.Info()
		size += info.Size()
	}
	out, _, err := runHubCmd(t, cmdModels)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "REPO REVISION SIZE FORMAT RUNS" ||
		strings.Join(strings.Fields(lines[1]), " ") != "org/tiny main "+hub.FormatSize(size)+" f32 yes" {
		t.Errorf("models:\n%s(err %v)", out, err)
	}
	out, _, err = runHubCmd(t, cmdModels, "--json")
	var list []hub.CachedModel
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Repo != "org/tiny" || !list[0].Runs {
		t.Errorf("models --json:\n%s(err %v)", out, err)
	}
	if out, _, err := runHubCmd(t, cmdRm, "org/tiny"); err != nil || out != "removed org/tiny\n" {
		t.Errorf("rm: %q, %v", out, err)
	}
	if _, _, err := runHubCmd(t, cmdRm, "org/tiny"); !errors.Is(err, hub.ErrNotCached) {
		t.Errorf("rm of an uncached repo: %v", err)
	}
}
