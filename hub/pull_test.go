package hub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
)

func TestMain(m *testing.M) {
	retryDelay = 10 * time.Millisecond
	os.Exit(m.Run())
}

// inferenceNames are the tiny repo's files that a pull fetches.
var inferenceNames = []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}

// checkSnapshot checks that dir holds exactly want, byte for byte.
func checkSnapshot(t *testing.T, dir string, files map[string][]byte, want []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("snapshot holds %v, want %v", got, want)
	}
	for _, n := range want {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, files[n]) {
			t.Errorf("%s differs from the served file", n)
		}
	}
}

func TestPullDownloadsWhatInferenceNeeds(t *testing.T) {
	h := newFakeHub(t)
	opt := h.options(t)
	opt.Token = "hf_secret"
	var progress bytes.Buffer
	opt.Progress = &progress
	dir, err := Pull(context.Background(), "org/tiny", opt)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(opt.CacheDir, "models--org--tiny", "snapshots", tinyCommit); dir != want {
		t.Fatalf("Pull returned %s, want %s", dir, want)
	}
	files := h.repos["org/tiny"].files
	checkSnapshot(t, dir, files, inferenceNames)
	for _, n := range h.requested {
		if !slices.Contains(inferenceNames, n) {
			t.Errorf("Pull asked for %s, which inference does not need", n)
		}
	}
	for _, a := range h.hubAuth {
		if a != "Bearer hf_secret" {
			t.Errorf("the hub got Authorization %q, want the token", a)
		}
	}
	for _, a := range h.cdnAuth {
		if a != "" {
			t.Errorf("the CDN got Authorization %q, want none", a)
		}
	}
	m, err := engine.LoadModel(dir)
	if err != nil {
		t.Fatalf("the pulled folder does not load: %v", err)
	}
	m.Close()

	out := progress.String()
	if !strings.Contains(out, "org/tiny: downloading 5 files") || !strings.Contains(out, FormatSize(totalSize(files, inferenceNames))+" in ") {
		t.Errorf("progress output:\n%s", out)
	}

	// A second pull finds everything cached and downloads nothing.
	n := len(h.cdnGets["model.safetensors"])
	progress.Reset()
	if dir2, err := Pull(context.Background(), "org/tiny", opt); err != nil || dir2 != dir {
		t.Fatalf("second Pull = %q, %v", dir2, err)
	}
	if len(h.cdnGets["model.safetensors"]) != n || progress.Len() != 0 {
		t.Errorf("second Pull downloaded again (progress %q)", progress.String())
	}
}

func totalSize(files map[string][]byte, names []string) int64 {
	var n int64
	for _, f := range names {
		n += int64(len(files[f]))
	}
	return n
}

func TestPullShardsInParallelAndLoads(t *testing.T) {
	h := newFakeHub(t)
	h.cdnDelay = 100 * time.Millisecond
	opt := h.options(t)
	dir, err := Pull(context.Background(), "org/sharded", opt)
	if err != nil {
		t.Fatal(err)
	}
	if h.maxInflight != 2 {
		t.Errorf("at most %d shards downloaded at once, want 2", h.maxInflight)
	}
	want := []string{"config.json", "generation_config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
		"model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json"}
	checkSnapshot(t, dir, h.repos["org/sharded"].files, want)
	m, err := engine.LoadModel(dir)
	if err != nil {
		t.Fatalf("the pulled shards do not load: %v", err)
	}
	m.Close()
	if got, err := Resolve("org/sharded", opt); err != nil || got != dir {
		t.Errorf("Resolve after the pull = %q, %v", got, err)
	}
	os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors"))
	if _, err := Resolve("org/sharded", opt); !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "missing model-00002-of-00002.safetensors") {
		t.Errorf("Resolve with a shard gone: %v", err)
	}
}

func TestPullByCommit(t *testing.T) {
	h := newFakeHub(t)
	opt := h.options(t)
	dir, err := Pull(context.Background(), "org/tiny@"+tinyCommit, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, dir, h.repos["org/tiny"].files, inferenceNames)
	if _, err := os.Stat(filepath.Join(opt.CacheDir, "models--org--tiny", "refs")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a pull by commit hash wrote a ref")
	}
}

