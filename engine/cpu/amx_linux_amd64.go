package cpu

import (
	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

// amxGranted reports whether this process may use AMX-INT8 tiles: the CPU
// has AMX-TILE and AMX-INT8, the OS has enabled their state in XCR0 (bits
// 17, TILECFG, and 18, TILEDATA), and Linux grants the process the tile
// data state, which it allocates only on request:
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA). The permission is
// the whole process's, every thread's, present and future (the kernel's
// Documentation/arch/x86/xstate.rst); the kernel refuses it if a
// thread's signal stack could not hold the larger signal frame (Go's are
// 32 KiB; the frame with tiles about 12 KiB, AT_MINSIGSTKSZ 11952 on
// the Emerald Rapids this was written on), and then the amx set is
// simply not offered. It is asked for once, when kernelSets is built.
func amxGranted() bool {
	const (
		archReqXcompPerm  = 0x1023
		xfeatureXtiledata = 18
	)
	x := &cpu.X86
	if !x.HasAMXTile || !x.HasAMXInt8 || xgetbv0()&(3<<17) != 3<<17 {
		return false
	}
	_, _, errno := unix.Syscall(unix.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0)
	return errno == 0
}
