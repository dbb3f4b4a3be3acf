package hub

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCacheLayout checks that a pull leaves exactly the tree huggingface_hub
// writes (see the layout comment in cache.go): blobs named by the ETag
// (sha256 for LFS files, git blob sha1 for the others), snapshot entries
// that are symlinks relative to ../../blobs/<etag>, refs/main holding the
// commit with no newline, one lock file per blob under .locks, and
// CACHEDIR.TAG; no partial or temporary file is left behind.
func TestCacheLayout(t *testing.T) {
	h := newFakeHub(t)
	opt := h.options(t)
	if _, err := Pull(context.Background(), "org/tiny", opt); err != nil {
		t.Fatal(err)
	}
	files := h.repos["org/tiny"].files
	want := map[string]string{ // path: symlink target, or "" for a file
		"CACHEDIR.TAG":                              "",
		"models--org--tiny/refs/main":               "",
		".locks/models--org--tiny":                  "dir",
		"models--org--tiny/blobs":                   "dir",
		"models--org--tiny/refs":                    "dir",
		"models--org--tiny/snapshots":               "dir",
		"models--org--tiny":                         "dir",
		".locks":                                    "dir",
		"models--org--tiny/snapshots/" + tinyCommit: "dir",
	}
	for _, n := range inferenceNames {
		etag := etagOf(n, files[n])
		want["models--org--tiny/blobs/"+etag] = ""
		want[".locks/models--org--tiny/"+etag+".lock"] = ""
		want["models--org--tiny/snapshots/"+tinyCommit+"/"+n] = "../../blobs/" + etag
	}
	got := map[string]string{}
	root := opt.CacheDir
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case d.IsDir():
			got[filepath.ToSlash(rel)] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			got[filepath.ToSlash(rel)], err = os.Readlink(path)
		default:
			got[filepath.ToSlash(rel)] = ""
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, target := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("missing %s", p)
		} else if g != target {
			t.Errorf("%s: got %q, want %q", p, g, target)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected %s", p)
		}
	}
	ref, err := os.ReadFile(filepath.Join(root, "models--org--tiny", "refs", "main"))
	if err != nil || string(ref) != tinyCommit {
		t.Errorf("refs/main = %q, %v; want the bare commit hash", ref, err)
	}
	for _, n := range inferenceNames {
		b, err := os.ReadFile(filepath.Join(root, "models--org--tiny", "blobs", etagOf(n, files[n])))
		if err != nil || string(b) != string(files[n]) {
			t.Errorf("blob of %s does not hold its content (%v)", n, err)
		}
	}
	tag, _ := os.ReadFile(filepath.Join(root, "CACHEDIR.TAG"))
	if !strings.HasPrefix(string(tag), "Signature: 8a477f597d28d172789f06886806bc55\n") {
		t.Errorf("CACHEDIR.TAG = %q", tag)
	}
}

// cacheFromTestdata lays the tiny model into a cache as huggingface_hub
// would have downloaded it, for tests that need no server.
func cacheFromTestdata(t *testing.T, cache, repo, model, commit string, names ...string) string {
	t.Helper()
	storage := filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "models", model, n))
		if err != nil {
			t.Fatal(err)
		}
		etag := etagOf(n, b)
		os.MkdirAll(filepath.Join(storage, "blobs"), 0o755)
		if err := os.WriteFile(filepath.Join(storage, "blobs", etag), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := linkSnapshot(storage, commit, n, etag); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeRef(storage, "main", commit); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(storage, "snapshots", commit)
}

func TestResolve(t *testing.T) {
	cache := t.TempDir()
	opt := Options{CacheDir: cache, Offline: true}
	snap := cacheFromTestdata(t, cache, "org/tiny", "tiny-f32", tinyCommit, inferenceNames...)

	local := filepath.Join("..", "testdata", "models", "tiny-f32")
	for name, want := range map[string]string{
		local:                    local,
		"org/tiny":               snap,
		"org/tiny@main":          snap,
		"org/tiny@" + tinyCommit: snap,
	} {
		if got, err := Resolve(name, opt); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", name, got, err, want)
		}
	}

	_, err := Resolve("org/absent", opt)
	if !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), `run "driftwood pull org/absent"`) ||
		!strings.Contains(err.Error(), filepath.Join(cache, "models--org--absent", "refs", "main")) ||
		!strings.Contains(err.Error(), "folder ") {
		t.Errorf("Resolve of an uncached repo: %v", err)
	}
	if _, err := Resolve(t.TempDir(), opt); err == nil || !strings.Contains(err.Error(), "no config.json") {
		t.Errorf("Resolve of a folder without config.json: %v", err)
	}
	for _, bad := range []string{"../etc/passwd", "/nonexistent/abs", `org\evil/x`, "org/x@..", "org/x@a//b", "justname"} {
		if _, err := Resolve(bad, opt); err == nil || errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "not a repo id") {
			t.Errorf("Resolve(%q): %v, want a repo id error", bad, err)
		}
	}

	// A snapshot whose weights are missing (a partial download by another
	// tool) does not resolve.
	cacheFromTestdata(t, cache, "org/partial", "tiny-f32", tinyCommit, "config.json")
	if _, err := Resolve("org/partial", opt); !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "missing model.safetensors") {
		t.Errorf("Resolve of a partial snapshot: %v", err)
	}
}

