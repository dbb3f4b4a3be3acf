package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Download retries: a transfer that fails is resumed at once if it had made
// progress, else after retryDelay, up to maxRetries times in a row without
// progress. A body that sends nothing for idleTimeout is a failure.
var (
	retryDelay  = time.Second
	maxRetries  = 5
	idleTimeout = time.Minute
)

// fileMeta is what a HEAD on a file's resolve URL tells.
type fileMeta struct {
	name string
	url  string // where to GET it: the CDN location after a redirect
	auth bool   // whether url is on the hub's host, so the token may go there
	etag string // the blob name: sha256 for LFS files, git blob sha1 otherwise
	size int64
}

// head asks for a file's metadata as huggingface_hub's get_hf_file_metadata
// does: HEAD {endpoint}/{repo}/resolve/{commit}/{file}, following only
// relative redirects (a renamed repo), and reading X-Repo-Commit,
// X-Linked-Etag (else ETag), X-Linked-Size (else Content-Length) and the
// Location of a redirect to the CDN.
func (c *client) head(ctx context.Context, commit, name string) (fileMeta, error) {
	u := c.endpoint + "/" + c.ref.ID + "/resolve/" + commit + "/" + escapeRepoPath(name)
	for range 10 {
		req, err := c.newRequest(ctx, http.MethodHead, u, true)
		if err != nil {
			return fileMeta{}, err
		}
		resp, err := c.noRedirect.Do(req)
		if err != nil {
			return fileMeta{}, c.networkError(ctx, err)
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		redirect := resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != ""
		if !redirect && resp.StatusCode != http.StatusOK {
			return fileMeta{}, c.statusError(name, resp)
		}
		if redirect {
			target, err := resp.Request.URL.Parse(loc)
			if err != nil {
				return fileMeta{}, fmt.Errorf("%s: %s: bad redirect %q", c.ref, name, loc)
			}
			if err := checkScheme(target); err != nil {
				return fileMeta{}, fmt.Errorf("%s: %s: %w", c.ref, name, err)
			}
			if lu, _ := url.Parse(loc); lu != nil && lu.Host == "" {
				u = target.String()
				continue
			}
			loc = target.String()
		} else {
			loc = u
		}
		return c.parseMeta(name, resp, loc, redirect)
	}
	return fileMeta{}, fmt.Errorf("%s: %s: too many redirects", c.ref, name)
}

// escapeRepoPath escapes a file's path in the repo for a URL, each part on
// its own, as huggingface_hub's hf_hub_url does: a file in a folder keeps
// its '/'.
func escapeRepoPath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

func (c *client) parseMeta(name string, resp *http.Response, loc string, redirect bool) (fileMeta, error) {
	h := resp.Header
	m := fileMeta{name: name, url: loc, size: -1}
	if lu, err := url.Parse(loc); err == nil {
		m.auth = lu.Host == c.host
	}
	m.etag = normalizeEtag(h.Get("X-Linked-Etag"))
	if m.etag == "" {
		m.etag = normalizeEtag(h.Get("ETag"))
	}
	if s := h.Get("X-Linked-Size"); s != "" {
		m.size, _ = strconv.ParseInt(s, 10, 64)
	} else if !redirect {
		m.size = resp.ContentLength
	}
	bad := func(what string) (fileMeta, error) {
		return fileMeta{}, fmt.Errorf("%s: %s: the server at %s %s; it does not look like a Hugging Face hub (check HF_ENDPOINT and proxies)", c.ref, name, c.endpoint, what)
	}
	switch {
	case h.Get("X-Repo-Commit") == "":
		return bad("sent no X-Repo-Commit")
	case !sha256Hex.MatchString(m.etag) && !sha1Hex.MatchString(m.etag):
		return bad(fmt.Sprintf("sent the ETag %q, neither a sha256 nor a git sha1, so the download could not be verified", m.etag))
	case m.size < 0:
		return bad("sent no file size")
	}
	return m, nil
}

// normalizeEtag strips the weak marker and quotes, as huggingface_hub's
// _normalize_etag does.
func normalizeEtag(s string) string {
	return strings.Trim(strings.TrimPrefix(s, "W/"), `"`)
}

// The ETags a blob may be named by, and verified with; anything else from
// the server is refused rather than used as a file name or trusted.
var (
	sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)
	sha1Hex   = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// newVerifier returns the hash whose hex digest must equal etag, which
// parseMeta checked: sha256 for LFS files, git's blob sha1
// ("blob <size>\x00" + contents) for the others.
func newVerifier(etag string, size int64) hash.Hash {
	if sha256Hex.MatchString(etag) {
		return sha256.New()
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	return h
}

// fetchBlob downloads m into blob through blob+".incomplete", resuming a
// partial file, verifying the size and checksum, then renaming it into
// place. The caller holds the blob's lock.
func (c *client) fetchBlob(ctx context.Context, m fileMeta, blob string, prog *progress) error {
	if _, err := os.Stat(blob); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	part := blob + ".incomplete"
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	d := &transfer{c: c, m: m, f: f, prog: prog, h: newVerifier(m.etag, m.size)}
	if err := d.resume(); err != nil {
		return err
	}
	fails := 0
	for d.off < m.size {
		before := d.off
		err := d.get(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var perm permanentError
		if errors.As(err, &perm) {
			return perm.err
		}
		if d.off > before {
			fails = 0
			continue
		}
		if err == nil {
			err = errors.New("the body ended early")
		}
		if fails++; fails > maxRetries {
			return fmt.Errorf("%s: download failed (%v); run the pull again to resume", m.name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryDelay):
		}
	}
	if got := hex.EncodeToString(d.h.Sum(nil)); got != m.etag {
		f.Close()
		os.Remove(part)
		return fmt.Errorf("%s: checksum mismatch: the download hashes to %s, the hub says %s; the partial download was deleted, nothing was cached", m.name, got, m.etag)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return os.Rename(part, blob)
}

// permanentError is a download failure that retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }

// transfer is one file's download into its .incomplete file.
type transfer struct {
	c    *client
	m    fileMeta
	f    *os.File
	prog *progress
	h    hash.Hash // running hash of f's first off bytes
	off  int64     // bytes in f
}

// resume hashes what a previous attempt left in the file and positions the
// file after it. A file longer than announced starts over.
func (d *transfer) resume() error {
	n, err := io.Copy(d.h, d.f)
	if err != nil {
		return err
	}
	if n > d.m.size {
		return d.restart()
	}
	d.off = n
	d.prog.resumed(n)
	return nil
}

// restart empties the file, for a server that ignores Range.
func (d *transfer) restart() error {
	if err := d.f.Truncate(0); err != nil {
		return err
	}
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	d.prog.add(-d.off)
	d.off = 0
	d.h = newVerifier(d.m.etag, d.m.size)
	return nil
}

// get makes one GET from d.off on, appending to the file until the body
// ends or fails. A body that stalls for idleTimeout is abandoned.
func (d *transfer) get(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := time.AfterFunc(idleTimeout, cancel)
	defer idle.Stop()
	req, err := d.c.newRequest(ctx, http.MethodGet, d.m.url, d.m.auth)
	if err != nil {
		return permanentError{err}
	}
	if d.off > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", d.off))
	}
	resp, err := d.c.hc.Do(req)
	var se *schemeError
	if errors.As(err, &se) {
		return permanentError{fmt.Errorf("%s: %w", d.m.name, se)}
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && d.off > 0:
		if err := d.restart(); err != nil {
			return permanentError{err}
		}
	case resp.StatusCode == http.StatusPartialContent:
		if start := contentRangeStart(resp.Header.Get("Content-Range")); start != d.off {
			return permanentError{fmt.Errorf("%s: asked for bytes from %d, the server sent %q", d.m.name, d.off, resp.Header.Get("Content-Range"))}
		}
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		if err := d.restart(); err != nil {
			return permanentError{err}
		}
		return errors.New("the server refused to resume (HTTP 416)")
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return fmt.Errorf("HTTP %s", resp.Status)
	default:
		return permanentError{d.c.statusError(d.m.name, resp)}
	}
	buf := make([]byte, 256<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			idle.Reset(idleTimeout)
			if d.off+int64(n) > d.m.size {
				return permanentError{fmt.Errorf("%s: the server sent more than the %d bytes announced", d.m.name, d.m.size)}
			}
			if _, err := d.f.Write(buf[:n]); err != nil {
				return permanentError{err}
			}
			d.h.Write(buf[:n])
			d.off += int64(n)
			d.prog.add(int64(n))
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// contentRangeStart parses the first byte of "bytes START-END/TOTAL", or -1.
func contentRangeStart(s string) int64 {
	s, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return -1
	}
	start, _, _ := strings.Cut(s, "-")
	n, err := strconv.ParseInt(start, 10, 64)
	if err != nil {
		return -1
	}
	return n
}
