//go:build !linux

package safetensors

import "golang.org/x/sys/unix"

// madvPopulateRead is Linux's; elsewhere the weights fault in on first use.
const madvPopulateRead = unix.MADV_WILLNEED
