package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// inferenceFiles are the non-weight files that Driftwood reads; every
// top-level *.safetensors file is fetched too.
var inferenceFiles = map[string]bool{
	"config.json":                  true,
	"generation_config.json":       true,
	"tokenizer.json":               true,
	"tokenizer_config.json":        true,
	"special_tokens_map.json":      true,
	"model.safetensors.index.json": true,
}

// Pull downloads what inference needs from a repo into the cache and
// returns what engine.LoadModel opens: for org/name[@revision] the
// snapshot folder, for org/name[@revision]:QUANT or :FILE.gguf that one
// GGUF file (see ggufrepo.go). Files already cached are not fetched
// again; an interrupted download resumes where it stopped. Offline
// (Options.Offline or the hub unreachable) it succeeds only if the model
// is already completely cached, and otherwise returns an error wrapping
// ErrOffline that names the model and the command to run on a connected
// machine.
func Pull(ctx context.Context, name string, opt Options) (string, error) {
	if strings.HasPrefix(name, ollamaPrefix) || strings.HasPrefix(name, lmstudioPrefix) {
		return "", fmt.Errorf("model %s is another app's: Driftwood opens it in place and downloads nothing; get it with that app (ollama pull, LM Studio)", name)
	}
	ref, err := parseModelRef(name)
	if err != nil {
		return "", err
	}
	cache := opt.cacheDir()
	cached := func() (string, error) {
		if ref.Spec != "" {
			return cachedGGUF(cache, ref)
		}
		return cachedSnapshot(cache, ref.repoRef, "")
	}
	offline := func(why string) (string, error) {
		p, err := cached()
		if err == nil || !errors.Is(err, ErrNotCached) {
			return p, err
		}
		return "", offlineError(ref, cache, why)
	}
	if opt.Offline {
		return offline("offline mode is on: HF_HUB_OFFLINE")
	}
	c := newClient(opt, ref.repoRef)
	commit, names, err := c.listFiles(ctx)
	if errors.Is(err, ErrOffline) {
		return offline(strings.TrimPrefix(err.Error(), ErrOffline.Error()+": "))
	}
	if err != nil {
		return "", err
	}
	storage := filepath.Join(cache, ref.folder())
	snap := filepath.Join(storage, "snapshots", commit)
	var files []string
	result := snap
	if ref.Spec == "" {
		files, err = selectFiles(ref.repoRef, names)
	} else {
		var file string
		file, err = pickGGUF(ref, names)
		files, result = []string{file}, filepath.Join(snap, filepath.FromSlash(file))
	}
	if err != nil {
		return "", err
	}
	var todo []string
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(snap, f)); err != nil {
			todo = append(todo, f)
		}
	}
	if len(todo) > 0 {
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return "", err
		}
		tagCache(cache)
		if err := c.fetchAll(ctx, commit, todo, storage); err != nil {
			return "", err
		}
	}
	if err := writeRef(storage, ref.Revision, commit); err != nil {
		return "", err
	}
	return result, nil
}

func offlineError(ref modelRef, cache, why string) error {
	return fmt.Errorf("model %s: %w (%s) and the model is not in the Hugging Face cache (%s); "+
		"run \"driftwood pull %s\" on a connected machine and copy its %s folder into this cache",
		ref, ErrOffline, why, filepath.Join(cache, ref.folder()), ref, ref.folder())
}

// selectFiles keeps the top-level files that inference needs, and checks
// that the repo has a config and safetensors weights at all; a repo of
// GGUF files is answered with the names that pick one.
func selectFiles(ref repoRef, names []string) ([]string, error) {
	var out []string
	weights := false
	for _, n := range names {
		if strings.ContainsAny(n, "/\\") || n == "." || n == ".." {
			continue
		}
		isWeights := strings.HasSuffix(n, ".safetensors")
		if !isWeights && !inferenceFiles[n] {
			continue
		}
		if !utf8.ValidString(n) || strings.ContainsFunc(n, unicode.IsControl) {
			return nil, fmt.Errorf("%s lists the file %q, whose name holds control characters: refused, it would go into the snapshot folder", ref, n)
		}
		weights = weights || isWeights
		out = append(out, n)
	}
	if gguf := ggufModels(names); len(gguf) > 0 && (!weights || !slices.Contains(out, "config.json")) {
		return nil, fmt.Errorf("%s is a repo of GGUF files, not a model folder: name the one to download; %s", ref, ggufChoices(modelRef{repoRef: ref}, gguf))
	}
	switch {
	case !slices.Contains(out, "config.json"):
		return nil, fmt.Errorf("%s has no config.json: not a model repo Driftwood can run", ref)
	case !weights:
		return nil, fmt.Errorf("%s has no .safetensors weights and no .gguf files: nothing Driftwood runs", ref)
	}
	slices.Sort(out)
	return out, nil
}

