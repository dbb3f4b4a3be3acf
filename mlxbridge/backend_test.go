package mlxbridge

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

func TestMissingLibrary(t *testing.T) {
	t.Setenv(EnvVar, "/nonexistent/libmlxc.so")
	m, err := engine.LoadModel(golden.ModelDir("tiny-f32"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = New(m, Options{})
	if err == nil || !strings.Contains(err.Error(), "libmlxc not found (looked for /nonexistent/libmlxc.so)") {
		t.Errorf("New = %v, want the places looked at", err)
	}
	if _, err := Load(""); err == nil {
		t.Error("Load succeeded without a library")
	}
}

// TestAnotherBackendsCache checks what the conformance check cannot: a
// cache of another MLX backend, the same type, is refused too.
func TestAnotherBackendsCache(t *testing.T) {
	f := load(t, "tiny-f32", Options{})
	other := load(t, "tiny-f32", Options{})
	if err := f.b.Forward(other.cache(t), []int32{1}, make([]float32, f.m.Config.VocabSize)); err == nil {
		t.Error("a cache of another backend was accepted")
	}
	if f.b.Name() != "mlx" || f.b.Device() != "cpu" {
		t.Errorf("Name %q Device %q", f.b.Name(), f.b.Device())
	}
}

func TestCloseAndCleanup(t *testing.T) {
	f := load(t, "tiny-f32", Options{})
	vocab := f.m.Config.VocabSize
	live := func() int {
		f.b.mu.Lock()
		defer f.b.mu.Unlock()
		return len(f.b.caches)
	}
	c := f.cache(t)
	forward(t, f.b, c, []int32{1, 2, 3}, vocab)
	c.Close()
	if live() != 0 {
		t.Errorf("%d caches live after Close, want 0", live())
	}
	golden.MustPanic(t, "closed cache", func() { f.b.Forward(c, []int32{1}, make([]float32, vocab)) })

	func() { forward(t, f.b, f.cache(t), []int32{1, 2}, vocab) }() // dropped without Close
	deadline := time.Now().Add(5 * time.Second)
	for live() != 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if live() != 0 {
		t.Error("a dropped cache was not freed after garbage collection")
	}

	kept := f.cache(t)
	if err := f.b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	golden.MustPanic(t, "closed backend", func() { f.b.Forward(kept, []int32{1}, make([]float32, vocab)) })
}
