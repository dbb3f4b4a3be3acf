package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/flock"
)

// Claim is this process's exclusive hold on one session name: an advisory
// lock on <dir>/.locks/<name>.lock, taken before the session is read and
// released after its last save, so that two processes continuing one
// session never overwrite each other's turns. Saving goes through a
// Claim.
type Claim struct {
	name, path string
	lock       *flock.Lock
	store      Store
}

// BusyError says that another process holds a session.
type BusyError struct {
	Name string
	// PID is the holder's process id, 0 when it could not be read.
	PID int
	// Waited is how long the claim waited before giving up.
	Waited time.Duration
}

func (e *BusyError) Error() string {
	who := "another Driftwood process"
	if e.PID > 0 {
		who += fmt.Sprintf(" (pid %d)", e.PID)
	}
	msg := fmt.Sprintf("session %q is in use by %s", e.Name, who)
	if e.Waited > 0 {
		msg += fmt.Sprintf("; waited %s", e.Waited.Round(100*time.Millisecond))
	}
	return msg + ": finish it there, or use another session name"
}

// lockPath is the lock file of session name.
func (s Store) lockPath(name string) string {
	return filepath.Join(s.Dir, ".locks", name+".lock")
}

// Claim takes session name for this process, or returns a *BusyError at
// once when another process holds it.
func (s Store) Claim(name string) (*Claim, error) {
	return s.ClaimWait(context.Background(), name, 0, nil)
}

// ClaimWait takes session name, waiting up to patience while another
// process holds it; waiting, when not nil, is called once if it has to
// wait. After patience, or when ctx ends, it returns a *BusyError.
func (s Store) ClaimWait(ctx context.Context, name string, patience time.Duration, waiting func(*BusyError)) (*Claim, error) {
	path, err := s.Path(name)
	if err != nil {
		return nil, err
	}
	// The sessions folder is its owner's alone; make it so before the
	// lock folder inside it is made.
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, err
	}
	lp := s.lockPath(name)
	start := time.Now()
	l, err := flock.TryLock(lp)
	if errors.Is(err, flock.ErrBusy) && patience > 0 {
		if waiting != nil {
			waiting(&BusyError{Name: name, PID: flock.Owner(lp)})
		}
		wctx, cancel := context.WithTimeout(ctx, patience)
		l, err = flock.Wait(wctx, lp)
		cancel()
		if err != nil && ctx.Err() == nil {
			err = flock.ErrBusy
		}
	}
	switch {
	case errors.Is(err, flock.ErrBusy):
		busy := &BusyError{Name: name, PID: flock.Owner(lp)}
		if patience > 0 {
			busy.Waited = time.Since(start)
		}
		return nil, busy
	case err != nil:
		return nil, fmt.Errorf("session %q: %w", name, err)
	}
	if err := l.MarkOwner(); err != nil {
		l.Unlock()
		return nil, fmt.Errorf("session %q: %w", name, err)
	}
	return &Claim{name: name, path: path, lock: l, store: s}, nil
}

// Name is the claimed session's name.
func (c *Claim) Name() string { return c.name }

// Exists reports whether the session has been saved before.
func (c *Claim) Exists() bool { return c.store.Exists(c.name) }

// Open opens and validates the claimed session.
func (c *Claim) Open() (*Snapshot, error) {
	c.check()
	return c.store.Open(c.name)
}

// Save writes the claimed session. Temporary files
// that an interrupted save of it left behind are removed first: they are
// provably abandoned, since only the holder of the claim writes them.
func (c *Claim) Save(meta Meta, kv *engine.KVState) error {
	c.check()
	return save(c.path, meta, kv, c.store.wrap)
}

// Remove deletes the claimed session's file (the claim stays held until
// Release).
func (c *Claim) Remove() error {
	c.check()
	if err := os.Remove(c.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Release gives the session up; a second call does nothing.
func (c *Claim) Release() {
	if c != nil {
		c.lock.Unlock()
		c.lock = nil
	}
}

func (c *Claim) check() {
	if c.lock == nil {
		panic("sessions: use of a released claim on " + c.name)
	}
}