// listFiles asks the hub for the revision's commit hash and file names:
// GET {endpoint}/api/models/{repo}/revision/{revision}, as
// huggingface_hub's HfApi.model_info does.
func (c *client) listFiles(ctx context.Context) (string, []string, error) {
	ref := c.ref
	u := c.endpoint + "/api/models/" + ref.ID + "/revision/" + url.PathEscape(ref.Revision)
	req, err := c.newRequest(ctx, http.MethodGet, u, true)
	if err != nil {
		return "", nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", nil, c.networkError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", nil, c.statusError("", resp)
	}
	commit, names, err := parseListing(resp.Body, maxListingBytes, maxListingFiles)
	if err != nil {
		return "", nil, fmt.Errorf("%s: reading the file list from %s: %w", ref, u, err)
	}
	return commit, names, nil
}

// Bounds on the hub's answer to a file listing: a listing that never ends
// took a pull to 6.3 GB in 45 s. The hub advises repos of under 100,000
// files, and its answer for one is a few MB.
const (
	maxListingBytes = 16 << 20
	maxListingFiles = 100_000
)

// parseListing reads a model_info answer, at most maxBytes of it, and
// returns the commit hash and the names of at most maxFiles files.
func parseListing(r io.Reader, maxBytes int64, maxFiles int) (string, []string, error) {
	lr := &io.LimitedReader{R: r, N: maxBytes + 1}
	var info struct {
		SHA      string `json:"sha"`
		Siblings []struct {
			RFilename string `json:"rfilename"`
		} `json:"siblings"`
	}
	err := json.NewDecoder(lr).Decode(&info)
	switch {
	case lr.N <= 0:
		return "", nil, fmt.Errorf("the answer is larger than %s, the most Driftwood reads for a file list", limitedfile.Size(maxBytes))
	case err != nil:
		return "", nil, err
	case !commitHash.MatchString(info.SHA):
		return "", nil, fmt.Errorf("the hub gave %q as the commit, not a commit hash", info.SHA)
	case len(info.Siblings) > maxFiles:
		return "", nil, fmt.Errorf("the repo lists %d files, more than the %d Driftwood accepts", len(info.Siblings), maxFiles)
	}
	names := make([]string, len(info.Siblings))
	for i, s := range info.Siblings {
		names[i] = s.RFilename
	}
	return info.SHA, names, nil
}

// fetchAll downloads files of the repo at commit into storage's blobs and then
// links them into the snapshot.
func (c *client) fetchAll(ctx context.Context, commit string, files []string, storage string) error {
	metas := make([]fileMeta, len(files))
	err := forEach(ctx, c.opt.parallel(), len(files), func(ctx context.Context, i int) error {
		m, err := c.head(ctx, commit, files[i])
		metas[i] = m
		return err
	})
	if err != nil {
		return err
	}
	var total int64
	n := 0
	for _, m := range metas {
		if _, err := os.Stat(filepath.Join(storage, "blobs", m.etag)); err != nil {
			total += m.size
			n++
		}
	}
	var prog *progress
	if n > 0 {
		prog = newProgress(c.opt.Progress, c.opt.OnProgress, c.ref.String(), n, total)
	}
	locks := filepath.Join(c.opt.cacheDir(), ".locks", c.ref.folder())
	err = forEach(ctx, c.opt.parallel(), len(metas), func(ctx context.Context, i int) error {
		m := metas[i]
		unlock, err := lockFile(ctx, filepath.Join(locks, m.etag+".lock"))
		if err != nil {
			return err
		}
		defer unlock()
		return c.fetchBlob(ctx, m, filepath.Join(storage, "blobs", m.etag), prog)
	})
	prog.finish(err == nil)
	if err != nil {
		return err
	}
	for _, m := range metas {
		if err := linkSnapshot(storage, commit, m.name, m.etag); err != nil {
			return err
		}
	}
	return nil
}

// forEach runs fn(0..n-1) on at most par goroutines and returns the first
// error, cancelling the context of the calls still running.
func forEach(ctx context.Context, par, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	next := make(chan int)
	for range min(par, n) {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
