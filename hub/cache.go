package hub

// The cache layout, exactly as huggingface_hub writes it (file_download.py:
// hf_hub_download, _create_symlink, _cache_commit_hash_for_specific_revision,
// repo_folder_name; checked by TestCacheLayout):
//
//	<cache>/
//	├── CACHEDIR.TAG                        marks the folder as a cache for backup tools
//	├── .locks/models--org--name/<etag>.lock  flock(2)ed while that blob downloads
//	└── models--org--name/                  "models" + "--" + repo id with '/' as "--"
//	    ├── blobs/<etag>                    file contents named by the hub's ETag:
//	    │                                   the sha256 for LFS files (weights), the
//	    │                                   git blob sha1 for the others
//	    ├── blobs/<etag>.incomplete         a download under way, resumed with Range
//	    ├── refs/<revision>                 the commit hash the branch or tag points
//	    │                                   at, 40 hex digits with no newline
//	    └── snapshots/<commit>/<file>       relative symlink to ../../blobs/<etag>
//
// A snapshot folder is a model folder: engine.LoadModel reads it directly.
// Driftwood creates a snapshot's links only once all its blobs are verified,
// and moves refs/<revision> only then, so an interrupted pull never leaves a
// snapshot that looks complete but is not.

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// cachedirTag is the CACHEDIR.TAG that huggingface_hub writes.
const cachedirTag = "Signature: 8a477f597d28d172789f06886806bc55\n" +
	"# This file is a cache directory tag created by huggingface_hub.\n" +
	"# For information about cache directory tags, see:\n" +
	"#\thttps://bford.info/cachedir/\n"

// notCachedError says why a revision is not in the cache.
type notCachedError struct{ why string }

func (e *notCachedError) Error() string { return e.why }

// cachedCommit is the commit that ref's revision names in the repo's
// cache folder storage: the revision itself when it is a commit hash,
// else what refs/<revision> holds. tried lists the refs file read. A
// revision the cache does not have gives a *notCachedError.
func cachedCommit(storage string, ref repoRef) (commit string, tried []string, err error) {
	if commitHash.MatchString(ref.Revision) {
		return ref.Revision, nil, nil
	}
	refPath := filepath.Join(storage, "refs", filepath.FromSlash(ref.Revision))
	tried = []string{refPath}
	b, err := limitedfile.Read(refPath, limitedfile.Short)
	if errors.Is(err, os.ErrNotExist) {
		return "", tried, &notCachedError{"no such revision in the cache"}
	}
	if err != nil {
		return "", tried, err
	}
	commit = strings.TrimSpace(string(b))
	if !commitHash.MatchString(commit) {
		return "", tried, &notCachedError{fmt.Sprintf("%s holds %q, not a commit hash", refPath, commit)}
	}
	return commit, tried, nil
}

// cachedSnapshot finds ref's snapshot in the cache and checks that it holds
// what engine.LoadModel reads. asPath, when not empty, is the local path that
// was tried first, for the error message.
func cachedSnapshot(cache string, ref repoRef, asPath string) (string, error) {
	storage := filepath.Join(cache, ref.folder())
	var tried []string
	if asPath != "" {
		abs, _ := filepath.Abs(asPath)
		tried = append(tried, "folder "+abs)
	}
	notCached := func(why string) (string, error) {
		return "", fmt.Errorf("model %s: %w: %s (tried %s); run \"driftwood pull %s\" to download it",
			ref, ErrNotCached, why, strings.Join(tried, ", "), ref)
	}
	commit, refs, err := cachedCommit(storage, ref)
	tried = append(tried, refs...)
	var nc *notCachedError
	if errors.As(err, &nc) {
		return notCached(nc.why)
	}
	if err != nil {
		return "", fmt.Errorf("model %s: %w", ref, err)
	}
	snap := filepath.Join(storage, "snapshots", commit)
	tried = append(tried, snap)
	if _, err := os.Stat(snap); err != nil {
		return notCached("no such snapshot")
	}
	if missing := missingFiles(snap); len(missing) > 0 {
		if names, _ := snapshotFiles(snap); slices.Contains(missing, "config.json") && len(ggufModels(names)) > 0 {
			return notCached("the snapshot holds GGUF files, not a model folder; to open one of them, " + ggufChoices(modelRef{repoRef: ref}, ggufModels(names)))
		}
		return notCached("incomplete snapshot, missing " + strings.Join(missing, ", "))
	}
	return snap, nil
}

// missingFiles lists what engine.LoadModel needs from dir and cannot find:
// config.json, and model.safetensors or the shards that
// model.safetensors.index.json names. A dangling symlink counts as missing.
func missingFiles(dir string) []string {
	var missing []string
	need := func(name string) {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	need("config.json")
	data, err := limitedfile.Read(filepath.Join(dir, "model.safetensors.index.json"), limitedfile.Index)
	if errors.Is(err, os.ErrNotExist) {
		need("model.safetensors")
		return missing
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err != nil || json.Unmarshal(data, &idx) != nil || len(idx.WeightMap) == 0 {
		return append(missing, "a readable model.safetensors.index.json")
	}
	seen := map[string]bool{}
	for _, shard := range idx.WeightMap {
		if !seen[shard] {
			seen[shard] = true
			need(shard)
		}
	}
	return missing
}

// writeRef records that revision points at commit, atomically, as
// huggingface_hub does: refs/<revision> holds the bare hash. A revision that
// is the commit itself gets no ref.
func writeRef(storage, revision, commit string) error {
	if revision == commit {
		return nil
	}
	path := filepath.Join(storage, "refs", filepath.FromSlash(revision))
	if b, err := limitedfile.Read(path, limitedfile.Short); err == nil && string(b) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(commit)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// linkSnapshot makes snapshots/<commit>/<name> a relative symlink to
// blobs/<etag>. The link is made under a temporary name and renamed into
// place, so concurrent pulls of the same repo never see a missing or
// half-made link.
func linkSnapshot(storage, commit, name, etag string) error {
	dst := filepath.Join(storage, "snapshots", commit, filepath.FromSlash(name))
	target, err := filepath.Rel(filepath.Dir(dst), filepath.Join(storage, "blobs", etag))
	if err != nil {
		return err
	}
	if cur, err := os.Readlink(dst); err == nil && cur == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%s.tmp", dst, rand.Text()[:8])
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// tagCache writes CACHEDIR.TAG into the cache folder if it has none.
func tagCache(cache string) {
	path := filepath.Join(cache, "CACHEDIR.TAG")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		os.WriteFile(path, []byte(cachedirTag), 0o644)
	}
}

// SnapshotOf reports which repo and commit a folder is the snapshot of,
// when it is one in a Hugging Face cache (…/models--org--name/snapshots/
// COMMIT): a session made with it can then name the repo, not the path.
func SnapshotOf(dir string) (repo, commit string, ok bool) {
	dir = filepath.Clean(dir)
	commit = filepath.Base(dir)
	snaps := filepath.Dir(dir)
	folder := filepath.Base(filepath.Dir(snaps))
	parts := strings.Split(folder, "--")
	if filepath.Base(snaps) != "snapshots" || !commitHash.MatchString(commit) || len(parts) != 3 || parts[0] != "models" {
		return "", "", false
	}
	ref, err := parseRepo(parts[1] + "/" + parts[2])
	if err != nil {
		return "", "", false
	}
	return ref.ID, commit, true
}
