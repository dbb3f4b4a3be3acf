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

// spanSamples 2 MiB spans of a mapping, evenly spread, tell whether the
// page cache holds its file in 2 MiB folios.
const spanSamples = 8

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
// folios). spanSamples spans of m are faulted in and, if fewer than half
// of them came mapped whole (FilePmdMapped in /proc/self/smaps), the file
// is read in again: the samples first, paged out (MADV_PAGEOUT, which
// drops only pages no other process maps) and faulted in again, and if
// they now come whole, all of m. Where they do not (another process maps
// them, the file system or kernel has no large folios, or paging out is
// refused), the file is left as it is, having cost the samples' 16 MiB
// read.
func readIn(m []byte) readAction {
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
		if unix.Madvise(m, unix.MADV_POPULATE_READ) != nil {
			return leftAlone
		}
		return readCold
	}
	spans := sampleSpans(m)
	if len(spans) == 0 || !populate(spans...) || wholeSpans(m, len(spans)) {
		return leftAlone
	}
	if !reread(spans...) || !wholeSpans(m, len(spans)) {
		return leftAlone
	}
	if !populate(m) || !reread(m) {
		return leftAlone
	}
	return readAgain
}

// sampleSpans returns spanSamples 2 MiB spans of m, evenly spread, each
// on a 2 MiB boundary of the address space (Map's start is on one).
func sampleSpans(m []byte) [][]byte {
	start := uintptr(unsafe.Pointer(&m[0]))
	first := int((hugePage - start%hugePage) % hugePage)
	whole := (len(m) - first) / hugePage // 2 MiB spans that m holds
	if whole < spanSamples {
		return nil
	}
	spans := make([][]byte, spanSamples)
	for i := range spans {
		off := first + whole/spanSamples*i*hugePage
		spans[i] = m[off : off+hugePage]
	}
	return spans
}

// populate faults each of ms in (MADV_POPULATE_READ).
func populate(ms ...[]byte) bool {
	for _, m := range ms {
		if unix.Madvise(m, unix.MADV_POPULATE_READ) != nil {
			return false
		}
	}
	return true
}

// reread pages each of ms out of the page cache (MADV_PAGEOUT, which
// leaves pages other processes map), drops this mapping's page tables for
// it (MADV_DONTNEED: a range mapped a page at a time before stays so when
// faulted again) and faults it in again, reading what was paged out.
func reread(ms ...[]byte) bool {
	for _, m := range ms {
		if unix.Madvise(m, unix.MADV_PAGEOUT) != nil || unix.Madvise(m, unix.MADV_DONTNEED) != nil ||
			unix.Madvise(m, unix.MADV_POPULATE_READ) != nil {
			return false
		}
	}
	return true
}

// wholeSpans reports whether m maps at least half of n 2 MiB spans whole
// (/proc/self/smaps' FilePmdMapped for the mapping that starts at m).
func wholeSpans(m []byte, n int) bool {
	pmd, ok := filePmdMapped(m)
	return ok && 2*pmd >= int64(n)*hugePage
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
