package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// CachedModel is one snapshot of a model repo in the cache.
type CachedModel struct {
	Repo    string   `json:"repo"`    // org/name
	Commit  string   `json:"commit"`  // the snapshot's commit hash
	Refs    []string `json:"refs"`    // branches and tags pointing at Commit
	Dir     string   `json:"dir"`     // the snapshot folder
	Size    int64    `json:"size"`    // bytes of the blobs its files point to
	Format  string   `json:"format"`  // weights: f32, f16, bf16, q4/g64, ...
	Summary string   `json:"summary"` // engine.Config.Describe, when it loads
	Runs    bool     `json:"runs"`    // whether Driftwood can load it
	Problem string   `json:"problem"` // why not, when Runs is false
}

// List returns the cached model snapshots, sorted by repo and commit. A
// missing cache folder is an empty list.
func List(opt Options) ([]CachedModel, error) {
	cache := opt.cacheDir()
	entries, err := os.ReadDir(cache)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []CachedModel
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "models--")
		org, name, ok2 := strings.Cut(rest, "--")
		if !ok || !ok2 || !e.IsDir() {
			continue
		}
		storage := filepath.Join(cache, e.Name())
		refs := readRefs(storage)
		snaps, err := os.ReadDir(filepath.Join(storage, "snapshots"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, s := range snaps {
			if !s.IsDir() {
				continue
			}
			m := CachedModel{Repo: org + "/" + name, Commit: s.Name(), Refs: refs[s.Name()], Dir: filepath.Join(storage, "snapshots", s.Name())}
			m.Size = snapshotSize(m.Dir)
			describe(&m)
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b CachedModel) int {
		return strings.Compare(a.Repo+" "+a.Commit, b.Repo+" "+b.Commit)
	})
	return out, nil
}

// readRefs maps each commit to the revisions whose refs file names it.
// Revisions may hold slashes (refs/pr/1), so the refs folder is walked.
func readRefs(storage string) map[string][]string {
	refs := map[string][]string{}
	root := filepath.Join(storage, "refs")
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".tmp") {
			return nil
		}
		b, err := limitedfile.Read(path, limitedfile.Short)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		commit := strings.TrimSpace(string(b))
		refs[commit] = append(refs[commit], filepath.ToSlash(rel))
		return nil
	})
	return refs
}

// snapshotSize adds up the distinct files the snapshot's entries resolve
// to (blobs through symlinks, or plain files where symlinks were not
// possible).
func snapshotSize(dir string) int64 {
	seen := map[string]bool{}
	var size int64
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil || seen[real] {
			return nil
		}
		seen[real] = true
		if st, err := os.Stat(real); err == nil {
			size += st.Size()
		}
		return nil
	})
	return size
}

// describe fills m's format, summary and whether it runs, from the
// snapshot's config.json (through engine.LoadConfig) and its files.
func describe(m *CachedModel) {
	m.Format = weightFormat(m.Dir)
	cfg, err := engine.LoadConfig(m.Dir)
	if err != nil {
		m.Problem = strings.ReplaceAll(err.Error(), m.Dir+string(filepath.Separator), "")
		return
	}
	m.Summary = cfg.Describe()
	missing := missingFiles(m.Dir)
	if _, err := os.Stat(filepath.Join(m.Dir, "tokenizer.json")); err != nil {
		missing = append(missing, "tokenizer.json")
	}
	if len(missing) > 0 {
		m.Problem = "missing " + strings.Join(missing, ", ")
		return
	}
	m.Runs = true
}

// weightFormat names the weights' format from config.json: the MLX
// quantisation (q4/g64) or the dtype (torch_dtype, or dtype in newer
// configs); "" when config.json says neither.
func weightFormat(dir string) string {
	data, err := limitedfile.Read(filepath.Join(dir, "config.json"), limitedfile.Config)
	if err != nil {
		return ""
	}
	var c struct {
		TorchDType   string `json:"torch_dtype"`
		DType        string `json:"dtype"`
		Quantization *struct {
			Bits      int `json:"bits"`
			GroupSize int `json:"group_size"`
		} `json:"quantization"`
	}
	if json.Unmarshal(data, &c) != nil {
		return ""
	}
	if q := c.Quantization; q != nil {
		return fmt.Sprintf("q%d/g%d", q.Bits, q.GroupSize)
	}
	dt := c.TorchDType
	if dt == "" {
		dt = c.DType
	}
	short := map[string]string{"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
	if s, ok := short[dt]; ok {
		return s
	}
	return dt
}

// Remove deletes repo (org/name) from the cache: its folder, with every
// snapshot and blob, and its lock files.
func Remove(repo string, opt Options) error {
	if strings.HasPrefix(repo, ollamaPrefix) || strings.HasPrefix(repo, lmstudioPrefix) {
		return fmt.Errorf("%s is another app's model, which Driftwood only reads: remove it with that app (ollama rm, LM Studio)", repo)
	}
	if strings.ContainsAny(repo, "@:") {
		return fmt.Errorf("%q: rm removes a whole repo; give it as org/name without @revision or :QUANT", repo)
	}
	ref, err := parseRepo(repo)
	if err != nil {
		return err
	}
	cache := opt.cacheDir()
	storage := filepath.Join(cache, ref.folder())
	if _, err := os.Lstat(storage); err != nil {
		return fmt.Errorf("%s: %w (no %s)", ref.ID, ErrNotCached, storage)
	}
	if err := os.RemoveAll(storage); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(cache, ".locks", ref.folder()))
}
