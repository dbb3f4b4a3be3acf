package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// client talks to one hub endpoint.
type client struct {
	opt        Options
	ref        repoRef
	endpoint   string
	host       string
	hc         *http.Client // follows redirects
	noRedirect *http.Client // for HEAD: redirects are read, not followed
}

func newClient(opt Options, ref repoRef) *client {
	hc := opt.Client
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 30 * time.Second
		hc = &http.Client{Transport: tr}
	}
	nr := *hc
	nr.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	fr := *hc
	next := hc.CheckRedirect
	fr.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkScheme(req.URL); err != nil {
			return err
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	c := &client{opt: opt, ref: ref, endpoint: opt.endpoint(), hc: &fr, noRedirect: &nr}
	if u, err := url.Parse(c.endpoint); err == nil {
		c.host = u.Host
	}
	return c
}

// newRequest builds a request with the headers huggingface_hub sends: the
// token when auth is set, and no compression so that sizes are the files'.
func (c *client) newRequest(ctx context.Context, method, u string, auth bool) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "driftwood")
	req.Header.Set("Accept-Encoding", "identity")
	if auth && c.opt.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opt.Token)
	}
	return req, nil
}

// schemeError is a redirect to something other than http(s), such as
// file://: refused, and reported as what it is rather than as an
// unreachable hub.
type schemeError struct{ url *url.URL }

func (e *schemeError) Error() string {
	return fmt.Sprintf("the server redirected to %s, which is not an http(s) URL: refused", e.url.Redacted())
}

func checkScheme(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return &schemeError{u}
	}
	return nil
}

// networkError wraps a failed request: the context's own end is returned
// as is, anything else means the hub cannot be reached.
func (c *client) networkError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var se *schemeError
	if errors.As(err, &se) {
		return fmt.Errorf("%s: %w", c.ref, se)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: cannot reach %s: %v", ErrOffline, c.endpoint, err)
	}
	return fmt.Errorf("%w: %v", ErrOffline, err)
}

// statusError explains an HTTP error answer. The hub's X-Error-Code header
// (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo) refines it.
func (c *client) statusError(file string, resp *http.Response) error {
	what := c.ref.String()
	if file != "" {
		what += ": " + file
	}
	code := resp.Header.Get("X-Error-Code")
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		hint := "HF_TOKEN is not set"
		if c.opt.Token != "" {
			hint = "the token in HF_TOKEN has no access to it"
		}
		if code == "RepoNotFound" {
			// The hub answers so for a missing repo too when no token is sent.
			return fmt.Errorf("%s: %w, or %w (HTTP %s; %s)", what, ErrNotFound, ErrAuth, resp.Status, hint)
		}
		return fmt.Errorf("%s: %w (HTTP %s; %s; request access at %s/%s)", what, ErrAuth, resp.Status, hint, c.endpoint, c.ref.ID)
	case resp.StatusCode == http.StatusNotFound:
		detail := "no such repo on " + c.endpoint
		switch code {
		case "RevisionNotFound":
			detail = fmt.Sprintf("no revision %q", c.ref.Revision)
		case "EntryNotFound":
			detail = "no such file"
		}
		return fmt.Errorf("%s: %w (%s)", what, ErrNotFound, detail)
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("%w: %s answered HTTP %s", ErrOffline, c.endpoint, resp.Status)
	}
	return fmt.Errorf("%s: %s answered HTTP %s", what, c.endpoint, resp.Status)
}
