package mlxc

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// goroutineID is the running goroutine's number, from its stack header.
func goroutineID() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	return string(b[:bytes.IndexByte(b, ' ')])
}

// forward is a small sequence of operations, like one layer's.
func forward(t *Thread, s *Stream) error {
	t.Use(s)
	x := t.Zeros([]int{1, 4}, Float32)
	w := t.Zeros([]int{4, 4}, Float32)
	y := t.Add(t.Matmul(x, w), x)
	y = t.Multiply(y, t.Sigmoid(y))
	t.Eval(y)
	return nil
}

// TestCallsRunOnOneOSThread calls from many goroutines at once and checks
// that every call into the (fake) library ran on the same goroutine and
// the same OS thread.
func TestCallsRunOnOneOSThread(t *testing.T) {
	lib, f := newFakeLib()
	var s *Stream
	if err := lib.Do(func(t *Thread) error { s = t.DefaultStream(CPU); return nil }); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if err := lib.Do(func(t *Thread) error { return forward(t, s) }); err != nil {
					errs <- err
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tids, gids := map[int]bool{}, map[string]bool{}
	for _, c := range f.calls {
		tids[c.tid], gids[c.gid] = true, true
	}
	if n := len(f.callsNamed("mlx_matmul")); n != 64*20 {
		t.Fatalf("%d matmul calls, want %d", n, 64*20)
	}
	if len(gids) != 1 {
		t.Errorf("calls ran on %d goroutines, want 1", len(gids))
	}
	if runtime.GOOS == "linux" && len(tids) != 1 {
		t.Errorf("calls ran on %d OS threads, want 1: %v", len(tids), tids)
	}
}

func TestErrorHandlerAndStickyErrors(t *testing.T) {
	lib, f := newFakeLib()
	if lib.Version != "0.31.2" {
		t.Errorf("Version = %q, want 0.31.2 (from mlx_version)", lib.Version)
	}
	if n := len(f.callsNamed("mlx_set_error_handler")); n != 1 || f.calls[0].name != "mlx_set_error_handler" {
		t.Errorf("the error handler must be installed first, once: calls %v", f.calls)
	}
	f.Fail["mlx_matmul"] = "[matmul] Last dimension of first input with shape (1,4) must match second to last dimension of second input with shape (3,4)."
	f.reset()
	err := lib.Do(func(t *Thread) error {
		t.Use(t.DefaultStream(CPU))
		x := t.Zeros([]int{1, 4}, Float32)
		y := t.Matmul(x, x)
		t.Add(y, x)
		t.Eval(y)
		return nil
	})
	var e *Error
	if !errors.As(err, &e) || e.Func != "mlx_matmul" || !strings.Contains(e.Msg, "Last dimension") {
		t.Fatalf("Do = %v, want the matmul's *Error with MLX's message", err)
	}
	if n := len(f.callsNamed("mlx_add")) + len(f.callsNamed("mlx_eval")); n != 0 {
		t.Errorf("%d calls after the failure, want none", n)
	}
	delete(f.Fail, "mlx_matmul")
	if err := lib.Do(func(t *Thread) error {
		t.Use(t.DefaultStream(CPU))
		t.Matmul(t.Zeros([]int{2}, Float32), t.Zeros([]int{2}, Float32))
		return nil
	}); err != nil {
		t.Errorf("the next Do starts clean, got %v", err)
	}
}

func TestOwnership(t *testing.T) {
	lib, f := newFakeLib()
	var kept, temp *Array
	var th *Thread
	lib.Do(func(t *Thread) error {
		th = t
		t.Use(t.DefaultStream(CPU))
		kept = t.Keep(t.Zeros([]int{3}, Float32))
		temp = t.Add(kept, kept)
		return nil
	})
	if frees := len(f.callsNamed("mlx_array_free")); frees != 1 || !temp.freed || kept.freed {
		t.Errorf("after Do: %d frees, temp freed %v, kept freed %v; want the temporary alone freed", frees, temp.freed, kept.freed)
	}
	lib.Do(func(t *Thread) error {
		t.Free(kept)
		t.Free(kept)
		return nil
	})
	if frees := len(f.callsNamed("mlx_array_free")); frees != 2 {
		t.Errorf("Free twice: %d frees in all, want 2 (idempotent)", frees)
	}
	golden.MustPanic(t, "use of a freed Array", func() {
		lib.Do(func(t *Thread) error { t.Use(t.DefaultStream(CPU)); t.Add(kept, kept); return nil })
	})
	golden.MustPanic(t, "outside Lib.Do", func() { th.Zeros([]int{1}, Float32) })
	golden.MustPanic(t, "no stream", func() {
		lib.Do(func(t *Thread) error { t.Zeros([]int{1}, Float32); return nil })
	})
	if err := lib.Do(func(*Thread) error { return nil }); err != nil {
		t.Errorf("the dispatcher must survive a panic: %v", err)
	}
}
