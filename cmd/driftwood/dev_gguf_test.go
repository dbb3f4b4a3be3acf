package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestDevGGUFToMLX: the command writes a folder the engine loads, prints
// its path, and says on stderr what became of each type of tensor (the
// converter itself is tested in internal/ggufconv); without both flags,
// or with help asked for, it says how to call it.
func TestDevGGUFToMLX(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	out, errOut, code := runCLI(t, "dev", "gguf-to-mlx", "--from", golden.ModelDir("tiny-mixed.gguf"), "--out", dir)
	if code != 0 || strings.TrimSpace(out) != dir {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	for _, want := range []string{"Q4_1  → affine 4-bit, groups of 32", "Q8_0  → F32", "BF16  kept", "wrote "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
	m, err := engine.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"dev", "gguf-to-mlx", "--out", t.TempDir()}, 1, "--from FILE.gguf and --out DIR are required"},
		{[]string{"dev", "gguf-to-mlx", "-h"}, 0, "usage: driftwood dev gguf-to-mlx"},
		{[]string{"dev", "nope"}, 1, "driftwood dev gguf-to-mlx --from FILE.gguf --out DIR"},
	} {
		out, errOut, code := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%q: exit %d, output %q; want exit %d and %q", c.args, code, out+errOut, c.code, c.want)
		}
	}
}
