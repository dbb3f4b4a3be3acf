package hub

// ollama's store, read in place, never written:
//
//	$OLLAMA_MODELS (default ~/.ollama/models)/
//	├── manifests/<host>/<namespace>/<model>/<tag>   JSON: the layers, by digest
//	└── blobs/sha256-<hex>                            each layer's content
//
// A model's manifest lists its layers (the weights, the chat template,
// the parameters, the license); the layer of media type
// application/vnd.ollama.image.model is the GGUF file, and Driftwood
// opens that blob where it lies. The GGUF carries its own tokenizer and
// chat template, so the other layers are not read.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// ollamaPrefix starts a model name in ollama's store: ollama:llama3.2:1b.
const ollamaPrefix = "ollama:"

// ollama's defaults for the parts a name leaves out
// (types/model/name.go).
const (
	ollamaHost      = "registry.ollama.ai"
	ollamaNamespace = "library"
	ollamaTag       = "latest"
)

// ollamaModelType is the media type of the layer that holds the GGUF file.
const ollamaModelType = "application/vnd.ollama.image.model"

// maxManifestBytes bounds a manifest read: ollama's are under 2 KB.
const maxManifestBytes = 64 << 10

// DefaultOllamaDir is the folder of ollama's store: $OLLAMA_MODELS, else
// ~/.ollama/models.
func DefaultOllamaDir() string {
	if d := expandPath(os.Getenv("OLLAMA_MODELS")); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".ollama", "models")
}

func (o Options) ollamaDir() string {
	if o.OllamaDir == "" {
		return DefaultOllamaDir()
	}
	return o.OllamaDir
}

// ollamaName is a model's name in ollama's store.
type ollamaName struct {
	Host, Namespace, Model, Tag string
}

// String is the shortest name ollama takes for n, as `ollama list` shows
// it: llama3.2:1b, someone/model:latest, host/namespace/model:tag.
func (n ollamaName) String() string {
	s := n.Model + ":" + n.Tag
	switch {
	case n.Host != ollamaHost:
		return n.Host + "/" + n.Namespace + "/" + s
	case n.Namespace != ollamaNamespace:
		return n.Namespace + "/" + s
	}
	return s
}

