package sessions

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/driftwoodlabs/driftwood/internal/xdg"
)

// ext is a session file's extension.
const ext = ".safetensors"

// DefaultDir is $XDG_DATA_HOME/driftwood/sessions, by default under
// ~/.local/share.
func DefaultDir() string { return xdg.Data("sessions") }

// Store is a folder of named sessions.
type Store struct {
	Dir string
	// wrap, in tests, wraps the writer of a save (to simulate a full disk).
	wrap func(io.Writer) io.Writer
}

// Info is one session in a listing.
type Info struct {
	Name    string
	Model   string
	Turns   int
	Tokens  int
	Size    int64
	Updated time.Time
	// Err is set when the file could not be read as a session.
	Err error
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Path returns the file of session name, after checking the name: letters,
// digits, '.', '_' and '-', at most 64, not starting with a dot, so that
// no name reaches outside the folder.
func (s Store) Path(name string) (string, error) {
	if !validName.MatchString(name) || strings.Contains(name, "..") {
		return "", fmt.Errorf("session name %q: use letters, digits, '.', '_' and '-' (at most 64, not starting with '.')", name)
	}
	return filepath.Join(s.Dir, name+ext), nil
}

// Exists reports whether session name has been saved (false for an
// invalid name).
func (s Store) Exists(name string) bool {
	path, err := s.Path(name)
	if err != nil {
		return false
	}
	_, err = os.Lstat(path)
	return err == nil
}

// Open opens and validates session name, to read it. A conversation
// that will be saved back opens it through a Claim.
func (s Store) Open(name string) (*Snapshot, error) {
	path, err := s.Path(name)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no session %q in %s", name, s.Dir)
	}
	return Open(path)
}

// List returns the sessions, most recently updated first. Unreadable files
// are listed with Err set rather than hidden.
func (s Store) List() ([]Info, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ext)
		if !ok || e.IsDir() || !validName.MatchString(name) {
			continue
		}
		info := Info{Name: name}
		if fi, err := e.Info(); err == nil {
			info.Size, info.Updated = fi.Size(), fi.ModTime()
		}
		meta, err := ReadMeta(filepath.Join(s.Dir, e.Name()))
		if err != nil {
			info.Err = err
		} else {
			info.Model, info.Turns, info.Tokens, info.Updated = meta.Model, meta.Turns(), len(meta.Tokens), meta.Updated
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out, nil
}

// Latest names the most recently updated readable session.
func (s Store) Latest() (string, error) {
	list, err := s.List()
	if err != nil {
		return "", err
	}
	for _, info := range list {
		if info.Err == nil {
			return info.Name, nil
		}
	}
	return "", fmt.Errorf("no sessions in %s yet", s.Dir)
}

// Rename renames a session; it refuses to overwrite another, or to move
// one that another process holds.
func (s Store) Rename(from, to string) error {
	src, err := s.Path(from)
	if err != nil {
		return err
	}
	dst, err := s.Path(to)
	if err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("session %q already exists", to)
	}
	for _, name := range []string{from, to} {
		c, err := s.Claim(name)
		if err != nil {
			return err
		}
		defer c.Release()
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("session %q already exists", to)
	}
	if err := os.Rename(src, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no session %q in %s", from, s.Dir)
		}
		return err
	}
	return nil
}

// Remove deletes a session, unless another process holds it.
func (s Store) Remove(name string) error {
	c, err := s.Claim(name)
	if err != nil {
		return err
	}
	defer c.Release()
	path := c.path
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no session %q in %s", name, s.Dir)
		}
		return err
	}
	return nil
}
