package mapfile

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// madviseHuge asks for transparent huge pages; a kernel without them for
// files refuses, and the mapping stays as it is.
func madviseHuge(m []byte) { unix.Madvise(m, unix.MADV_HUGEPAGE) }

// coldSamples pages, evenly spread, tell whether the page cache holds a
// mapping's file.
const coldSamples = 64

// populateCold reads m's file in by faulting every page of m in
// (MADV_POPULATE_READ, Linux 5.14 on) when the page cache holds fewer
// than half of coldSamples of its pages and the file is less than half
// the machine's memory, and reports whether it did. Faults in a mapping
// advised MADV_HUGEPAGE read a file in 2 MiB folios, which the mapping
// then maps whole; what reads it otherwise (the fingerprint's read-ahead
// of its samples, MADV_WILLNEED, the faults' own asynchronous read-ahead)
// leaves small folios in most 2 MiB spans, which are mapped a 4 KiB page
// at a time for as long as the page cache keeps them. After evicting the
// 1B Q8_0 GGUF (1.3 GB) from the page cache on an Intel AMX VM (Linux
// 6.18), a new process's mapping held 426 MB in 2 MiB pages without this
// and the file whole with it; decode over the file held whole in 2 MiB
// folios was 12.0-12.1 tok/s on one thread against 10.3-10.5 (docs/
// RATIONALE.md, "Weights mapped on 2 MiB boundaries").
func populateCold(m []byte) bool {
	page := unix.Getpagesize()
	if len(m) < 2*hugePage || uintptr(unsafe.Pointer(&m[0]))%uintptr(page) != 0 {
		return false
	}
	// The machine's memory from sysinfo(2) here, not internal/sysmem,
	// which sits above this package.
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil && uint64(len(m)) > uint64(si.Totalram)*uint64(si.Unit)/2 {
		return false
	}
	var vec [1]byte
	held := 0
	for i := range coldSamples {
		off := (len(m) - page) / (coldSamples - 1) * i / page * page
		// x/sys/unix has no Mincore for Linux.
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[off])), uintptr(page), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			return false
		}
		held += int(vec[0] & 1)
	}
	if 2*held >= coldSamples {
		return false
	}
	return unix.Madvise(m, unix.MADV_POPULATE_READ) == nil
}