func TestPullGivesUpOnADeadCDN(t *testing.T) {
	h := newFakeHub(t)
	h.cdnDown = true
	opt := h.options(t)
	_, err := Pull(context.Background(), "org/tiny", opt)
	if err == nil || !strings.Contains(err.Error(), "model.safetensors: download failed (HTTP 503") || !strings.Contains(err.Error(), "run the pull again to resume") {
		t.Fatalf("Pull with the CDN down: %v", err)
	}
	if n := len(h.cdnGets["model.safetensors"]); n != maxRetries+1 {
		t.Errorf("%d tries, want %d", n, maxRetries+1)
	}
}

func TestPullResumesAfterACutConnection(t *testing.T) {
	for _, ignoreRange := range []bool{false, true} {
		h := newFakeHub(t)
		h.ignoreRange = ignoreRange
		files := h.repos["org/tiny"].files
		half := len(files["model.safetensors"]) / 2
		h.cut["model.safetensors"] = half
		opt := h.options(t)
		dir, err := Pull(context.Background(), "org/tiny", opt)
		if err != nil {
			t.Fatalf("ignoreRange=%v: %v", ignoreRange, err)
		}
		checkSnapshot(t, dir, files, inferenceNames)
		gets := h.cdnGets["model.safetensors"]
		if len(gets) != 2 || gets[0] != "" || gets[1] != "bytes="+strconv.Itoa(half)+"-" {
			t.Errorf("ignoreRange=%v: CDN requests had Range %q, want a whole then from byte %d", ignoreRange, gets, half)
		}
	}
}

func TestPullResumesAPreviousRun(t *testing.T) {
	h := newFakeHub(t)
	files := h.repos["org/tiny"].files
	opt := h.options(t)
	body := files["model.safetensors"]
	blobs := filepath.Join(opt.CacheDir, "models--org--tiny", "blobs")
	os.MkdirAll(blobs, 0o755)
	part := filepath.Join(blobs, sha256Of(body)+".incomplete")
	if err := os.WriteFile(part, body[:100000], 0o644); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	opt.Progress = &progress
	dir, err := Pull(context.Background(), "org/tiny", opt)
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, dir, files, inferenceNames)
	if gets := h.cdnGets["model.safetensors"]; !slices.Equal(gets, []string{"bytes=100000-"}) {
		t.Errorf("CDN requests had Range %q, want one from byte 100000", gets)
	}
	if _, err := os.Stat(part); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind", part)
	}
}

func TestPullRefusesAChecksumMismatch(t *testing.T) {
	h := newFakeHub(t)
	h.corrupt["model.safetensors"] = true
	opt := h.options(t)
	_, err := Pull(context.Background(), "org/tiny", opt)
	if err == nil || !strings.Contains(err.Error(), "model.safetensors: checksum mismatch") {
		t.Fatalf("Pull of a corrupt file: %v", err)
	}
	storage := filepath.Join(opt.CacheDir, "models--org--tiny")
	blobs, _ := os.ReadDir(filepath.Join(storage, "blobs"))
	for _, b := range blobs {
		if strings.HasPrefix(b.Name(), sha256Of(h.repos["org/tiny"].files["model.safetensors"])) {
			t.Errorf("blobs/%s left behind", b.Name())
		}
	}
	for _, p := range []string{"snapshots", "refs"} {
		if _, err := os.Stat(filepath.Join(storage, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a failed pull", p)
		}
	}
	if _, err := Resolve("org/tiny", opt); !errors.Is(err, ErrNotCached) {
		t.Errorf("Resolve after a failed pull: %v", err)
	}
}

func TestConcurrentPullsOfOneRepo(t *testing.T) {
	h := newFakeHub(t)
	h.cdnDelay = 50 * time.Millisecond
	opt := h.options(t)
	var wg sync.WaitGroup
	dirs := make([]string, 3)
	errs := make([]error, 3)
	for i := range dirs {
		wg.Go(func() { dirs[i], errs[i] = Pull(context.Background(), "org/tiny", opt) })
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != dirs[0] {
			t.Fatalf("pull %d: %q, %v", i, dirs[i], errs[i])
		}
	}
	checkSnapshot(t, dirs[0], h.repos["org/tiny"].files, inferenceNames)
	if n := len(h.cdnGets["model.safetensors"]); n != 1 {
		t.Errorf("the weights were downloaded %d times, want once", n)
	}
	blobs, _ := os.ReadDir(filepath.Join(opt.CacheDir, "models--org--tiny", "blobs"))
	if len(blobs) != len(inferenceNames) {
		t.Errorf("blobs: %d files, want %d", len(blobs), len(inferenceNames))
	}
}

func TestPullOffline(t *testing.T) {
	h := newFakeHub(t)
	opt := h.options(t)
	opt.Offline = true
	_, err := Pull(context.Background(), "org/tiny", opt)
	if !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), `model org/tiny:`) || !strings.Contains(err.Error(), `run "driftwood pull org/tiny" on a connected machine`) {
		t.Fatalf("offline Pull of an uncached model: %v", err)
	}
	if len(h.hubAuth) != 0 {
		t.Errorf("offline Pull made %d requests", len(h.hubAuth))
	}

	opt.Offline = false
	dir, err := Pull(context.Background(), "org/tiny", opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Offline = true
	if got, err := Pull(context.Background(), "org/tiny", opt); err != nil || got != dir {
		t.Errorf("offline Pull of a cached model = %q, %v", got, err)
	}

	// The network gone: the cached model still pulls, an uncached one
	// says what to do.
	h.hub.Close()
	opt.Offline = false
	if got, err := Pull(context.Background(), "org/tiny", opt); err != nil || got != dir {
		t.Errorf("Pull of a cached model without network = %q, %v", got, err)
	}
	_, err = Pull(context.Background(), "org/sharded", opt)
	if !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), `"driftwood pull org/sharded" on a connected machine`) {
		t.Errorf("Pull of an uncached model without network: %v", err)
	}
}

