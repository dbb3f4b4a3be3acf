package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

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
		b, err := selectBackend(tc.name, 1, "", &errOut)(m)
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
		} else if tc.note && !strings.Contains(note, "libmlxc not found") {
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
		b, err := selectBackend(tc.name, 1, "", &errOut)(m)
		if err != nil || b.Name() != tc.want || (tc.note == "") != (errOut.Len() == 0) || !strings.Contains(errOut.String(), tc.note) {
			t.Errorf("--backend %s: %v, note %q; want %s with a note saying %q", tc.name, err, errOut.String(), tc.want, tc.note)
		}
		if b != nil {
			b.Close()
		}
	}
}
