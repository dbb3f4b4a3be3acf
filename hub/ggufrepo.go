package hub

// One GGUF file of a Hugging Face repo: org/name[@revision]:QUANT or
// org/name[@revision]:FILE.gguf. GGUF repos (bartowski's, unsloth's,
// lmstudio-community's) publish one model in many quantisations, a file
// each, named after the quantisation: Llama-3.2-1B-Instruct-Q4_K_M.gguf,
// llama-2-7b-chat.Q4_K_M.gguf, qwen2.5-0.5b-instruct-q4_k_m.gguf. Only
// the file asked for is downloaded, into the same cache layout as a
// model folder (blobs/<sha256>, snapshots/<commit>/<file>), so
// huggingface_hub finds it too.

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// modelRef is a parsed hub model name: a repo and revision, and for a
// GGUF repo the file asked for (Spec: a quantisation or a file name).
type modelRef struct {
	repoRef
	Spec string
}

func (m modelRef) String() string {
	if m.Spec == "" {
		return m.repoRef.String()
	}
	return m.repoRef.String() + ":" + m.Spec
}

// quantSpec is a quantisation name as GGUF file names end with it:
// Q4_K_M, q8_0, f16, UD-Q4_K_XL.
var quantSpec = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// parseModelRef parses org/name[@revision][:QUANT or :FILE.gguf]. A repo
// id and a git revision cannot hold ':', so the first one starts the
// file part.
func parseModelRef(s string) (modelRef, error) {
	repo, spec, hasSpec := strings.Cut(s, ":")
	ref, err := parseRepo(repo)
	if err != nil {
		return modelRef{}, err
	}
	if !hasSpec {
		return modelRef{repoRef: ref}, nil
	}
	if isGGUFName(spec) {
		if !validRepoPath(spec) {
			return modelRef{}, fmt.Errorf("%q: %q is not a file name of a repo (no '..', '\\', control characters or leading '/')", s, spec)
		}
	} else if !quantSpec.MatchString(spec) {
		return modelRef{}, fmt.Errorf("%q: after ':' comes a quantisation (Q4_K_M: letters, digits, '_', '.', '-') or a file name ending in .gguf", s)
	}
	return modelRef{repoRef: ref, Spec: spec}, nil
}

func isGGUFName(name string) bool {
	return strings.HasSuffix(strings.ToLower(name), ".gguf")
}

