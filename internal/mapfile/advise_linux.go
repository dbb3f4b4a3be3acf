package mapfile

import "golang.org/x/sys/unix"

// madviseHuge asks for transparent huge pages; a kernel without them for
// files refuses, and the mapping stays as it is.
func madviseHuge(m []byte) { unix.Madvise(m, unix.MADV_HUGEPAGE) }

// madvPopulateRead maps every page of the file that the page cache holds
// (reading in the rest) in one call, rather than a fault a page.
const madvPopulateRead = unix.MADV_POPULATE_READ
