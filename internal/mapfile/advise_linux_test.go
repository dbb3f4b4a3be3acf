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

// dropped writes a file of size bytes and drops it from the page cache,
// or skips the test where the page cache keeps it.
func dropped(t *testing.T, size int) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w")
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	drop(t, f)
	return f
}

// drop drops f from the page cache, or skips the test where the page
// cache keeps it.
func drop(t *testing.T, f *os.File) {
	t.Helper()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	size := int(st.Size())
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
}

// TestReadIn: ReadIn reads a mapped file that the page cache does not
// hold in whole, Map alone does not, a file it holds in 2 MiB folios is
// left alone, and one it holds in 4 KiB folios is read in again, in 2
// MiB folios, where the file system has them.
func TestReadIn(t *testing.T) {
	const size = 24 << 20
	f := dropped(t, size)
	m, err := Map(f, size)
	if err != nil {
		t.Fatal(err)
	}
	if got := resident(t, m); got > size/unix.Getpagesize()/4 {
		t.Errorf("Map alone read %d pages in", got)
	}
	if got := readIn(m, f.Name()); got != readCold {
		t.Errorf("readIn of a file the page cache did not hold: %d, want %d (readCold)", got, readCold)
	}
	if got, want := resident(t, m), size/unix.Getpagesize(); got != want {
		t.Errorf("after readIn of a file the page cache did not hold, %d of %d pages are held", got, want)
	}
	if got := readIn(m, f.Name()); got != leftAlone {
		t.Errorf("readIn of a file the page cache holds: %d, want %d (leftAlone)", got, leftAlone)
	}
	whole, ok := filePmdMapped(m)
	if !ok {
		t.Fatal("no FilePmdMapped for the mapping in /proc/self/smaps")
	}
	if err := Unmap(m); err != nil {
		t.Fatal(err)
	}
	if whole == 0 {
		t.Skip("skipped the small folios' part: this file system or kernel read the file into no 2 MiB folio")
	}

	// The file again, read a 4 KiB page at a time in a scattered order
	// with read-ahead off, which leaves it in 4 KiB folios.
	drop(t, f)
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM); err != nil {
		t.Fatal(err)
	}
	page := unix.Getpagesize()
	buf := make([]byte, page)
	for i := range size / page {
		off := (i * 97 % (size / page)) * page // 97 is prime to the page count
		if _, err := f.ReadAt(buf, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	m, err = Map(f, size)
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(m)
	if got := readIn(m, f.Name()); got != readAgain {
		t.Fatalf("readIn of a file held in small folios: %d, want %d (readAgain)", got, readAgain)
	}
	if got, _ := filePmdMapped(m); 2*got < size {
		t.Errorf("after reading it in again, %d of %d bytes are mapped 2 MiB at a time", got, size)
	}
	if got, want := resident(t, m), size/page; got != want {
		t.Errorf("after reading it in again, %d of %d pages are held", got, want)
	}
}
