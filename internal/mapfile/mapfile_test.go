package mapfile

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// TestMap maps a file of 3 MiB and a few bytes, and one of a few KiB:
// the contents are the file's, the large mapping starts on a 2 MiB
// boundary, and both unmap.
func TestMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{3<<20 + 123, 5000} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(rng.Uint32())
		}
		path := filepath.Join(t.TempDir(), "w")
		if err := os.WriteFile(path, want, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Map(f, size)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m, want) {
			t.Errorf("%d bytes: the mapping differs from the file", size)
		}
		if at := uintptr(unsafe.Pointer(&m[0])); size >= hugePage && at%hugePage != 0 {
			t.Errorf("%d bytes: mapped at %#x, not on a 2 MiB boundary", size, at)
		}
		if err := Unmap(m); err != nil {
			t.Errorf("%d bytes: unmap: %v", size, err)
		}
	}
}
