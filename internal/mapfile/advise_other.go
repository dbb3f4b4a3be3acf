//go:build !linux

package mapfile

func madviseHuge([]byte) {}

// readAction is what readIn did: on Linux, one of several.
type readAction int

const leftAlone readAction = 0

// readIn is Linux's; elsewhere a file is read in by ReadAhead and the
// first pass's faults.
func readIn([]byte, string) readAction { return leftAlone }
