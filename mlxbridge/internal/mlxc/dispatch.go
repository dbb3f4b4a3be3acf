package mlxc

import "runtime"

// dispatcher runs functions one at a time on a single goroutine locked to
// its OS thread. MLX keeps per-thread state (since v0.31.2 the default
// streams are per OS thread), so every call into the library goes through
// one dispatcher.
type dispatcher struct {
	calls chan call
}

type call struct {
	f    func()
	done chan any // the recovered panic value, or nil
}

// newDispatcher starts the dispatcher's goroutine; it lives as long as the
// process, like the library it serves.
func newDispatcher() *dispatcher {
	d := &dispatcher{calls: make(chan call)}
	go d.loop()
	return d
}

func (d *dispatcher) loop() {
	runtime.LockOSThread() // never unlocked: this goroutine owns the thread
	for c := range d.calls {
		c.done <- protect(c.f)
	}
}

// protect runs f and returns what it panicked with, so that a panic
// reaches the caller of do instead of killing the dispatcher.
func protect(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// do runs f on the dispatcher's thread and waits for it; a panic in f is
// re-raised in the caller. do must not be called from inside f.
func (d *dispatcher) do(f func()) {
	done := make(chan any, 1)
	d.calls <- call{f: f, done: done}
	if p := <-done; p != nil {
		panic(p)
	}
}
