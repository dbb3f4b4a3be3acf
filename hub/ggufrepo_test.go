package hub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

const ggufCommit = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"

// testGGUF reads a GGUF test file of the repo's testdata/gguf.
func testGGUF(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "gguf", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// headerGGUF is a GGUF file of metadata only: architecture arch, quantised
// to llama.cpp's file type ftype.
func headerGGUF(t *testing.T, arch string, ftype uint32, tensors ...gguf.WriteTensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	meta := []gguf.KV{{Key: "general.architecture", Value: arch}, {Key: "general.file_type", Value: ftype}}
	if err := gguf.Write(&buf, meta, tensors); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// addGGUFRepo gives the fake hub org/gguf, laid out as bartowski's and
// unsloth's GGUF repos are: one file a quantisation, an unsloth-style
// UD- variant, a multimodal projector, a quantisation split into two
// parts in a folder of its own.
func addGGUFRepo(t *testing.T, h *fakeHub) map[string][]byte {
	t.Helper()
	files := map[string][]byte{
		"README.md":                          []byte("# tiny GGUF\n"),
		"Tiny-Q4_K_M.gguf":                   testGGUF(t, "tiny-mixed.gguf"),
		"Tiny-Q8_0.gguf":                     testGGUF(t, "tiny-kquants.gguf"),
		"Tiny-UD-Q8_0.gguf":                  headerGGUF(t, "llama", 7),
		"Tiny-F16.gguf":                      headerGGUF(t, "llama", 1),
		"Q2_K/Tiny-Q2_K.gguf":                headerGGUF(t, "llama", 10),
		"mmproj-Tiny-F16.gguf":               headerGGUF(t, "clip", 1),
		"BF16/Tiny-BF16-00001-of-00002.gguf": headerGGUF(t, "llama", 32),
		"BF16/Tiny-BF16-00002-of-00002.gguf": headerGGUF(t, "llama", 32),
	}
	h.repos["org/gguf"] = &fakeRepo{commit: ggufCommit, files: files}
	return files
}

func TestPullOneGGUFFile(t *testing.T) {
	h := newFakeHub(t)
	files := addGGUFRepo(t, h)
	body := files["Tiny-Q4_K_M.gguf"]
	h.cut["Tiny-Q4_K_M.gguf"] = len(body) / 2
	opt := h.options(t)
	var progress bytes.Buffer
	opt.Progress = &progress

	path, err := Pull(context.Background(), "org/gguf:q4_k_m", opt)
	if err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(opt.CacheDir, "models--org--gguf")
	if want := filepath.Join(storage, "snapshots", ggufCommit, "Tiny-Q4_K_M.gguf"); path != want {
		t.Fatalf("Pull returned %s, want %s", path, want)
	}
	if !slices.Equal(h.requested, []string{"Tiny-Q4_K_M.gguf"}) {
		t.Errorf("Pull asked the hub for %v, want only the file", h.requested)
	}
	// The cache layout a model folder has: the link into blobs/<sha256>,
	// refs/main, and a resumed download.
	if target, err := os.Readlink(path); err != nil || target != "../../blobs/"+sha256Of(body) {
		t.Errorf("snapshot entry links to %q (%v), want ../../blobs/<sha256>", target, err)
	}
	if ref, _ := os.ReadFile(filepath.Join(storage, "refs", "main")); string(ref) != ggufCommit {
		t.Errorf("refs/main = %q", ref)
	}
	if gets := h.cdnGets["Tiny-Q4_K_M.gguf"]; len(gets) != 2 || gets[1] != "bytes="+strconv.Itoa(len(body)/2)+"-" {
		t.Errorf("CDN requests had Range %q, want a whole then a resume", gets)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, body) {
		t.Error("the cached file differs from the served one")
	}
	if !strings.Contains(progress.String(), "org/gguf: downloading 1 files") {
		t.Errorf("progress: %q", progress.String())
	}
	m, err := engine.LoadModel(path)
	if err != nil {
		t.Fatalf("the pulled file does not load: %v", err)
	}
	m.Close()

	// Cached now: it resolves offline, by quantisation or by file name,
	// and a second pull downloads nothing.
	opt.Offline = true
	for _, name := range []string{"org/gguf:Q4_K_M", "org/gguf:Tiny-Q4_K_M.gguf", "org/gguf@main:q4_k_m", "org/gguf@" + ggufCommit + ":Q4_K_M"} {
		if got, err := Resolve(name, opt); err != nil || got != path {
			t.Errorf("Resolve(%s) = %q, %v; want %s", name, got, err, path)
		}
	}
	opt.Offline = false
	n := len(h.cdnGets["Tiny-Q4_K_M.gguf"])
	if got, err := ResolveModel(context.Background(), "org/gguf:Q4_K_M", opt); err != nil || got != path || len(h.cdnGets["Tiny-Q4_K_M.gguf"]) != n {
		t.Errorf("ResolveModel of the cached file = %q, %v, %d downloads", got, err, len(h.cdnGets["Tiny-Q4_K_M.gguf"])-n)
	}
	// Another file of the same commit joins the snapshot.
	q8, err := ResolveModel(context.Background(), "org/gguf:Tiny-Q8_0.gguf", opt)
	if err != nil || q8 != filepath.Join(filepath.Dir(path), "Tiny-Q8_0.gguf") {
		t.Errorf("ResolveModel of a second file = %q, %v", q8, err)
	}
	// The cached snapshot, of GGUF files only, is no model folder: the
	// repo may have one too, so it is not cached, and the files are named.
	if _, err := Resolve("org/gguf", Options{CacheDir: opt.CacheDir}); !errors.Is(err, ErrNotCached) ||
		!strings.Contains(err.Error(), "holds GGUF files, not a model folder; to open one of them, it has Q4_K_M, Q8_0 (give one as org/gguf:QUANT") {
		t.Errorf("Resolve of the repo without a quantisation: %v", err)
	}
}

func TestPullGGUFRefusals(t *testing.T) {
	h := newFakeHub(t)
	addGGUFRepo(t, h)
	for _, tc := range []struct {
		name, reason string
		want         []string
	}{
		{"org/gguf:Q8_0", "two files end with Q8_0: refused, both named",
			[]string{`"Q8_0" matches 2 files, Tiny-Q8_0.gguf, Tiny-UD-Q8_0.gguf; name one as org/gguf:FILE.gguf`}},
		{"org/gguf:Q5_K_M", "a quantisation the repo lacks lists what it has, as names to give",
			[]string{"no GGUF file of org/gguf ends with the quantisation Q5_K_M", "it has BF16, Q2_K, F16, Q4_K_M, Tiny-Q8_0.gguf, UD-Q8_0 (give one as org/gguf:QUANT or org/gguf:FILE.gguf)"}},
		{"org/gguf:bf16", "a split quantisation is refused",
			[]string{"BF16/Tiny-BF16-00001-of-00002.gguf is split into 2 files", "does not read split GGUF files yet"}},
		{"org/gguf:BF16/Tiny-BF16-00002-of-00002.gguf", "a part named by file is refused too",
			[]string{"split into 2 files"}},
		{"org/gguf:Absent.gguf", "a file the repo lacks",
			[]string{"org/gguf has no file Absent.gguf"}},
		{"org/gguf", "a GGUF repo without a quantisation says how to pick one",
			[]string{"org/gguf is a repo of GGUF files, not a model folder", "org/gguf:QUANT"}},
		{"org/tiny:Q4_K_M", "a quantisation of a repo without GGUF files",
			[]string{"no GGUF file of org/tiny", "it has no .gguf files"}},
		{"org/gguf:../../etc/passwd.gguf", "a file name that climbs out of the snapshot",
			[]string{"is not a file name of a repo"}},
		{"org/gguf:Q4 K", "a quantisation with a space",
			[]string{"after ':' comes a quantisation"}},
	} {
		opt := h.options(t)
		h.requested = nil
		_, err := Pull(context.Background(), tc.name, opt)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Pull(%s) = %v, want it to say %q", tc.reason, tc.name, err, w)
			}
		}
		if len(h.requested) > 0 {
			t.Errorf("%s: files were fetched before the refusal: %v", tc.reason, h.requested)
		}
	}
	// The unambiguous forms of the same files work, and a file in a
	// folder keeps its '/' in the URL, as huggingface_hub sends it.
	opt := h.options(t)
	for name, want := range map[string]string{"org/gguf:UD-Q8_0": "Tiny-UD-Q8_0.gguf", "org/gguf:F16": "Tiny-F16.gguf", "org/gguf:mmproj-Tiny-F16.gguf": "mmproj-Tiny-F16.gguf", "org/gguf:q2_k": "Tiny-Q2_K.gguf"} {
		if got, err := Pull(context.Background(), name, opt); err != nil || filepath.Base(got) != want {
			t.Errorf("Pull(%s) = %q, %v; want %s", name, got, err, want)
		}
	}
}

