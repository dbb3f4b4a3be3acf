package cpu

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// prefault asks the kernel for every page of regions at once
// (MADV_POPULATE_WRITE, Linux 5.14 on), on workers goroutines: a
// restore's first touch of a fresh KV cache otherwise takes one fault a
// page, which in the VMs measured cost as much as the copy itself. An
// older kernel refuses the advice; the pages then come at first touch,
// as before.
func prefault(regions [][]byte, workers int) {
	var wg sync.WaitGroup
	for w := range min(workers, len(regions)) {
		wg.Go(func() {
			for i := w; i < len(regions); i += workers {
				_ = unix.Madvise(regions[i], unix.MADV_POPULATE_WRITE) // advice only: refused on old kernels
			}
		})
	}
	wg.Wait()
}

// prefaultRead maps in the pages of views, file pages the cache reads in
// place, on workers goroutines (MADV_POPULATE_READ): taking them in
// here, many a call, rather than a fault at a time in the first tokens'
// attention. Nothing is copied: the pages are the page cache's.
func prefaultRead(views [][]byte, workers int) {
	page := uintptr(unix.Getpagesize())
	var wg sync.WaitGroup
	for w := range min(workers, len(views)) {
		wg.Go(func() {
			for i := w; i < len(views); i += workers {
				v := views[i]
				if len(v) == 0 {
					continue
				}
				skip := int(uintptr(unsafe.Pointer(&v[0])) % page) // madvise wants a page boundary; that page is the mapping's
				_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(&v[0]), -skip)), len(v)+skip), unix.MADV_POPULATE_READ)
			}
		})
	}
	wg.Wait()
}
