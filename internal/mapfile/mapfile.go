// Package mapfile maps a weights file into memory read-only, where the
// kernel can, with 2 MiB pages: the mapping starts on a 2 MiB boundary
// and asks for transparent huge pages (MADV_HUGEPAGE), so that a page
// cache that holds the file in 2 MiB folios is mapped by one page-table
// entry per 2 MiB instead of 512, faulted in once instead of 512 times:
// a new process's first prefill pays a fault per 4 KiB page it touches
// (175,000 for a 1B model's 0.7 GB). How much of a file the page cache
// holds in 2 MiB folios is the kernel's affair (docs/RATIONALE.md,
// "Weights mapped on 2 MiB boundaries"); where it holds none, or on
// another system, the mapping is an ordinary one, with the same
// contents.
package mapfile

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of an x86-64 or arm64 (4 KiB granule) PMD page.
const hugePage = 2 << 20

// Map maps the first size bytes of f read-only and shared. Unmap the
// result with Unmap.
func Map(f *os.File, size int) ([]byte, error) {
	if size < hugePage {
		p, err := unix.MmapPtr(int(f.Fd()), 0, nil, uintptr(size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return nil, err
		}
		return unsafe.Slice((*byte)(p), size), nil
	}
	// Reserve size plus a huge page of address space, map the file over
	// its first 2 MiB boundary and give the rest back.
	span := uintptr(size + hugePage)
	res, err := unix.MmapPtr(-1, 0, nil, span, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	off := (hugePage - uintptr(res)%hugePage) % hugePage
	at := unsafe.Add(res, off)
	p, err := unix.MmapPtr(int(f.Fd()), 0, at, uintptr(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		unix.MunmapPtr(res, span)
		return nil, err
	}
	if off > 0 {
		unix.MunmapPtr(res, off)
	}
	if rest := span - off - uintptr(size); rest > 0 {
		unix.MunmapPtr(unsafe.Add(at, size), rest)
	}
	m := unsafe.Slice((*byte)(p), size)
	madviseHuge(m)
	return m, nil
}

// MapPrivate maps the first size bytes of f copy-on-write: readable and
// writable, its pages the page cache's until written, a write never
// reaching the file (a session's KV state, which a cache may adopt and
// then overwrite). Unmap the result with Unmap.
func MapPrivate(f *os.File, size int) ([]byte, error) {
	p, err := unix.MmapPtr(int(f.Fd()), 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), size), nil
}

// Unmap unmaps a mapping made by Map or MapPrivate. (Map maps with unix.MmapPtr, not
// unix.Mmap, whose Munmap knows only its own mappings.)
func Unmap(m []byte) error {
	if len(m) == 0 {
		return nil
	}
	return unix.MunmapPtr(unsafe.Pointer(&m[0]), uintptr(len(m)))
}

// ReadAhead asks for m's pages that the page cache lacks to be read in,
// in the background (MADV_WILLNEED), so that a model's first pass over
// its weights does not wait for the disk. It returns at once; m may be
// unmapped meanwhile (the call then fails, harmlessly).
//
// It used to map every page in as well (MADV_POPULATE_READ), on the
// other core while the tokenizer loads. With the tokenizer built on two
// cores that took the core from it: the first token of a new chat (1B
// q4, two threads, page cache warm, AMD EPYC Zen 4) came 0.338 s after
// start with it and 0.323 s with the read-ahead alone, medians of ten
// alternating runs; the first pass's faults cost less than the
// competition did. A model's weights that the page cache lacked were
// read in before by ReadIn.
func ReadAhead(m []byte) { go unix.Madvise(m, unix.MADV_WILLNEED) }

// ReadIn reads m, a mapping of Map's of the file at path, in at once
// where the page cache mostly lacks the file, through the mapping, so
// that it is cached in 2 MiB folios where the kernel can, and reads it in
// again where the page cache holds it in small folios (readIn): for a
// model about to run, before anything else reads it. It is not for a
// file of which only the header is wanted (listing models), which it
// would read whole.
func ReadIn(m []byte, path string) { readIn(m, path) }
