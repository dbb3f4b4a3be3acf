//go:build !linux

package mapfile

func madviseHuge([]byte) {}
