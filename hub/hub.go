// Package hub finds the models people have and downloads the ones they
// ask for: it resolves a model name to the folder or GGUF file that
// engine.LoadModel opens (ResolveModel), downloads Hugging Face repos into
// the Hugging Face cache, and lists what is on the machine (Models).
//
// The cache is the one huggingface_hub, huggingface-cli and mlx-lm use
// ($HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
// else ~/.cache/huggingface/hub), written with the same layout (see cache.go), so a model downloaded by any of them is
// found by Resolve, and a model pulled here is found by them. ollama's
// store (ollama.go) and LM Studio's models folder (lmstudio.go) are read
// in place and never written.
//
// A model is named by a local folder (one with config.json) or GGUF file;
// by a repo id, org/name, optionally followed by @revision (a branch, tag
// or commit hash; main when absent) and by :QUANT or :FILE.gguf for one
// GGUF file of the repo; by ollama:[namespace/]model[:tag]; or by
// lmstudio:publisher/repo[/FILE.gguf].
package hub

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// DefaultEndpoint is the public Hugging Face hub.
const DefaultEndpoint = "https://huggingface.co"

// Options says where the cache is, which hub to talk to and how. The zero
// value works: the default endpoint, no token, the default cache folder, the
// default HTTP client and no progress output. OptionsFromEnv fills it from
// the environment variables huggingface_hub reads.
type Options struct {
	// Endpoint is the hub's base URL; empty means DefaultEndpoint.
	Endpoint string
	// Token is sent as "Authorization: Bearer" to the hub (never to the
	// CDN it redirects to); needed for gated and private repos.
	Token string
	// CacheDir is the hub cache folder; empty means DefaultCacheDir().
	CacheDir string
	// Offline forbids network access: only cached models resolve.
	Offline bool
	// Client makes the HTTP requests; nil means a client with connect and
	// response-header timeouts but no limit on a download's duration.
	Client *http.Client
	// Progress receives the download progress as text; nil means none.
	Progress io.Writer
	// OnProgress, when set, is called with each progress report (from
	// other goroutines, a few times a second), for a program that shows
	// the progress its own way.
	OnProgress func(ProgressReport)
	// Parallel bounds the concurrent file downloads; 0 means 4.
	Parallel int
	// OllamaDir is ollama's store; empty means DefaultOllamaDir().
	OllamaDir string
	// LMStudioDir is LM Studio's models folder; empty means
	// DefaultLMStudioDir().
	LMStudioDir string
}

// Errors that Resolve and Pull wrap, for callers that react to the cause
// (the first run downloading a model that is not cached, for one).
var (
	// ErrNotCached: the repo is not (completely) in the cache.
	ErrNotCached = errors.New("not in the Hugging Face cache")
	// ErrOffline: the hub cannot be used (offline mode or no network).
	ErrOffline = errors.New("hub unreachable")
	// ErrAuth: the hub refused access (401/403): a gated or private repo.
	ErrAuth = errors.New("gated or private repo: set HF_TOKEN")
	// ErrNotFound: the hub has no such repo, revision or file (404).
	ErrNotFound = errors.New("no such repo/revision")
)

// OptionsFromEnv reads HF_ENDPOINT, HF_TOKEN (else the token file that
// `hf auth login` writes), HF_HUB_CACHE (else HF_HOME, XDG_CACHE_HOME) and
// HF_HUB_OFFLINE, as huggingface_hub does. Progress goes to os.Stderr.
func OptionsFromEnv() Options {
	o := Options{
		Endpoint: strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/"),
		Token:    os.Getenv("HF_TOKEN"),
		CacheDir: DefaultCacheDir(),
		Offline:  envTrue("HF_HUB_OFFLINE") || envTrue("TRANSFORMERS_OFFLINE"),
		Progress: os.Stderr,
	}
	if o.Token == "" {
		path := expandPath(os.Getenv("HF_TOKEN_PATH"))
		if path == "" {
			path = filepath.Join(hfHome(), "token")
		}
		if b, err := limitedfile.Read(path, limitedfile.Short); err == nil {
			o.Token = strings.TrimSpace(string(b))
		}
	}
	return o
}

// DefaultCacheDir is the hub cache folder huggingface_hub uses:
// $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
func DefaultCacheDir() string {
	for _, v := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"} {
		if d := expandPath(os.Getenv(v)); d != "" {
			return d
		}
	}
	return filepath.Join(hfHome(), "hub")
}

func hfHome() string {
	if d := expandPath(os.Getenv("HF_HOME")); d != "" {
		return d
	}
	cache := expandPath(os.Getenv("XDG_CACHE_HOME"))
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "huggingface")
}

// expandPath expands a leading ~ and $VARS, like Python's expanduser and
// expandvars.
func expandPath(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = home + p[1:]
		}
	}
	return os.ExpandEnv(p)
}

func envTrue(name string) bool {
	switch strings.ToUpper(os.Getenv(name)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

func (o Options) endpoint() string {
	if o.Endpoint == "" {
		return DefaultEndpoint
	}
	return strings.TrimRight(o.Endpoint, "/")
}

func (o Options) cacheDir() string {
	if o.CacheDir == "" {
		return DefaultCacheDir()
	}
	return o.CacheDir
}

func (o Options) parallel() int {
	if o.Parallel <= 0 {
		return 4
	}
	return o.Parallel
}

// repoRef is a parsed repo id with its revision.
type repoRef struct {
	ID       string // org/name
	Revision string // branch, tag or commit hash
}

func (r repoRef) String() string {
	if r.Revision == "main" {
		return r.ID
	}
	return r.ID + "@" + r.Revision
}

// folder is the repo's folder name in the cache: models--org--name.
func (r repoRef) folder() string {
	return "models--" + strings.ReplaceAll(r.ID, "/", "--")
}

// repoPart is one half of a repo id, as huggingface_hub's validate_repo_id
// allows it: word characters, '-' and '.', starting and ending with a word
// character.
var repoPart = regexp.MustCompile(`^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$`)

// commitHash matches a full commit hash, which names a snapshot directly.
var commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// parseRepo parses org/name[@revision] and rejects anything that could
// escape the cache folder or that the hub would refuse.
func parseRepo(s string) (repoRef, error) {
	id, rev, hasRev := strings.Cut(s, "@")
	if !hasRev {
		rev = "main"
	}
	bad := func(why string) (repoRef, error) {
		return repoRef{}, fmt.Errorf("%q is not a repo id (org/name[@revision]): %s", s, why)
	}
	org, name, ok := strings.Cut(id, "/")
	switch {
	case !ok || strings.Contains(name, "/"):
		return bad("want exactly one '/'")
	case !repoPart.MatchString(org) || !repoPart.MatchString(name):
		return bad("org and name are letters, digits, '-', '_' and '.'")
	case strings.Contains(id, "..") || strings.Contains(id, "--"):
		return bad("'..' and '--' are not allowed")
	case len(id) > 96:
		return bad("longer than 96 characters")
	}
	if rev == "" || strings.ContainsAny(rev, "\\\x00") || strings.HasPrefix(rev, "/") {
		return bad("bad revision")
	}
	for _, seg := range strings.Split(rev, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad("bad revision")
		}
	}
	return repoRef{ID: id, Revision: rev}, nil
}
