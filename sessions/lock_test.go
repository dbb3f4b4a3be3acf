package sessions

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine/chat"
)

func TestClaimIsExclusive(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	a, err := store.Claim("s")
	if err != nil {
		t.Fatal(err)
	}
	meta, kv := sample(2, 0)
	if err := a.Save(meta, kv); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		reason string
		try    func() error
	}{
		{"a second claim is refused at once", func() error {
			_, err := store.Claim("s")
			return err
		}},
		{"a claim that waits gives up after its patience", func() error {
			_, err := store.ClaimWait(context.Background(), "s", 80*time.Millisecond, nil)
			return err
		}},
		{"a held session is not removed", func() error { return store.Remove("s") }},
		{"a held session is not renamed", func() error { return store.Rename("s", "t") }},
		{"nor is another renamed over its name", func() error {
			saveAs(store, "u", meta, kv)
			return store.Rename("u", "s")
		}},
	} {
		err := tc.try()
		var busy *BusyError
		if !errors.As(err, &busy) || busy.PID != os.Getpid() || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
			t.Errorf("%s: %v, want a BusyError naming this process", tc.reason, err)
		}
	}
	if !a.Exists() {
		t.Error("the saved session does not exist")
	}
	a.Release()
	a.Release()
	if err := store.Remove("s"); err != nil {
		t.Errorf("remove after release: %v", err)
	}
}

// TestConcurrentTurns runs 20 read-modify-write turns on one session at
// once, as 20 `run --session same` would: every turn that says it saved
// is in the session afterwards.
func TestConcurrentTurns(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	var wg sync.WaitGroup
	saved := make([]bool, 20)
	for i := range saved {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := store.ClaimWait(context.Background(), "same", 20*time.Second, nil)
			if err != nil {
				t.Errorf("turn %d: %v", i, err)
				return
			}
			defer c.Release()
			meta, kv := sample(2, 0)
			meta.Messages = nil
			if c.Exists() {
				snap, err := c.Open()
				if err != nil {
					t.Errorf("turn %d: %v", i, err)
					return
				}
				meta.Messages = snap.Meta.Messages
				snap.Close()
			}
			meta.Messages = append(meta.Messages, chat.Message{Role: "user", Content: "x" + strconv.Itoa(i)})
			saved[i] = c.Save(meta, kv) == nil
		}()
	}
	wg.Wait()
	snap, err := store.Open("same")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	have := map[string]bool{}
	for _, m := range snap.Meta.Messages {
		have[m.Content] = true
	}
	for i, ok := range saved {
		if ok && !have["x"+strconv.Itoa(i)] {
			t.Errorf("turn %d was saved but is missing from the session", i)
		}
	}
	if len(snap.Meta.Messages) != 20 {
		t.Errorf("%d turns in the session, want 20", len(snap.Meta.Messages))
	}
}

// TestOtherProcessHoldsTheClaim checks the lock across processes: a child
// that holds a session makes this process wait, name it, and go on once
// it has exited (the kernel frees a dead process's lock).
func TestOtherProcessHoldsTheClaim(t *testing.T) {
	if dir := os.Getenv("DRIFTWOOD_HOLD_SESSION"); dir != "" {
		if _, err := (Store{Dir: dir}).Claim("held"); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute) // killed by the parent
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOtherProcessHoldsTheClaim$")
	cmd.Env = append(os.Environ(), "DRIFTWOOD_HOLD_SESSION="+dir)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("child did not take the session: %q %v", buf, err)
	}
	store := Store{Dir: dir}
	var told *BusyError
	_, err := store.ClaimWait(context.Background(), "held", 100*time.Millisecond, func(b *BusyError) { told = b })
	var busy *BusyError
	if !errors.As(err, &busy) || busy.PID != cmd.Process.Pid || busy.Waited < 100*time.Millisecond || told == nil || told.PID != cmd.Process.Pid {
		t.Fatalf("claim held by pid %d: %v (told %v)", cmd.Process.Pid, err, told)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
	}()
	c, err := store.ClaimWait(context.Background(), "held", 10*time.Second, nil)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	c.Release()
	cmd.Wait()
}

func TestFIFOIsNotASession(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	if err := syscall.Mkfifo(filepath.Join(store.Dir, "pipe.safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		list, err := store.List()
		if err != nil || len(list) != 1 || list[0].Err == nil || !strings.Contains(list[0].Err.Error(), "not a regular file") {
			t.Errorf("List = %+v, %v; want the FIFO listed as unreadable", list, err)
		}
		if _, err := store.Open("pipe"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Open = %v", err)
		}
		if _, err := store.Latest(); err == nil {
			t.Error("Latest picked the FIFO")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a FIFO named like a session blocks the store")
	}
}
