package mlxbridge

import (
	"errors"
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

func TestForwardErrors(t *testing.T) {
	f := load(t, "tiny-f32", Options{})
	vocab := f.m.Config.VocabSize
	small, err := f.b.NewCache(4)
	if err != nil {
		t.Fatal(err)
	}
	var full *engine.ContextFullError
	if err := f.b.Forward(small, []int32{1, 2, 3, 4, 5}, make([]float32, vocab)); !errors.As(err, &full) || small.Len() != 0 {
		t.Errorf("5 tokens in a window of 4: %v, Len %d; want ContextFullError and no change", err, small.Len())
	}
	for _, tc := range []struct {
		reason string
		tokens []int32
		logits int
		want   string
	}{
		{"a logits buffer of the wrong size", []int32{1, 2}, vocab + 1, "logits buffer"},
		{"a token outside the vocabulary", []int32{int32(vocab)}, vocab, "outside the vocabulary"},
	} {
		if err := f.b.Forward(f.cache(t), tc.tokens, make([]float32, tc.logits)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.reason, err, tc.want)
		}
	}
	other := load(t, "tiny-f32", Options{})
	if err := f.b.Forward(other.cache(t), []int32{1}, make([]float32, vocab)); err == nil {
		t.Error("a cache of another backend was accepted")
	}
	if _, err := f.b.NewCache(f.m.Config.MaxPositionEmbeddings + 1); err == nil {
		t.Error("a window past the model's was accepted")
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
	c.(*cache).Close()
	c.(*cache).Close()
	if live() != 0 {
		t.Errorf("%d caches live after Close, want 0", live())
	}
	mustPanic(t, "closed cache", func() { f.b.Forward(c, []int32{1}, make([]float32, vocab)) })

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
	mustPanic(t, "closed backend", func() { f.b.Forward(kept, []int32{1}, make([]float32, vocab)) })
}

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		p := recover()
		if s, _ := p.(string); !strings.Contains(s, want) {
			t.Errorf("panic %v, want one saying %q", p, want)
		}
	}()
	f()
}