func TestParseRepo(t *testing.T) {
	for in, want := range map[string]repoRef{
		"mlx-community/Llama-3.2-1B-Instruct-4bit": {"mlx-community/Llama-3.2-1B-Instruct-4bit", "main"},
		"org/name@v1.0":         {"org/name", "v1.0"},
		"org/name@refs/pr/1":    {"org/name", "refs/pr/1"},
		"a_b/c.d@" + tinyCommit: {"a_b/c.d", tinyCommit},
	} {
		if got, err := parseRepo(in); err != nil || got != want {
			t.Errorf("parseRepo(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "org", "org/", "/name", "org/name/x", "../x", "org/..", "org/.x", "org/x.", "org/a..b",
		"org/a--b", `org\a/b`, "org/name@", "org/name@/x", "org/name@a/../b", "org/name@x\\y", strings.Repeat("a", 50) + "/" + strings.Repeat("b", 50)} {
		if _, err := parseRepo(bad); err == nil {
			t.Errorf("parseRepo(%q) accepted", bad)
		}
	}
}

func TestListAndRemove(t *testing.T) {
	cache := t.TempDir()
	opt := Options{CacheDir: cache}
	cacheFromTestdata(t, cache, "org/tiny", "tiny-f32", tinyCommit, inferenceNames...)
	cacheFromTestdata(t, cache, "org/q4", "tiny-mlx-q4", shardedCommit, "config.json", "model.safetensors")
	os.MkdirAll(filepath.Join(cache, "datasets--org--data", "snapshots", tinyCommit), 0o755)
	os.MkdirAll(filepath.Join(cache, ".locks", "models--org--tiny"), 0o755)

	list, err := List(opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Repo != "org/q4" || list[1].Repo != "org/tiny" {
		t.Fatalf("List = %+v", list)
	}
	q4, tiny := list[0], list[1]
	var size int64
	for _, n := range inferenceNames {
		st, _ := os.Stat(filepath.Join("..", "testdata", "models", "tiny-f32", n))
		size += st.Size()
	}
	if !tiny.Runs || tiny.Problem != "" || tiny.Format != "f32" || tiny.Commit != tinyCommit ||
		!slices.Equal(tiny.Refs, []string{"main"}) || tiny.Size != size || !strings.HasPrefix(tiny.Summary, "llama 3 layers") {
		t.Errorf("tiny: %+v (want size %d)", tiny, size)
	}
	if q4.Runs || q4.Format != "q4/g32" || q4.Problem != "missing tokenizer.json" {
		t.Errorf("q4: %+v", q4)
	}

	// A config the engine refuses says why.
	bad := filepath.Join(cache, "models--org--bad", "snapshots", tinyCommit)
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "config.json"), []byte(`{"architectures": ["GemmaForCausalLM"], "torch_dtype": "bfloat16"}`), 0o644)
	list, _ = List(opt)
	if b := list[0]; b.Repo != "org/bad" || b.Runs || b.Format != "bf16" || !strings.Contains(b.Problem, "GemmaForCausalLM") {
		t.Errorf("bad: %+v", b)
	}

	if err := Remove("org/tiny", opt); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"models--org--tiny", ".locks/models--org--tiny"} {
		if _, err := os.Stat(filepath.Join(cache, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Remove", p)
		}
	}
	if err := Remove("org/tiny", opt); !errors.Is(err, ErrNotCached) {
		t.Errorf("second Remove: %v", err)
	}
	if err := Remove("org/q4@main", opt); err == nil {
		t.Error("Remove accepted a revision")
	}
	if err := Remove("../x", opt); err == nil {
		t.Error("Remove accepted a path")
	}
	if list, err := List(Options{CacheDir: filepath.Join(cache, "absent")}); err != nil || len(list) != 0 {
		t.Errorf("List of a missing cache = %v, %v", list, err)
	}
}
