package cachedir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestTrim: the newest entries within both bounds stay; older ones, old
// temporary files and nothing else leave.
func TestTrim(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, size int, age time.Duration) {
		p := filepath.Join(dir, name)
		os.WriteFile(p, make([]byte, size), 0o600)
		os.Chtimes(p, now.Add(-age), now.Add(-age))
	}
	write("a.bin", 10, 1*time.Minute)
	write("b.bin", 10, 2*time.Minute)
	write("c.bin", 10, 3*time.Minute)
	write("d.bin", 10, 4*time.Minute)
	write("other.txt", 10, 5*time.Hour)
	write(".a.bin.tmp-1", 10, 2*time.Hour)
	write(".b.bin.tmp-2", 10, time.Minute)
	left := func() []string {
		var names []string
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	Trim(dir, ".bin", 3, 0)
	if got, want := left(), []string{".b.bin.tmp-2", "a.bin", "b.bin", "c.bin", "other.txt"}; !slices.Equal(got, want) {
		t.Errorf("at most 3 files: %v, want %v", got, want)
	}
	Trim(dir, ".bin", 0, 25)
	if got, want := left(), []string{".b.bin.tmp-2", "a.bin", "b.bin", "other.txt"}; !slices.Equal(got, want) {
		t.Errorf("at most 25 bytes: %v, want %v", got, want)
	}
	Trim(filepath.Join(dir, "missing"), ".bin", 1, 1) // no panic, no error
}
