package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPullBoundsAnEndlessListing: a listing that never ended took a pull
// to 6.3 GB in 45 s. This one stops after 20 MiB, so that the test stays
// bounded without the limit too.
func TestPullBoundsAnEndlessListing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"sha": %q, "siblings": [`, tinyCommit)
		entry := []byte(`{"rfilename": "model.safetensors"}, `)
		chunk := bytes.Repeat(entry, (64<<10)/len(entry))
		for sent := 0; sent < 20<<20; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	opt := Options{Endpoint: srv.URL, CacheDir: t.TempDir(), Client: srv.Client()}
	_, err := Pull(context.Background(), "org/tiny", opt)
	if err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") || errors.Is(err, ErrOffline) {
		t.Errorf("err = %v, want the listing refused at its size limit", err)
	}
}

func TestParseListing(t *testing.T) {
	sib := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf(`{"rfilename": "f%d"}`, i)
		}
		return fmt.Sprintf(`{"sha": %q, "siblings": [%s]}`, tinyCommit, strings.Join(s, ","))
	}
	for _, tc := range []struct {
		body, want, reason string
	}{
		{sib(3), "", "a small listing is read"},
		{sib(11), "lists 11 files, more than the 10", "the file count is bounded"},
		{sib(40), "larger than 512 bytes", "the bytes are bounded"},
		{`{"sha": "main", "siblings": []}`, `gave "main" as the commit`, "the commit must be a hash"},
		{`{"sha": `, "unexpected EOF", "a cut answer is an error"},
	} {
		commit, names, err := parseListing(strings.NewReader(tc.body), 512, 10)
		switch {
		case tc.want == "" && (err != nil || commit != tinyCommit || len(names) != 3 || names[2] != "f2"):
			t.Errorf("%s: got %q %v %v", tc.reason, commit, names, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want %q", tc.reason, err, tc.want)
		}
	}
}

func FuzzParseListing(f *testing.F) {
	f.Add([]byte(`{"sha": "` + tinyCommit + `", "siblings": [{"rfilename": "config.json"}, {"rfilename": "model.safetensors"}]}`))
	f.Add([]byte(`{"sha": "` + tinyCommit + `", "siblings": [{"rfilename": "a\u0001.safetensors"}], "cardData": {"x": [1, 2]}}`))
	f.Add([]byte(`{"siblings": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxBytes, maxFiles = 4 << 10, 16
		commit, names, err := parseListing(bytes.NewReader(data), maxBytes, maxFiles)
		if err != nil {
			return
		}
		if !commitHash.MatchString(commit) || len(names) > maxFiles {
			t.Fatalf("accepted commit %q and %d names", commit, len(names))
		}
		if files, err := selectFiles(repoRef{ID: "org/x", Revision: "main"}, names); err == nil {
			for _, n := range files {
				if strings.ContainsAny(n, "/\\\x00\n\r") || n == ".." {
					t.Fatalf("selected %q for the snapshot folder", n)
				}
			}
		}
	})
}

// TestPullRefusesAnUnverifiableEtag: an ETag that was not a hash skipped
// the checksum although every download is meant to be checked.
func TestPullRefusesAnUnverifiableEtag(t *testing.T) {
	for _, file := range []string{"config.json", "model.safetensors"} {
		h := newFakeHub(t)
		h.etag[file] = "v1-abc"
		opt := h.options(t)
		_, err := Pull(context.Background(), "org/tiny", opt)
		if err == nil || !strings.Contains(err.Error(), `sent the ETag "v1-abc", neither a sha256 nor a git sha1`) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: err = %v, want the ETag refused", file, err)
		}
		if _, err := os.Stat(filepath.Join(opt.CacheDir, "models--org--tiny", "blobs", "v1-abc")); err == nil {
			t.Errorf("%s: an unverified blob was cached", file)
		}
	}
}

func TestPullRefusesControlCharactersInNames(t *testing.T) {
	h := newFakeHub(t)
	files := tinyFiles(t)
	files["model\x1b[2J.safetensors"] = files["model.safetensors"]
	h.repos["org/odd"] = &fakeRepo{commit: tinyCommit, files: files}
	opt := h.options(t)
	_, err := Pull(context.Background(), "org/odd", opt)
	if err == nil || !strings.Contains(err.Error(), `"model\x1b[2J.safetensors"`) || !strings.Contains(err.Error(), "control characters") {
		t.Errorf("err = %v, want the name refused, quoted", err)
	}
	if len(h.requested) > 0 {
		t.Errorf("files were fetched before the refusal: %v", h.requested)
	}
}

// TestPullReportsAFileRedirect: a redirect to file:// was reported as
// "hub unreachable".
func TestPullReportsAFileRedirect(t *testing.T) {
	for _, tc := range []struct {
		reason string
		setup  func(h *fakeHub)
	}{
		{"from the hub's resolve", func(h *fakeHub) { h.redirect["config.json"] = "file:///etc/passwd" }},
		{"from the CDN", func(h *fakeHub) { h.cdnRedirect = "file:///etc/passwd" }},
	} {
		h := newFakeHub(t)
		tc.setup(h)
		_, err := Pull(context.Background(), "org/tiny", h.options(t))
		if err == nil || errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), "redirected to file:///etc/passwd, which is not an http(s) URL") {
			t.Errorf("%s: err = %v, want the redirect named, not an unreachable hub", tc.reason, err)
		}
	}
}

// TestResolveDoesNotHangOnAFIFO: the hub's own small files (refs, the
// index) were read whole with os.ReadFile, which waits forever on a FIFO.
func TestResolveDoesNotHangOnAFIFO(t *testing.T) {
	cache := t.TempDir()
	refs := filepath.Join(cache, "models--org--tiny", "refs")
	if err := os.MkdirAll(refs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(refs, "main"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Resolve("org/tiny", Options{CacheDir: cache}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a FIFO)") {
			t.Errorf("err = %v, want the FIFO named", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Resolve is still blocked on a FIFO after 5 s")
	}
}
