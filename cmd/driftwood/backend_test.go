package main

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/backends"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
)

func loadTiny(t *testing.T) *engine.Model {
	t.Helper()
	m, err := engine.LoadModel(golden.ModelDir("tiny-f32"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// haveMLX reports whether libmlxc is found as `driftwood doctor` finds it.
func haveMLX() bool {
	_, err := mlxbridge.Load("")
	return err == nil
}

func TestSelectBackendWithoutLibrary(t *testing.T) {
	t.Setenv(mlxbridge.EnvVar, "/nonexistent/libmlxc.so")
	m := loadTiny(t)
	for _, tc := range []struct {
		reason, name string
		want         string // backend name, or a substring of the error
		note         bool
	}{
		{"cpu is the pure-Go backend", "cpu", "cpu", false},
		{"auto falls back to the CPU, with a note only on a Mac (elsewhere the CPU backend is the norm)", "auto", "cpu", runtime.GOOS == "darwin"},
		{"mlx without the library is an error naming where it looked", "mlx", "looked for /nonexistent/libmlxc.so", false},
		{"an unknown name is an error", "gpu", `--backend "gpu"`, false},
	} {
		var errOut bytes.Buffer
		b, err := selectBackend(tc.name, backends.Options{Threads: 1}, &errOut)(m)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want %q", tc.reason, err, tc.want)
			}
		case b.Name() != tc.want:
			t.Errorf("%s: backend %q, want %q", tc.reason, b.Name(), tc.want)
		}
		if b != nil {
			b.Close()
		}
		if note := errOut.String(); tc.note != (note != "") || strings.Count(note, "\n") > 1 {
			t.Errorf("%s: note %q", tc.reason, note)
		} else if tc.note && note != "driftwood: "+macNoMLX+"\n" {
			t.Errorf("%s: the note %q does not say why", tc.reason, note)
		}
	}
}

func TestSelectBackendWithLibrary(t *testing.T) {
	lib, err := mlxbridge.Load("")
	if err != nil {
		t.Skipf("skipped: %v", err)
	}
	m := loadTiny(t)
	for _, tc := range []struct {
		name, want, note string
	}{
		{"mlx", "mlx", ""},
		{"auto", "mlx", ""},
	} {
		if tc.name == "auto" && !lib.GPU {
			tc.want, tc.note = "cpu", "has no GPU"
		}
		var errOut bytes.Buffer
		b, err := selectBackend(tc.name, backends.Options{Threads: 1}, &errOut)(m)
		if err != nil || b.Name() != tc.want || (tc.note == "") != (errOut.Len() == 0) || !strings.Contains(errOut.String(), tc.note) {
			t.Errorf("--backend %s: %v, note %q; want %s with a note saying %q", tc.name, err, errOut.String(), tc.want, tc.note)
		}
		if b != nil {
			b.Close()
		}
	}
}

// TestFallbackNote checks auto's note for each platform without running
// on it: a Mac without mlx-c hears, once and in one line, that the GPU is
// unused and how to fix it; Linux without it hears nothing; a library
// that is there and unusable is named everywhere.
func TestFallbackNote(t *testing.T) {
	t.Setenv(mlxbridge.EnvVar, "/nonexistent/libmlxc.dylib")
	_, notFound := mlxbridge.Load("")
	if !mlxbridge.IsNotFound(notFound) {
		t.Fatalf("Load = %v, want not found", notFound)
	}
	broken := errors.New("/opt/homebrew/lib/libmlxc.dylib is mlx-c 0.1.2; Driftwood needs mlx-c 0.2.0 or newer (brew upgrade mlx-c)")
	for _, tc := range []struct {
		reason, goos string
		err          error
		want         string
	}{
		{"a Mac without mlx-c: the GPU is unused, and the command", "darwin", notFound, "the GPU is unused: mlx-c is not installed (brew install mlx-c); running on the CPU backend"},
		{"Linux without it: the CPU backend is the norm", "linux", notFound, ""},
		{"a found library that cannot be used, on a Mac", "darwin", broken, "using the CPU backend: " + broken.Error()},
		{"and on Linux", "linux", broken, "using the CPU backend: " + broken.Error()},
	} {
		if got := fallbackNote(tc.goos, tc.err); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.reason, got, tc.want)
		}
	}
}

// TestChatGetsTheNote checks that the chat's backend selection keeps the
// note for the status area, once, rather than writing to the terminal.
func TestChatGetsTheNote(t *testing.T) {
	t.Setenv(mlxbridge.EnvVar, "/nonexistent/libmlxc.so")
	t.Setenv(mlxbridge.TrustEnvVar, "")
	m := loadTiny(t)
	defer func(os string) { hostOS = os }(hostOS)
	hostOS = "darwin"
	notes := &noteBox{}
	pick := selectBackend("auto", backends.Options{Threads: 1}, notes)
	for range 2 {
		b, err := pick(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	got := notes.take()
	if got != macNoMLX {
		t.Errorf("after two loads on a Mac without mlx-c, the note is %q; want it once", got)
	}
	notes.Write([]byte("driftwood: using the CPU backend: x\n"))
	if got := notes.take(); got != "using the CPU backend: x" || notes.take() != "" {
		t.Errorf("take = %q, want the line without its prefix, once", got)
	}
}
