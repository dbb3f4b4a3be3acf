package cachedir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/internal/flock"
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

// TestTrimKeepsLiveTemp: an old temporary file is removed only when no
// writer holds it. A writer stalled for hours (a laptop asleep in the
// middle of a write, a stopped process) keeps its file; the age alone
// used to decide, and the writer's rename then failed.
func TestTrimKeepsLiveTemp(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * StaleTemp)
	live := filepath.Join(dir, ".a.bin~tmp-1")
	f, err := os.Create(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := flock.Hold(f); err != nil {
		t.Skipf("this file system cannot lock: %v", err)
	}
	dead := filepath.Join(dir, ".b.bin~tmp-2")
	os.WriteFile(dead, make([]byte, 100), 0o600)
	for _, p := range []string{live, dead} {
		os.Chtimes(p, old, old)
	}
	Trim(dir, ".bin", 1, 0)
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live writer's file was removed: %v", err)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Error("the dead writer's file was kept")
	}
	f.Close()
	Trim(dir, ".bin", 1, 0)
	if _, err := os.Stat(live); err == nil {
		t.Error("the file was kept after its writer let it go")
	}
}
