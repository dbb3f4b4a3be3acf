package mlxc

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestExportedNames reads the exports of real files: the test binary's
// own C library has no mlx_ functions but a readable table (an empty,
// non-nil list), a text file has none, and libmlxc, where there is one,
// exports no function that its recognised release does not declare.
func TestExportedNames(t *testing.T) {
	text := filepath.Join(t.TempDir(), "libmlxc.so")
	os.WriteFile(text, []byte("not a library"), 0o644)
	if names, err := exportedNames(text); err == nil {
		t.Errorf("a text file: %v, no error", names)
	}
	if libc := "/lib/x86_64-linux-gnu/libc.so.6"; fileExists(libc) {
		names, err := exportedNames(libc)
		if err != nil || names == nil || len(names) != 0 {
			t.Errorf("libc: %v, %v; want an empty list", names, err)
		}
	}
	path, err := Search{}.Find()
	if err != nil {
		t.Skipf("skipped the libmlxc part: %v", err)
	}
	lib, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	names, err := exportedNames(path)
	if err != nil {
		t.Fatal(err)
	}
	declared := namesIn(lib.Release.index)
	var extra []string
	for _, n := range names {
		if !slices.Contains(declared, n) {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 && !lib.Release.Newer {
		t.Errorf("%s (mlx-c %s) exports %v, which that release does not declare", path, lib.Release.Name, extra)
	}
	t.Logf("%s: %d mlx_ functions exported; mlx-c %s declares %d", path, len(names), lib.Release.Name, len(declared))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
