package mapfile

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// madviseHuge asks for transparent huge pages; a kernel without them for
// files refuses, and the mapping stays as it is.
func madviseHuge(m []byte) { unix.Madvise(m, unix.MADV_HUGEPAGE) }

// coldSamples pages, evenly spread, tell whether the page cache holds a
// mapping's file.
const coldSamples = 64

// readAction is what readIn did.
type readAction int

const (
	leftAlone readAction = iota
	readCold             // the page cache lacked the file: read in whole
	readAgain            // it held the file in small folios: read in again
)

// readIn makes the page cache hold m's file, a mapping of Map's, in 2
// MiB folios where the kernel can, and m map them, for a model about to
// run; files of at least half the machine's memory are left alone.
//
// A file that the page cache mostly lacks (fewer than half of
// coldSamples of its pages) is read in whole by faulting every page of m
// in (MADV_POPULATE_READ, Linux 5.14 on): faults in a mapping advised
// MADV_HUGEPAGE read a file in 2 MiB folios, which the mapping then maps
// whole, where what reads it otherwise (the fingerprint's read-ahead of
// its samples, MADV_WILLNEED, the faults' own asynchronous read-ahead)
// leaves small folios in most 2 MiB spans, each mapped a 4 KiB page at a
// time for as long as the page cache keeps them. After evicting the 1B
// Q8_0 GGUF (1.3 GB) from the page cache on an Intel AMX VM (Linux
// 6.18), a new process's mapping held 426 MB in 2 MiB pages without this
// and the file whole with it; decode over the file held whole in 2 MiB
// folios was 12.0-12.1 tok/s on one thread against 10.3-10.5 (docs/
// RATIONALE.md, "Weights mapped on 2 MiB boundaries").
//
// A file the page cache holds can still be held in small folios: read
// by something else, or partly reclaimed and read again by faults (the
// same VM reclaims idle page cache steadily, and decode of the 1B q4
// model there fell from 20.7 to 17 tok/s with its file cached in 4 KiB
// folios). Such a file's mapping is faulted in whole (for a file held in
// 2 MiB folios, 11 ms for 1.3 GB, faults the first pass would take
// anyway), and if less than nine tenths of its 2 MiB spans came mapped
// whole (FilePmdMapped in /proc/self/smaps), it is read in again (the
// file at path dropped from this mapping and from the page cache,
// POSIX_FADV_DONTNEED, which leaves pages another process maps, then
// faulted in), when a trial on one span, or a second, says that this
// works: the span comes back mapped whole. Where neither does (another
// process maps them, the file system or kernel has no large folios),
// the file is left as it is.
func readIn(m []byte, path string) readAction {
	page := unix.Getpagesize()
	if len(m) < 2*hugePage || uintptr(unsafe.Pointer(&m[0]))%uintptr(page) != 0 {
		return leftAlone
	}
	// The machine's memory from sysinfo(2) here, not internal/sysmem,
	// which sits above this package.
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil && uint64(len(m)) > uint64(si.Totalram)*uint64(si.Unit)/2 {
		return leftAlone
	}
	var vec [1]byte
	held := 0
	for i := range coldSamples {
		off := (len(m) - page) / (coldSamples - 1) * i / page * page
		// x/sys/unix has no Mincore for Linux.
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[off])), uintptr(page), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			return leftAlone
		}
		held += int(vec[0] & 1)
	}
	if 2*held < coldSamples {
		if !populate(m) {
			return leftAlone
		}
		return readCold
	}
	// The 2 MiB spans of m on 2 MiB boundaries of the address space
	// (Map's start is on one).
	first := int((hugePage - uintptr(unsafe.Pointer(&m[0]))%hugePage) % hugePage)
	spans := (len(m) - first) / hugePage
	span := func(i int) []byte { return m[first+i*hugePage : first+(i+1)*hugePage] }
	if spans < 2 || !populate(m) || mostlyWhole(m, spans) {
		return leftAlone
	}
	// O_NONBLOCK: should the path now name a FIFO, the open does not hang.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return leftAlone
	}
	defer f.Close()
	if !wholeAgain(f, m, span(spans/3)) && !wholeAgain(f, m, span(2*spans/3)) {
		return leftAlone
	}
	if !reread(f, m, m) {
		return leftAlone
	}
	return readAgain
}

// mostlyWhole reports whether m maps at least nine tenths of its n 2 MiB
// spans whole (/proc/self/smaps' FilePmdMapped for the mapping).
func mostlyWhole(m []byte, n int) bool {
	pmd, ok := filePmdMapped(m)
	return ok && 10*pmd >= 9*int64(n)*hugePage
}

// wholeAgain reads span, a 2 MiB span of mapping m of f, in again
// (reread) and reports whether it came back mapped whole.
func wholeAgain(f *os.File, m, span []byte) bool {
	before, ok := filePmdMapped(m)
	if !ok || !reread(f, m, span) {
		return false
	}
	after, ok := filePmdMapped(m)
	return ok && after > before
}

// populate faults m in (MADV_POPULATE_READ).
func populate(m []byte) bool { return unix.Madvise(m, unix.MADV_POPULATE_READ) == nil }

// reread drops r, a range of mapping m of f, from this mapping
// (MADV_DONTNEED: a range mapped a page at a time stays so when faulted
// again while its page table lasts) and its pages from the page cache
// (POSIX_FADV_DONTNEED, which leaves pages that another process maps),
// then faults it in again, reading the file anew.
func reread(f *os.File, m, r []byte) bool {
	off := int64(uintptr(unsafe.Pointer(&r[0])) - uintptr(unsafe.Pointer(&m[0])))
	return unix.Madvise(r, unix.MADV_DONTNEED) == nil &&
		unix.Fadvise(int(f.Fd()), off, int64(len(r)), unix.FADV_DONTNEED) == nil && populate(r)
}

// filePmdMapped is the bytes of the mapping that starts at m that are
// mapped 2 MiB at a time, from /proc/self/smaps.
func filePmdMapped(m []byte) (int64, bool) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, false
	}
	start := fmt.Sprintf("%08x-", uintptr(unsafe.Pointer(&m[0])))
	in := false
	for line := range strings.Lines(string(b)) {
		// A mapping's first line is its range ("7f12...-7f13... r--s ..."),
		// the others "Key: value".
		if key, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(key, " ") {
			if in && key == "FilePmdMapped" {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(line[len(key)+1:]), " kB"), 10, 64)
				return kb << 10, err == nil
			}
			continue
		}
		in = strings.HasPrefix(line, start)
	}
	return 0, false
}