// The characters of each part of a name, as ollama's isValidPart allows
// them: host 1–350 (':' for a port), namespace 1–80 without '.', model
// and tag 1–80. None can be "." or "..", so the parts stay folder names
// under manifests/.
var (
	ollamaHostPart  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,349}$`)
	ollamaNSPart    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,79}$`)
	ollamaModelPart = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}$`)
)

// parseOllamaName parses [[host/]namespace/]model[:tag] as ollama does
// (ParseName): the tag follows the last ':' after the last '/'.
func parseOllamaName(s string) (ollamaName, error) {
	n := ollamaName{Host: ollamaHost, Namespace: ollamaNamespace, Tag: ollamaTag}
	rest := s
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		rest, n.Tag = rest[:i], rest[i+1:]
	}
	parts := strings.Split(rest, "/")
	n.Model = parts[len(parts)-1]
	switch len(parts) {
	case 1:
	case 2:
		n.Namespace = parts[0]
	case 3:
		n.Host, n.Namespace = parts[0], parts[1]
	default:
		return ollamaName{}, fmt.Errorf("model %s%s: an ollama name is [[host/]namespace/]model[:tag]", ollamaPrefix, s)
	}
	if !ollamaHostPart.MatchString(n.Host) || !ollamaNSPart.MatchString(n.Namespace) ||
		!ollamaModelPart.MatchString(n.Model) || !ollamaModelPart.MatchString(n.Tag) {
		return ollamaName{}, fmt.Errorf("model %s%s: not an ollama name ([[host/]namespace/]model[:tag]; letters, digits, '_', '-' and '.', each part starting with a letter, digit or '_')", ollamaPrefix, s)
	}
	return n, nil
}

// manifest is where ollama keeps n's manifest under its store root.
func (n ollamaName) manifest(root string) string {
	return filepath.Join(root, "manifests", n.Host, n.Namespace, n.Model, n.Tag)
}

// resolveOllama finds the GGUF blob of model s (what follows "ollama:")
// in the store at root.
func resolveOllama(s, root string) (string, error) {
	n, err := parseOllamaName(s)
	if err != nil {
		return "", err
	}
	path := n.manifest(root)
	data, err := limitedfile.Read(path, maxManifestBytes)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("model %s%s: not in ollama's store: no manifest %s; run \"ollama pull %s\" (or set OLLAMA_MODELS to the store's folder)",
			ollamaPrefix, s, path, n)
	}
	if err != nil {
		return "", fmt.Errorf("model %s%s: %w", ollamaPrefix, s, err)
	}
	blob, err := ollamaBlob(root, path, data)
	if err != nil {
		return "", fmt.Errorf("model %s%s: %w", ollamaPrefix, s, err)
	}
	return blob, nil
}

// ollamaDigest is a layer's digest as ollama writes it.
var ollamaDigest = regexp.MustCompile(`^sha256:([0-9a-f]{64})$`)

// ollamaBlob reads a manifest (data, read from path) and returns its
// model layer's blob, checked: the digest names a file in root/blobs, a
// regular file (not a link) whose real path is inside root, of the size
// the manifest gives, and a GGUF file.
func ollamaBlob(root, path string, data []byte) (string, error) {
	var m struct {
		Layers []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
			Size      int64  `json:"size"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("manifest %s: %v", path, err)
	}
	var digest string
	var size int64
	n := 0
	for _, l := range m.Layers {
		if l.MediaType == ollamaModelType {
			digest, size = l.Digest, l.Size
			n++
		}
	}
	switch {
	case n == 0:
		return "", fmt.Errorf("manifest %s has no layer of type %s: not a model Driftwood can open (a cloud model, or weights that are not GGUF)", path, ollamaModelType)
	case n > 1:
		return "", fmt.Errorf("manifest %s has %d layers of type %s; Driftwood opens a model of one GGUF file", path, n, ollamaModelType)
	}
	hex := ollamaDigest.FindStringSubmatch(digest)
	if hex == nil {
		return "", fmt.Errorf("manifest %s: the model layer's digest %q is not sha256:<64 hex digits>, so it names no blob of the store", path, digest)
	}
	blob := filepath.Join(root, "blobs", "sha256-"+hex[1])
	fi, err := os.Lstat(blob)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("manifest %s names the blob %s, which is missing (an interrupted pull? pull the model again)", path, blob)
	case err != nil:
		return "", err
	case fi.Mode()&os.ModeSymlink != 0:
		return "", fmt.Errorf("%s is a symbolic link: refused, Driftwood opens only files inside ollama's store", blob)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file (%s)", blob, limitedfile.Kind(fi.Mode()))
	case fi.Size() != size:
		return "", fmt.Errorf("%s is %d bytes, but manifest %s says %d (an interrupted pull?)", blob, fi.Size(), path, size)
	}
	if err := inside(root, blob); err != nil {
		return "", err
	}
	if !engine.IsGGUF(blob) {
		return "", fmt.Errorf("%s, the model layer of %s, is not a GGUF file", blob, path)
	}
	return blob, nil
}

// inside returns an error unless file's real path (links resolved) is
// inside root's.
func inside(root, file string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(realRoot, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is really %s, outside ollama's store %s: refused", file, real, realRoot)
	}
	return nil
}

// ollamaModels lists the models in the store at root: every manifest
// under manifests/<host>/<namespace>/<model>/<tag>. A missing store is an
// empty list; a manifest that does not open as a model is listed with
// the reason.
func ollamaModels(root string) ([]Model, error) {
	manifests := filepath.Join(root, "manifests")
	var out []Model
	err := filepath.WalkDir(manifests, func(path string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) && path == manifests {
			return filepath.SkipAll
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(manifests, path)
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) != 4 {
			return nil
		}
		name := parts[0] + "/" + parts[1] + "/" + parts[2] + ":" + parts[3]
		n, err := parseOllamaName(name)
		if err != nil {
			return nil // not a name ollama would have written
		}
		m := Model{Name: ollamaPrefix + n.String(), Store: StoreOllama, Path: path}
		data, err := limitedfile.Read(path, maxManifestBytes)
		var blob string
		if err == nil {
			blob, err = ollamaBlob(root, path, data)
		}
		if err != nil {
			m.Problem = err.Error()
		} else {
			m.Path = blob
			describeGGUFModel(&m)
		}
		out = append(out, m)
		return nil
	})
	return out, err
}
