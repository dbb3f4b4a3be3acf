package mlxc

import "golang.org/x/sys/unix"

func osThread() int { return unix.Gettid() }
