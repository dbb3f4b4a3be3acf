package hub

// LM Studio's models folder, read in place, never written:
//
//	$LMSTUDIO_MODELS (default ~/.lmstudio/models, older ~/.cache/lm-studio/models)/
//	└── <publisher>/<repo>/<FILE>.gguf
//
// LM Studio downloads a Hugging Face repo's file to publisher/repo/FILE,
// and `lms import` may link a file there instead of copying it, so links
// are followed: the folder is the user's own, and what is opened must
// still be a GGUF file.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine"
)

// lmstudioPrefix starts a model name in LM Studio's folder:
// lmstudio:publisher/repo[/FILE.gguf].
const lmstudioPrefix = "lmstudio:"

// DefaultLMStudioDir is LM Studio's models folder: $LMSTUDIO_MODELS,
// else ~/.lmstudio/models, else the older ~/.cache/lm-studio/models when
// only it exists.
func DefaultLMStudioDir() string {
	if d := expandPath(os.Getenv("LMSTUDIO_MODELS")); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	dir := filepath.Join(home, ".lmstudio", "models")
	if _, err := os.Stat(dir); err != nil {
		if old := filepath.Join(home, ".cache", "lm-studio", "models"); isDir(old) {
			return old
		}
	}
	return dir
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func (o Options) lmstudioDir() string {
	if o.LMStudioDir == "" {
		return DefaultLMStudioDir()
	}
	return o.LMStudioDir
}

// resolveLMStudio finds model s (what follows "lmstudio:") in the folder
// at root: publisher/repo, the one model GGUF file in that folder, or
// publisher/repo/FILE.gguf.
func resolveLMStudio(s, root string) (string, error) {
	name := lmstudioPrefix + s
	parts := strings.Split(s, "/")
	for _, p := range parts {
		if !validRepoPath(p) {
			return "", fmt.Errorf("model %s: not an LM Studio name (publisher/repo or publisher/repo/FILE.gguf, without '..')", name)
		}
	}
	switch {
	case len(parts) == 3 && isGGUFName(parts[2]):
		file := filepath.Join(root, parts[0], parts[1], parts[2])
		if _, err := os.Stat(file); err != nil {
			return "", fmt.Errorf("model %s: no file %s in LM Studio's models folder (set LMSTUDIO_MODELS if LM Studio keeps them elsewhere)", name, file)
		}
		if splitShard.MatchString(strings.TrimSuffix(parts[2], filepath.Ext(parts[2]))) {
			return "", fmt.Errorf("model %s: a part of a split GGUF file; Driftwood does not read split GGUF files yet", name)
		}
		if !engine.IsGGUF(file) {
			return "", fmt.Errorf("model %s: %s is not a GGUF file", name, file)
		}
		return file, nil
	case len(parts) != 2:
		return "", fmt.Errorf("model %s: an LM Studio name is publisher/repo or publisher/repo/FILE.gguf", name)
	}
	dir := filepath.Join(root, parts[0], parts[1])
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("model %s: no folder %s in LM Studio's models folder (set LMSTUDIO_MODELS if LM Studio keeps them elsewhere)", name, dir)
	}
	if err != nil {
		return "", fmt.Errorf("model %s: %w", name, err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	models := ggufModels(names)
	switch {
	case len(models) == 0:
		return "", fmt.Errorf("model %s: %s holds no .gguf file", name, dir)
	case len(models) > 1:
		full := make([]string, len(models))
		for i, m := range models {
			full[i] = name + "/" + m.file
		}
		return "", fmt.Errorf("model %s: %s holds %d models; name one: %s", name, dir, len(models), listed(full))
	case models[0].parts > 1:
		return "", fmt.Errorf("model %s: %s is split into %d files; Driftwood does not read split GGUF files yet", name, models[0].file, models[0].parts)
	}
	return resolveLMStudio(s+"/"+models[0].file, root)
}

// lmstudioModels lists the GGUF models in LM Studio's folder at root:
// publisher/repo/FILE.gguf, a split file once (by its first part), no
// multimodal projectors. A missing folder is an empty list.
func lmstudioModels(root string) ([]Model, error) {
	publishers, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Model
	for _, p := range publishers {
		repos, _ := os.ReadDir(filepath.Join(root, p.Name()))
		for _, r := range repos {
			if !validRepoPath(p.Name()) || !validRepoPath(r.Name()) {
				continue
			}
			dir := filepath.Join(root, p.Name(), r.Name())
			entries, _ := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			for _, g := range ggufModels(names) {
				m := Model{Name: lmstudioPrefix + p.Name() + "/" + r.Name() + "/" + g.file, Store: StoreLMStudio, Path: filepath.Join(dir, g.file)}
				if g.parts > 1 {
					m.Problem = fmt.Sprintf("split into %d files, which Driftwood does not read yet", g.parts)
				}
				describeGGUFModel(&m)
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(a, b Model) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
