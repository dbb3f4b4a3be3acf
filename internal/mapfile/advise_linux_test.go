package mapfile

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident counts the pages of m that the page cache holds.
func resident(t *testing.T, m []byte) int {
	t.Helper()
	page := unix.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestReadInCold: ReadInCold reads a mapped file that the page cache
// does not hold in whole, Map alone does not, and a file it holds is left
// alone.
func TestReadInCold(t *testing.T) {
	const size = 6 << 20
	path := filepath.Join(t.TempDir(), "w")
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Skip("cannot drop the file from the page cache:", err)
	}
	probe, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	cold := resident(t, probe)
	unix.Munmap(probe)
	if cold > size/unix.Getpagesize()/4 {
		t.Skipf("the page cache kept %d pages of the dropped file", cold)
	}
	m, err := Map(f, size)
	if err != nil {
		t.Fatal(err)
	}
	if got := resident(t, m); got > size/unix.Getpagesize()/4 {
		t.Errorf("Map alone read %d pages in", got)
	}
	ReadInCold(m)
	if got, want := resident(t, m), size/unix.Getpagesize(); got != want {
		t.Errorf("after ReadInCold of a file the page cache did not hold, %d of %d pages are held", got, want)
	}
	if populateCold(m) {
		t.Error("populateCold read in a file the page cache holds")
	}
	if err := Unmap(m); err != nil {
		t.Fatal(err)
	}
}
