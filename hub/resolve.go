package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine"
)

// ResolveModel turns any model name into what engine.LoadModel opens,
// downloading a Hugging Face repo (or one GGUF file of it) that is not
// cached: Resolve, then Pull when the model is not in the cache. It is
// the one call for the chat, run and the model picker.
func ResolveModel(ctx context.Context, name string, opt Options) (string, error) {
	path, err := Resolve(name, opt)
	if errors.Is(err, ErrNotCached) {
		return Pull(ctx, name, opt)
	}
	return path, err
}

// Resolve turns a model name into what engine.LoadModel opens, without
// the network:
//
//   - a local folder with config.json, or a GGUF file, is returned as is;
//   - ollama:NAME[:TAG] is the GGUF blob in ollama's store (see ollama.go);
//   - lmstudio:PUBLISHER/REPO[/FILE.gguf] is the GGUF file in LM Studio's
//     models folder (see lmstudio.go);
//   - org/name[@revision] is the repo's snapshot folder in the cache;
//   - org/name[@revision]:QUANT or :FILE.gguf is that GGUF file in the
//     repo's cached snapshot (see ggufrepo.go).
//
// A repo, or a repo's GGUF file, that is not completely cached gives an
// error wrapping ErrNotCached that names the paths tried and the pull
// command.
func Resolve(name string, opt Options) (string, error) {
	if rest, ok := strings.CutPrefix(name, ollamaPrefix); ok {
		return resolveOllama(rest, opt.ollamaDir())
	}
	if rest, ok := strings.CutPrefix(name, lmstudioPrefix); ok {
		return resolveLMStudio(rest, opt.lmstudioDir())
	}
	st, statErr := os.Stat(name)
	if statErr == nil && st.Mode().IsRegular() {
		if engine.IsGGUF(name) {
			return name, nil
		}
		return "", fmt.Errorf("model %q: a file, but not a GGUF file (a model is a GGUF file, a folder with config.json, or a repo id)", name)
	}
	if statErr == nil && st.IsDir() {
		if _, err := os.Stat(filepath.Join(name, "config.json")); err == nil {
			return name, nil
		}
	}
	ref, err := parseModelRef(name)
	if err != nil {
		if statErr == nil && st.IsDir() {
			return "", fmt.Errorf("model %q: folder has no config.json, so it is not a model folder", name)
		}
		return "", fmt.Errorf("model %q: no such folder, and %v", name, err)
	}
	if ref.Spec != "" {
		return cachedGGUF(opt.cacheDir(), ref)
	}
	return cachedSnapshot(opt.cacheDir(), ref.repoRef, name)
}