// validRepoPath reports whether name is a file path of a repo that may
// become a path in the snapshot folder: relative, '/'-separated, no
// empty, '.' or '..' part, no backslash, valid UTF-8 without control
// characters.
func validRepoPath(name string) bool {
	if name == "" || len(name) > 1024 || !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) || strings.Contains(name, `\`) {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// splitShard matches llama.cpp's names for the parts of a split GGUF
// file (gguf-split): NAME-00001-of-00003.gguf.
var splitShard = regexp.MustCompile(`-(\d{5})-of-(\d{5})$`)

// ggufModel is one model among a repo's GGUF files: a file, or the parts
// of a split one.
type ggufModel struct {
	file  string // the file, or the first part of a split one
	base  string // its name without folder, .gguf and part number
	parts int    // 0 for a whole file, else how many parts
}

// ggufModels groups the repo's GGUF files into models, leaving out
// multimodal projectors (mmproj-*.gguf, which are not language models)
// and names that could not become a path.
func ggufModels(names []string) []ggufModel {
	var out []ggufModel
	for _, n := range names {
		if !isGGUFName(n) || !validRepoPath(n) {
			continue
		}
		stem := path.Base(n)
		stem = stem[:len(stem)-len(".gguf")]
		if strings.HasPrefix(strings.ToLower(stem), "mmproj") {
			continue
		}
		m := ggufModel{file: n, base: stem}
		if sm := splitShard.FindStringSubmatch(stem); sm != nil {
			if sm[1] != "00001" {
				continue
			}
			m.base = stem[:len(stem)-len(sm[0])]
			m.parts, _ = strconv.Atoi(sm[2])
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b ggufModel) int { return strings.Compare(a.file, b.file) })
	return out
}

// quantMatches reports whether a GGUF file's base name ends with the
// quantisation q, ignoring case, after a '-', '.' or '_' (or is q).
func quantMatches(base, q string) bool {
	b, q := strings.ToLower(base), strings.ToLower(q)
	if b == q {
		return true
	}
	if len(b) <= len(q) || !strings.HasSuffix(b, q) {
		return false
	}
	switch b[len(b)-len(q)-1] {
	case '-', '.', '_':
		return true
	}
	return false
}

// noGGUFError: no GGUF file of the repo (or of its cached snapshot) is
// the one asked for; choices says what there is.
type noGGUFError struct {
	ref     modelRef
	choices string
}

func (e *noGGUFError) Error() string {
	if isGGUFName(e.ref.Spec) {
		return fmt.Sprintf("model %s: %s has no file %s; %s", e.ref, e.ref.ID, e.ref.Spec, e.choices)
	}
	return fmt.Sprintf("model %s: no GGUF file of %s ends with the quantisation %s; %s", e.ref, e.ref.ID, e.ref.Spec, e.choices)
}

// pickGGUF chooses the file that ref.Spec names among a repo's files: a
// file name (its path in the repo, else a base name that is unique), or
// a quantisation that exactly one model's file name ends with. A split
// model is refused; two matches are refused with both named; no match
// is a *noGGUFError.
func pickGGUF(ref modelRef, names []string) (string, error) {
	models := ggufModels(names)
	var found []ggufModel
	if isGGUFName(ref.Spec) {
		found = filesNamed(names, ref.Spec)
	} else {
		for _, m := range models {
			if quantMatches(m.base, ref.Spec) {
				found = append(found, m)
			}
		}
	}
	switch {
	case len(found) == 0:
		return "", &noGGUFError{ref, ggufChoices(ref, models)}
	case len(found) > 1:
		files := make([]string, len(found))
		for i, m := range found {
			files[i] = m.file
		}
		return "", fmt.Errorf("model %s: %q matches %d files, %s; name one as %s:FILE.gguf",
			ref, ref.Spec, len(found), listed(files), ref.repoRef)
	case found[0].parts > 1:
		return "", fmt.Errorf("model %s: %s is split into %d files (gguf-split); Driftwood does not read split GGUF files yet: "+
			"pick another quantisation, or merge the parts with llama.cpp's llama-gguf-split --merge",
			ref, found[0].file, found[0].parts)
	}
	return found[0].file, nil
}

// filesNamed finds the file name among names: the path itself, else the
// files of that base name.
func filesNamed(names []string, name string) []ggufModel {
	var found []ggufModel
	for _, exact := range []bool{true, false} {
		for _, n := range names {
			if validRepoPath(n) && (n == name || !exact && path.Base(n) == name) {
				m := ggufModel{file: n, base: strings.TrimSuffix(path.Base(n), path.Ext(n))}
				if sm := splitShard.FindStringSubmatch(m.base); sm != nil {
					m.parts, _ = strconv.Atoi(sm[2])
				}
				found = append(found, m)
			}
		}
		if len(found) > 0 {
			break
		}
	}
	return found
}

// ggufChoices says what a repo's GGUF models are, as the names to give
// after the ':'.
func ggufChoices(ref modelRef, models []ggufModel) string {
	if len(models) == 0 {
		return "it has no .gguf files"
	}
	return fmt.Sprintf("it has %s (give one as %s:QUANT or %s:FILE.gguf)", listed(quantLabels(models)), ref.repoRef, ref.repoRef)
}

// quantLabels names each model by what follows the prefix all share (cut
// after a '-' or '.'): Q4_K_M, Q8_0, f16; a model whose label is empty
// or also matches another model is named by its file.
func quantLabels(models []ggufModel) []string {
	prefix := models[0].base
	for _, m := range models[1:] {
		for !strings.HasPrefix(m.base, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	cut := strings.LastIndexAny(prefix, "-.") + 1
	labels := make([]string, len(models))
	for i, m := range models {
		labels[i] = m.base[cut:]
		n := 0
		for _, o := range models {
			if quantMatches(o.base, labels[i]) {
				n++
			}
		}
		if len(models) == 1 || labels[i] == "" || n != 1 {
			labels[i] = m.file
		}
	}
	return labels
}

// listed joins names for a message, at most 24 of them.
func listed(names []string) string {
	const most = 24
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
	}
	return strings.Join(names, ", ")
}

// cachedGGUF finds the GGUF file that ref names in ref's cached
// snapshot. A file not in the snapshot gives an error wrapping
// ErrNotCached (the hub may have it); an ambiguous or split one is
// refused as pickGGUF refuses it.
func cachedGGUF(cache string, ref modelRef) (string, error) {
	storage := filepath.Join(cache, ref.folder())
	commit, tried, err := cachedCommit(storage, ref.repoRef)
	notCached := func(why string) (string, error) {
		return "", fmt.Errorf("model %s: %w: %s (tried %s); run \"driftwood pull %s\" to download it",
			ref, ErrNotCached, why, strings.Join(tried, ", "), ref)
	}
	var nc *notCachedError
	if errors.As(err, &nc) {
		return notCached(nc.why)
	}
	if err != nil {
		return "", fmt.Errorf("model %s: %w", ref, err)
	}
	snap := filepath.Join(storage, "snapshots", commit)
	tried = append(tried, snap)
	names, err := snapshotFiles(snap)
	if errors.Is(err, os.ErrNotExist) {
		return notCached("no such snapshot")
	}
	if err != nil {
		return "", fmt.Errorf("model %s: %w", ref, err)
	}
	file, err := pickGGUF(ref, names)
	var no *noGGUFError
	if errors.As(err, &no) {
		return notCached("the snapshot has no such GGUF file")
	}
	if err != nil {
		return "", err
	}
	return filepath.Join(snap, filepath.FromSlash(file)), nil
}

// snapshotFiles lists the files of a snapshot folder whose links resolve,
// as '/'-separated paths relative to it.
func snapshotFiles(snap string) ([]string, error) {
	if _, err := os.Stat(snap); err != nil {
		return nil, err
	}
	var names []string
	err := filepath.WalkDir(snap, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			rel, _ := filepath.Rel(snap, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	return names, err
}
