//go:build !linux

package mapfile

func madviseHuge([]byte) {}

// populateCold is Linux's; elsewhere a file is read in by ReadAhead and
// the first pass's faults.
func populateCold([]byte) bool { return false }
