package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestRemoveStaleOwnNamesOnly: cleaning up after target n removes n's
// leftovers, of this build and of earlier ones, and no temporary file of
// a target whose name begins like n's. Before the '~' and the digit
// check, the pattern of "n.safetensors" matched the temporary files of
// "n.safetensors.tmp-1.safetensors" (session names may carry ".tmp-1"),
// and saving session n deleted the other session's save in flight.
func TestRemoveStaleOwnNamesOnly(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		".n.safetensors~tmp-123",                      // n's, this build: removed
		".n.safetensors.tmp-456",                      // n's, an earlier build: removed
		".n.safetensors.tmp-1.safetensors~tmp-789",    // session n.safetensors.tmp-1's
		".n.safetensors.tmp-1.safetensors.tmp-101112", // the same, an earlier build
		".n.safetensors.x~tmp-1",                      // a file n.safetensors.x's
		"n.safetensors",
	} {
		os.WriteFile(filepath.Join(dir, name), nil, 0o600)
	}
	RemoveStale(filepath.Join(dir, "n.safetensors"))
	want := []string{".n.safetensors.tmp-1.safetensors.tmp-101112", ".n.safetensors.tmp-1.safetensors~tmp-789", ".n.safetensors.x~tmp-1", "n.safetensors"}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
}

// TestLiveTempIsKept: a write in progress holds its temporary file, so
// RemoveStale leaves it; the write then completes.
func TestLiveTempIsKept(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.bin")
	inFill, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- WriteMode(path, 0o600, func(w io.Writer) error {
			close(inFill)
			<-release
			_, err := w.Write([]byte("new"))
			return err
		})
	}()
	<-inFill
	RemoveStale(path)
	if got := names(t, dir); len(got) != 1 {
		t.Errorf("a live temporary file was removed: %v", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("content %q", b)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"a.bin"}) {
		t.Errorf("after the write: %v", got)
	}
}