func TestGGUFOfflineAndCorrupt(t *testing.T) {
	h := newFakeHub(t)
	files := addGGUFRepo(t, h)
	opt := h.options(t)
	_, err := Resolve("org/gguf:Q4_K_M", opt)
	if !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), `run "driftwood pull org/gguf:Q4_K_M"`) {
		t.Errorf("Resolve before a pull: %v", err)
	}
	opt.Offline = true
	_, err = ResolveModel(context.Background(), "org/gguf:Q4_K_M", opt)
	if !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), `"driftwood pull org/gguf:Q4_K_M" on a connected machine`) {
		t.Errorf("offline ResolveModel of an uncached file: %v", err)
	}
	if len(h.hubAuth) != 0 {
		t.Errorf("offline, the hub got %d requests", len(h.hubAuth))
	}

	opt.Offline = false
	h.corrupt["Tiny-Q4_K_M.gguf"] = true
	_, err = Pull(context.Background(), "org/gguf:Q4_K_M", opt)
	if err == nil || !strings.Contains(err.Error(), "Tiny-Q4_K_M.gguf: checksum mismatch") {
		t.Fatalf("Pull of a corrupt file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(opt.CacheDir, "models--org--gguf", "blobs", sha256Of(files["Tiny-Q4_K_M.gguf"]))); err == nil {
		t.Error("a corrupt download was cached")
	}
}

