package flock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLockIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks", "a.lock")
	a, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.MarkOwner(); err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrBusy) {
		t.Fatalf("second TryLock while held: %v, want ErrBusy", err)
	}
	if got := Owner(path); got != os.Getpid() {
		t.Errorf("Owner = %d, want this process, %d", got, os.Getpid())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	if _, err := Wait(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a held lock: %v, want the deadline", err)
	}
	done := make(chan error)
	go func() {
		l, err := Wait(context.Background(), path)
		l.Unlock()
		done <- err
	}()
	time.Sleep(60 * time.Millisecond)
	a.Unlock()
	a.Unlock() // idempotent
	if err := <-done; err != nil {
		t.Fatalf("Wait after Unlock: %v", err)
	}
}

// TestHoldAndFree: a file held by an open descriptor is not free, to
// this process's other descriptors as to other processes; closing the
// descriptor (or dying) frees it.
func TestHoldAndFree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tmp")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if free, err := Free(path); err != nil || !free {
		t.Fatalf("a file no one holds: free %v, %v", free, err)
	}
	if err := Hold(f); err != nil {
		t.Fatal(err)
	}
	if free, err := Free(path); err != nil || free {
		t.Errorf("a held file: free %v, %v", free, err)
	}
	g, _ := os.Open(path)
	if err := Hold(g); !errors.Is(err, ErrBusy) {
		t.Errorf("holding a held file: %v, want ErrBusy", err)
	}
	g.Close()
	f.Close()
	if free, err := Free(path); err != nil || !free {
		t.Errorf("a file whose holder closed it: free %v, %v", free, err)
	}
	if _, err := Free(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing file: no error")
	}
}
