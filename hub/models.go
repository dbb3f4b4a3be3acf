package hub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Where a Model was found.
const (
	StoreHuggingFace = "huggingface"
	StoreOllama      = "ollama"
	StoreLMStudio    = "lmstudio"
)

// Model is a model found on this machine by Models.
type Model struct {
	// Name is what ResolveModel (and --model) takes to open it:
	// org/name[@revision], org/name[@revision]:QUANT or :FILE.gguf,
	// ollama:model:tag, lmstudio:publisher/repo/FILE.gguf.
	Name string `json:"name"`
	// Store is where it was found: StoreHuggingFace, StoreOllama or
	// StoreLMStudio.
	Store string `json:"store"`
	// Path is the model folder or GGUF file that engine.LoadModel opens
	// (for a model that does not open: what was found, the manifest of an
	// ollama model).
	Path string `json:"path"`
	// Size is the bytes of its files.
	Size int64 `json:"size"`
	// Format is the weights' format: f32, f16, bf16 or q4/g64 (MLX) for a
	// folder, the quantisation for a GGUF file (Q4_K_M, Q8_0, F16);
	// "" when unknown.
	Format string `json:"format"`
	// Summary is the shape: architecture, layers, hidden size.
	Summary string `json:"summary"`
	// Runs says whether Driftwood can load it; Problem says why not.
	Runs    bool   `json:"runs"`
	Problem string `json:"problem,omitempty"`
}

// Models lists the models on this machine that ResolveModel opens: the
// Hugging Face cache's snapshot folders and the GGUF files in its
// snapshots, then ollama's models, then LM Studio's, each sorted by name.
// A GGUF model is checked from its header (architecture and tensor
// types), not loaded. A store that is missing adds nothing; one that
// cannot be read adds an error, and the others are still listed.
func Models(opt Options) ([]Model, error) {
	var errs []error
	hf, err := hfModels(opt)
	if err != nil {
		errs = append(errs, fmt.Errorf("the Hugging Face cache %s: %w", opt.cacheDir(), err))
	}
	ol, err := ollamaModels(opt.ollamaDir())
	if err != nil {
		errs = append(errs, fmt.Errorf("ollama's store %s: %w", opt.ollamaDir(), err))
	}
	slices.SortFunc(ol, func(a, b Model) int { return strings.Compare(a.Name, b.Name) })
	lm, err := lmstudioModels(opt.lmstudioDir())
	if err != nil {
		errs = append(errs, fmt.Errorf("LM Studio's folder %s: %w", opt.lmstudioDir(), err))
	}
	return slices.Concat(hf, ol, lm), errors.Join(errs...)
}

// hfModels lists the cache's snapshots as List does, a snapshot of GGUF
// files as one Model a file (named org/name:QUANT when the quantisation
// picks that file, else org/name:FILE.gguf), and a snapshot folder as one
// Model when it is a model folder or holds no GGUF file.
func hfModels(opt Options) ([]Model, error) {
	cached, err := List(opt)
	var out []Model
	for _, c := range cached {
		repo := c.Repo
		switch {
		case slices.Contains(c.Refs, "main"):
		case len(c.Refs) > 0:
			repo += "@" + c.Refs[0]
		default:
			repo += "@" + c.Commit
		}
		files, _ := snapshotFiles(c.Dir)
		ggufs := ggufModels(files)
		if _, err := os.Stat(filepath.Join(c.Dir, "config.json")); err == nil || len(ggufs) == 0 {
			out = append(out, Model{Name: repo, Store: StoreHuggingFace, Path: c.Dir, Size: c.Size,
				Format: c.Format, Summary: c.Summary, Runs: c.Runs, Problem: c.Problem})
		}
		for _, g := range ggufs {
			m := Model{Store: StoreHuggingFace, Path: filepath.Join(c.Dir, filepath.FromSlash(g.file))}
			if g.parts > 1 {
				m.Problem = fmt.Sprintf("split into %d files, which Driftwood does not read yet", g.parts)
			}
			describeGGUFModel(&m)
			spec := g.file
			if q := m.Format; quantSpec.MatchString(q) {
				if f, err := pickGGUF(modelRef{Spec: q}, files); err == nil && f == g.file {
					spec = q
				}
			}
			m.Name = repo + ":" + spec
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b Model) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}
