//go:build !linux

package cpu

// amxGranted is false off Linux: the amx set asks Linux's arch_prctl for
// the tile state (amx_linux_amd64.go).
func amxGranted() bool { return false }