func TestPullErrors(t *testing.T) {
	h := newFakeHub(t)
	opt := h.options(t)
	for _, tc := range []struct {
		repo  string
		token string
		want  error
		text  string
	}{
		{"org/gated", "", ErrAuth, "gated or private repo: set HF_TOKEN"},
		{"org/gated", "hf_wrong", ErrAuth, "the token in HF_TOKEN has no access"},
		{"org/missing", "hf_secret", ErrNotFound, "no such repo"},
		{"org/missing", "", ErrNotFound, "no such repo/revision, or gated or private repo: set HF_TOKEN"},
		{"org/missing", "", ErrAuth, "HF_TOKEN is not set"},
		{"org/tiny@nobranch", "", ErrNotFound, `no revision "nobranch"`},
	} {
		opt.Token = tc.token
		_, err := Pull(context.Background(), tc.repo, opt)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), tc.repo) {
			t.Errorf("Pull(%s) with token %q: %v, want %v mentioning %q", tc.repo, tc.token, err, tc.want, tc.text)
		}
	}
	opt.Token = "hf_secret"
	if _, err := Pull(context.Background(), "org/gated", opt); err != nil {
		t.Errorf("Pull of a gated repo with its token: %v", err)
	}
	for _, bad := range []string{"../etc", "org/../x", "/abs/path", `org\x/y`, "org/name@../../x", "org/name/extra", "org--x/y"} {
		if _, err := Pull(context.Background(), bad, opt); err == nil || !strings.Contains(err.Error(), "not a repo id") {
			t.Errorf("Pull(%q): %v, want a repo id error", bad, err)
		}
	}
}

func TestPullCancelled(t *testing.T) {
	h := newFakeHub(t)
	h.cdnDelay = time.Second
	opt := h.options(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Pull(ctx, "org/tiny", opt); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled Pull: %v", err)
	}
}

// TestConcurrentPullProcesses runs two pulls of one repo in two processes
// (this test binary, re-run as TestPullProcess) on one cache: the blob locks
// make each file download once.
func TestConcurrentPullProcesses(t *testing.T) {
	h := newFakeHub(t)
	h.cdnDelay = 100 * time.Millisecond
	cache := t.TempDir()
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPullProcess$")
		cmd.Env = append(os.Environ(), "DRIFTWOOD_TEST_PULL="+h.hub.URL+" "+cache)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("pull process: %v", err)
		}
	}
	checkSnapshot(t, filepath.Join(cache, "models--org--tiny", "snapshots", tinyCommit), h.repos["org/tiny"].files, inferenceNames)
	if n := len(h.cdnGets["model.safetensors"]); n != 1 {
		t.Errorf("the weights were downloaded %d times, want once", n)
	}
}

// TestPullProcess is the child of TestConcurrentPullProcesses.
func TestPullProcess(t *testing.T) {
	endpoint, cache, ok := strings.Cut(os.Getenv("DRIFTWOOD_TEST_PULL"), " ")
	if !ok {
		t.Skip("run by TestConcurrentPullProcesses")
	}
	if _, err := Pull(context.Background(), "org/tiny", Options{Endpoint: endpoint, CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
}
