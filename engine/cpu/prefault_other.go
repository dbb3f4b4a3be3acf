//go:build !linux

package cpu

// prefault does nothing where the kernel has no advice to populate
// pages: they come at first touch.
func prefault([][]byte, int) {}

// prefaultRead does nothing here: the pages come at first touch.
func prefaultRead([][]byte, int) {}
