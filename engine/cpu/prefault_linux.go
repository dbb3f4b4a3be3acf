package cpu

import (
	"sync"

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
