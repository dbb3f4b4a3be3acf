package hub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// fakeHub speaks the part of the Hugging Face hub protocol that Pull uses,
// as huggingface.co does:
//
//   - GET /api/models/{org}/{name}/revision/{rev}: {"sha", "siblings": [{"rfilename"}]}
//   - HEAD|GET /{org}/{name}/resolve/{rev}/{file}: for LFS files (*.safetensors, *.gguf) a
//     302 to the CDN with X-Linked-Etag (the sha256) and X-Linked-Size; for the
//     others a relative 307 to /api/resolve-cache/..., which answers with the
//     content, ETag (the git blob sha1) and Content-Length. Every answer carries
//     X-Repo-Commit.
//   - GET {cdn}/blobs/{sha256}: the content, honouring "Range: bytes=N-".
//
// Errors carry X-Error-Code as the hub's do: RepoNotFound, RevisionNotFound,
// EntryNotFound (404), GatedRepo (401 without the right token), and
// RepoNotFound with 401 for a missing repo asked for without a token.
type fakeHub struct {
	hub, cdn *httptest.Server
	repos    map[string]*fakeRepo
	token    string // the token the gated repo wants

	mu          sync.Mutex
	cut         map[string]int    // file: cut the body after this many bytes, once
	corrupt     map[string]bool   // file: serve altered bytes
	ignoreRange bool              // answer Range requests with 200 and everything
	cdnDown     bool              // answer 503
	cdnDelay    time.Duration     // before each CDN body
	inflight    int               // CDN requests being served
	maxInflight int               // the most at once
	etag        map[string]string // file: the ETag to send instead of its hash
	redirect    map[string]string // file: the Location to send from resolve
	cdnRedirect string            // a Location for every CDN answer
	cdnGets     map[string][]string
	hubAuth     []string // Authorization headers the hub saw
	cdnAuth     []string // and the CDN
	requested   []string // files asked for at resolve
}

type fakeRepo struct {
	commit string
	gated  bool
	files  map[string][]byte
}

