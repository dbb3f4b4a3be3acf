// Package privatefile holds the rules by which Driftwood's caches trust
// a file: the folder is the user's and private, and an entry is a
// regular file of the user's that no one else may write, checked on the
// descriptor that is then read (or mapped), so that the file checked is
// the file used whatever happens to its path meanwhile. The compile
// cache, the prefix cache and the tokenizer cache follow them; each
// checks its own content against its key besides.
package privatefile

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// Dir makes dir (and missing parents) with mode 0700 and checks that it
// is a folder of this user's; one that others may read or write is
// narrowed to 0700. A folder of another user's is refused: whoever owns
// it can put a file there or swap one.
func Dir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir() || !ok:
		return fmt.Errorf("%s is not a folder", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d)", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o077 != 0:
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// Error says why a file is not trusted, in words that follow its name
// ("may be written by others"); it wraps the cause where there is one,
// so errors.Is(err, fs.ErrNotExist) tells a missing entry.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// Open opens path for reading if it is a regular file of this user's
// that no one else (group or others) may write: without following a
// link (an entry is never one), without blocking (a FIFO does not
// hang), checked on the descriptor returned.
//
// # Errors
//
// An *Error: "cannot be opened" (wrapping the cause: fs.ErrNotExist for
// a missing file), "is not a regular file", "belongs to uid N, not to
// this user", "may be written by others".
func Open(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, &Error{"cannot be opened", err}
	}
	fi, err := f.Stat()
	if err == nil {
		err = check(fi)
	} else {
		err = &Error{"cannot be read", err}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func check(fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular() || !ok:
		return &Error{Reason: "is not a regular file"}
	case int(st.Uid) != os.Geteuid():
		return &Error{Reason: fmt.Sprintf("belongs to uid %d, not to this user", st.Uid)}
	case fi.Mode().Perm()&0o022 != 0:
		return &Error{Reason: "may be written by others"}
	}
	return nil
}

// ErrTooLarge is wrapped by Read's error for a file over its limit.
var ErrTooLarge = errors.New("too large")

// Read returns the contents of path, opened by Open's rules, if it is at
// most limit bytes long.
func Read(path string, limit int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, &Error{"is larger than the cache allows", ErrTooLarge}
	}
	data, err := limitedfile.ReadAll(f, fi.Size(), limit)
	switch {
	case err != nil:
		return nil, &Error{"cannot be read", err}
	case int64(len(data)) > limit:
		return nil, &Error{"is larger than the cache allows", ErrTooLarge}
	}
	return data, nil
}