func TestPickGGUF(t *testing.T) {
	bartowski := []string{".gitattributes", "README.md", "Llama-3.2-1B-Instruct-IQ3_M.gguf", "Llama-3.2-1B-Instruct-Q4_0_4_4.gguf",
		"Llama-3.2-1B-Instruct-Q4_0.gguf", "Llama-3.2-1B-Instruct-Q4_K_L.gguf", "Llama-3.2-1B-Instruct-Q4_K_M.gguf",
		"Llama-3.2-1B-Instruct-Q4_K_S.gguf", "Llama-3.2-1B-Instruct-Q8_0.gguf", "Llama-3.2-1B-Instruct-f16.gguf"}
	for _, tc := range []struct {
		names      []string
		spec, want string
		wantErr    string
		reason     string
	}{
		{bartowski, "Q4_K_M", "Llama-3.2-1B-Instruct-Q4_K_M.gguf", "", "bartowski's names end with -QUANT"},
		{bartowski, "q4_k_m", "Llama-3.2-1B-Instruct-Q4_K_M.gguf", "", "the quantisation ignores case"},
		{bartowski, "F16", "Llama-3.2-1B-Instruct-f16.gguf", "", "f16 too"},
		{bartowski, "Q4_0", "Llama-3.2-1B-Instruct-Q4_0.gguf", "", "Q4_0 is not Q4_0_4_4"},
		{bartowski, "Q4_K", "", "it has IQ3_M, Q4_0, Q4_0_4_4, Q4_K_L, Q4_K_M, Q4_K_S, Q8_0, f16", "Q4_K is no file's ending; the labels are the quantisations"},
		{bartowski, "K_M", "Llama-3.2-1B-Instruct-Q4_K_M.gguf", "", "an ending after '_' matches (and is unique here)"},
		{[]string{"llama-2-7b-chat.Q4_K_M.gguf", "llama-2-7b-chat.Q5_K_M.gguf"}, "Q4_K_M", "llama-2-7b-chat.Q4_K_M.gguf", "", "TheBloke's names end with .QUANT"},
		{[]string{"qwen2.5-0.5b-instruct-q4_k_m.gguf", "qwen2.5-0.5b-instruct-fp16.gguf"}, "Q4_K_M", "qwen2.5-0.5b-instruct-q4_k_m.gguf", "", "Qwen's are lower case"},
		{[]string{"Model-Q4_K_M.gguf", "Model-IQ4_K_M.gguf"}, "Q4_K_M", "Model-Q4_K_M.gguf", "", "an ending inside a word does not match"},
		{[]string{"a/Model-Q8_0.gguf", "Model-Q8_0.gguf"}, "Model-Q8_0.gguf", "Model-Q8_0.gguf", "", "a path that is exact wins over a base name"},
		{[]string{"a/Model-Q8_0.gguf", "b/Model-Q8_0.gguf"}, "Model-Q8_0.gguf", "", "matches 2 files", "a base name in two folders is ambiguous"},
		{[]string{"Q8_0/Model-Q8_0.gguf"}, "Model-Q8_0.gguf", "Q8_0/Model-Q8_0.gguf", "", "a unique base name finds a file in a folder"},
		{[]string{"Model-Q8_0.gguf", "Model-Q8_0.gguf\x1b[2J"}, "Q8_0", "Model-Q8_0.gguf", "", "names that cannot be paths are passed over"},
		{[]string{"M-Q8_0-00002-of-00010.gguf", "M-Q8_0-00001-of-00010.gguf"}, "Q8_0", "", "M-Q8_0-00001-of-00010.gguf is split into 10 files", "the parts of a split file are one model, counted in decimal (00010 is not octal 8)"},
		{[]string{"README.md"}, "Q4_K_M", "", "it has no .gguf files", "a repo of no GGUF files"},
		{[]string{"Only-Q4_K_M.gguf"}, "Q8_0", "", "it has Only-Q4_K_M.gguf (give one", "one file is named by its file name"},
	} {
		got, err := pickGGUF(modelRef{repoRef: repoRef{ID: "org/r", Revision: "main"}, Spec: tc.spec}, tc.names)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("%s: pickGGUF(%s) = %q, %v; want %s", tc.reason, tc.spec, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: pickGGUF(%s) = %q, %v; want an error saying %q", tc.reason, tc.spec, got, err, tc.wantErr)
		}
	}
}

func TestParseModelRef(t *testing.T) {
	for in, want := range map[string]modelRef{
		"org/name":                   {repoRef{"org/name", "main"}, ""},
		"org/name:Q4_K_M":            {repoRef{"org/name", "main"}, "Q4_K_M"},
		"org/name@v1:UD-Q4_K_XL":     {repoRef{"org/name", "v1"}, "UD-Q4_K_XL"},
		"org/name:sub/File-F16.gguf": {repoRef{"org/name", "main"}, "sub/File-F16.gguf"},
	} {
		if got, err := parseModelRef(in); err != nil || got != want {
			t.Errorf("parseModelRef(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"org/name:", "org/name:-x", "org/name:a b", "org/name:../x.gguf", "org/name:/abs.gguf", `org/name:a\b.gguf`,
		"org/name:a//b.gguf", "org/name:" + strings.Repeat("Q", 65), "org:Q4_K_M"} {
		if _, err := parseModelRef(bad); err == nil {
			t.Errorf("parseModelRef(%q) accepted", bad)
		}
	}
}