func (r *fakeRepo) names() []string {
	var out []string
	for n := range r.files {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func sha256Of(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func gitSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func isLFS(name string) bool {
	return strings.HasSuffix(name, ".safetensors") || strings.HasSuffix(name, ".gguf")
}

// etagOf is the blob name the hub gives a file.
func etagOf(name string, b []byte) string {
	if isLFS(name) {
		return sha256Of(b)
	}
	return gitSHA1(b)
}

// tinyFiles reads the tiny f32 model, plus files a real repo has that
// inference does not need.
func tinyFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{
		"README.md":            []byte("# tiny\n"),
		"original/params.json": []byte("{}"),
	}
	dir := filepath.Join("..", "testdata", "models", "tiny-f32")
	for _, n := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "golden.json.gz"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		files[n] = b
	}
	return files
}

// shardedFiles is the tiny model with its weights split into two shards
// and an index, as large models are published.
func shardedFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := tinyFiles(t)
	delete(files, "model.safetensors")
	src, err := safetensors.Open(filepath.Join("..", "testdata", "models", "tiny-f32", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tmp := t.TempDir()
	index := map[string]any{"metadata": map[string]any{}, "weight_map": map[string]string{}}
	var shards [2][]safetensors.Tensor
	for i, n := range src.Names() {
		shards[i%2] = append(shards[i%2], *src.Tensors[n])
		index["weight_map"].(map[string]string)[n] = fmt.Sprintf("model-%05d-of-00002.safetensors", i%2+1)
	}
	for i, ts := range shards {
		name := fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)
		if err := safetensors.Write(filepath.Join(tmp, name), nil, ts); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	files["model.safetensors.index.json"], _ = json.Marshal(index)
	return files
}

const (
	tinyCommit    = "0123456789abcdef0123456789abcdef01234567"
	shardedCommit = "89abcdef0123456789abcdef0123456789abcdef"
	gatedCommit   = "fedcba9876543210fedcba9876543210fedcba98"
)

func newFakeHub(t *testing.T) *fakeHub {
	t.Helper()
	tiny := tinyFiles(t)
	h := &fakeHub{
		token: "hf_secret",
		repos: map[string]*fakeRepo{
			"org/tiny":    {commit: tinyCommit, files: tiny},
			"org/sharded": {commit: shardedCommit, files: shardedFiles(t)},
			"org/gated":   {commit: gatedCommit, files: tiny, gated: true},
		},
		cut:      map[string]int{},
		corrupt:  map[string]bool{},
		etag:     map[string]string{},
		redirect: map[string]string{},
		cdnGets:  map[string][]string{},
	}
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	t.Cleanup(h.hub.Close)
	t.Cleanup(h.cdn.Close)
	return h
}

func hubError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("X-Error-Code", code)
	http.Error(w, code, status)
}

func (h *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hubAuth = append(h.hubAuth, r.Header.Get("Authorization"))
	h.mu.Unlock()
	if strings.Contains(r.URL.EscapedPath(), "%2F") {
		http.Error(w, "a path with an escaped '/'", http.StatusBadRequest)
		return
	}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 6)
	var repoID, rev, file string
	switch {
	case len(parts) >= 6 && parts[0] == "api" && parts[1] == "models" && parts[4] == "revision" && r.Method == http.MethodGet:
		repoID, rev = parts[2]+"/"+parts[3], parts[5]
	case len(parts) >= 5 && parts[2] == "resolve":
		repoID, rev, file = parts[0]+"/"+parts[1], parts[3], strings.Join(parts[4:], "/")
	case len(parts) >= 6 && parts[0] == "api" && parts[1] == "resolve-cache":
		// /api/resolve-cache/models/{org}/{name}/{rev}/{file}
		rest := strings.SplitN(parts[5], "/", 3)
		repoID, rev, file = parts[3]+"/"+parts[4], rest[0], rest[1]
	default:
		http.NotFound(w, r)
		return
	}
	repo := h.repos[repoID]
	if repo == nil && r.Header.Get("Authorization") == "" {
		hubError(w, http.StatusUnauthorized, "RepoNotFound") // it might be private
		return
	}
	if repo == nil {
		hubError(w, http.StatusNotFound, "RepoNotFound")
		return
	}
	if rev != "main" && rev != repo.commit {
		hubError(w, http.StatusNotFound, "RevisionNotFound")
		return
	}
	w.Header().Set("X-Repo-Commit", repo.commit)
	if file == "" {
		var sib []map[string]string
		for _, n := range repo.names() {
			sib = append(sib, map[string]string{"rfilename": n})
		}
		json.NewEncoder(w).Encode(map[string]any{"id": repoID, "sha": repo.commit, "siblings": sib})
		return
	}
	if repo.gated && r.Header.Get("Authorization") != "Bearer "+h.token {
		hubError(w, http.StatusUnauthorized, "GatedRepo")
		return
	}
	body, ok := repo.files[file]
	if !ok {
		hubError(w, http.StatusNotFound, "EntryNotFound")
		return
	}
	h.mu.Lock()
	h.requested = append(h.requested, file)
	etag, fakeEtag := h.etag[file]
	loc, redirect := h.redirect[file]
	h.mu.Unlock()
	if redirect {
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusFound)
		return
	}
	if !fakeEtag {
		etag = etagOf(file, body)
	}
	switch {
	case isLFS(file):
		w.Header().Set("ETag", `"`+gitSHA1([]byte("lfs pointer of "+file))+`"`)
		w.Header().Set("X-Linked-Etag", `"`+etag+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(body)))
		w.Header().Set("Location", h.cdn.URL+"/blobs/"+sha256Of(body)+"?repo="+repoID+"&file="+file)
		w.WriteHeader(http.StatusFound)
	case parts[0] != "api":
		w.Header().Set("Location", "/api/resolve-cache/models/"+repoID+"/"+repo.commit+"/"+file)
		w.WriteHeader(http.StatusTemporaryRedirect)
	default:
		w.Header().Set("ETag", `"`+etag+`"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodGet {
			w.Write(body)
		}
	}
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	repo, file := h.repos[q.Get("repo")], q.Get("file")
	if repo == nil || repo.files[file] == nil {
		http.NotFound(w, r)
		return
	}
	body := repo.files[file]
	h.mu.Lock()
	h.cdnGets[file] = append(h.cdnGets[file], r.Header.Get("Range"))
	h.cdnAuth = append(h.cdnAuth, r.Header.Get("Authorization"))
	cut, doCut := h.cut[file]
	delete(h.cut, file)
	if h.corrupt[file] {
		body = slices.Clone(body)
		body[len(body)/2] ^= 0xff
	}
	ignoreRange, delay, down, loc := h.ignoreRange, h.cdnDelay, h.cdnDown, h.cdnRedirect
	h.inflight++
	h.maxInflight = max(h.maxInflight, h.inflight)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.inflight--
		h.mu.Unlock()
	}()
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if loc != "" {
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusFound)
		return
	}
	start := 0
	if rg := r.Header.Get("Range"); rg != "" && !ignoreRange {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		if err != nil || n >= len(body) {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = n
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(body)-1, len(body)))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)-start))
	if start > 0 {
		w.WriteHeader(http.StatusPartialContent)
	}
	if doCut {
		w.Write(body[start : start+cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-body
	}
	w.Write(body[start:])
}

// options are Options for the fake hub and a fresh cache.
func (h *fakeHub) options(t *testing.T) Options {
	return Options{Endpoint: h.hub.URL, CacheDir: t.TempDir(), Client: h.hub.Client()}
}
