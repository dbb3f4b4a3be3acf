//go:build !linux

package mlxc

func osThread() int { return -1 }
