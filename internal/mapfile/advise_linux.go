package mapfile

import "golang.org/x/sys/unix"

// madviseHuge asks for transparent huge pages; a kernel without them for
// files refuses, and the mapping stays as it is.
func madviseHuge(m []byte) { unix.Madvise(m, unix.MADV_HUGEPAGE) }
