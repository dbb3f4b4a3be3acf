// Package flock takes advisory flock(2) locks on lock files, as
// huggingface_hub's filelock does: one writer at a time for a resource two
// processes can touch. The kernel releases a lock when its process dies, so
// a lock that can be taken proves that no one else is working.
package flock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrBusy is returned by TryLock when another process (or another open
// file in this one) holds the lock.
var ErrBusy = errors.New("locked by another process")

// pollEvery is how often Lock retries a busy lock.
const pollEvery = 50 * time.Millisecond

// Lock is a held lock. The lock file is left in place when it is released,
// as filelock leaves it: removing it would let two processes lock two
// different files of one name.
type Lock struct {
	f *os.File
}

// TryLock takes the lock on path, creating the file (and its folder), or
// returns an error wrapping ErrBusy at once if it is held.
func TryLock(path string) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o664)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return &Lock{f: f}, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		f.Close()
		return nil, &os.PathError{Op: "lock", Path: path, Err: ErrBusy}
	}
	f.Close()
	return nil, &os.PathError{Op: "flock", Path: path, Err: err}
}

// Wait takes the lock on path, polling while it is busy until ctx is done
// (then it returns ctx's error).
func Wait(ctx context.Context, path string) (*Lock, error) {
	for {
		l, err := TryLock(path)
		if !errors.Is(err, ErrBusy) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// Unlock releases the lock; a second call does nothing.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// MarkOwner writes this process's id into the lock file, for Owner to
// tell others who holds it.
func (l *Lock) MarkOwner() error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// Owner returns the process id that the holder of the lock on path wrote
// with MarkOwner, or 0 when none can be read.
func Owner(path string) int {
	b, err := os.ReadFile(path) // a few bytes, written by us
	if err != nil || len(b) > 32 {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// Hold takes an exclusive lock on the open file f at once, for as long
// as f stays open (closing it releases the lock, as a dying process
// does): a writer marks its temporary file as live, so that Free tells a
// cleaner to leave it. A file system without flock support gives an
// error and no lock.
func Hold(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			if errors.Is(err, unix.EWOULDBLOCK) {
				err = ErrBusy
			}
			return err
		}
	}
}

// Free reports whether no one holds a lock on the file at path (taken
// with Hold, TryLock or Wait): whether a shared lock can be taken at once
// (it is released again). The file is opened without following a link
// and without blocking. An error means no answer: the file cannot be
// opened, or its file system does not lock.
func Free(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, err
	}
	defer f.Close() // releases the shared lock
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case !errors.Is(err, unix.EINTR):
			return false, &os.PathError{Op: "flock", Path: path, Err: err}
		}
	}
}
