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
