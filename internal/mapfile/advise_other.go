//go:build !linux

package mapfile

import "golang.org/x/sys/unix"

func madviseHuge([]byte) {}

// madvPopulateRead is Linux's; elsewhere the pages are read ahead and
// fault in on first use.
const madvPopulateRead = unix.MADV_WILLNEED
