package cpu

import (
	"fmt"
	"runtime"
	"sync"

	// klauspost/cpuid reads the cores and caches from CPUID (leaves 4, 0xB
	// and 0x1F on Intel, 0x8000001D/1E on AMD) and from the OS on arm64:
	// a well-kept library for what would otherwise be a page of
	// vendor-specific assembly and parsing.
	"github.com/klauspost/cpuid/v2"
)

// Tuning is what the backend derives from the CPU it runs on, at run
// time, rather than from the machine it was written on
// (docs/RATIONALE.md, "Chosen at run time").
type Tuning struct {
	// CPU is the processor's name, as CPUID or the OS gives it.
	CPU string `json:"cpu"`
	// Cores is the physical cores, Logical the hardware threads (0:
	// unknown).
	Cores   int `json:"cores"`
	Logical int `json:"logical_cpus"`
	// L1D and L2 are one core's data caches, L3 the last level's whole
	// size, in bytes (0: unknown).
	L1D int `json:"l1d_bytes"`
	L2  int `json:"l2_bytes"`
	L3  int `json:"l3_bytes"`
	// Threads is the worker count when Options.Threads is 0: one per
	// physical core that this process may run on. A second hardware
	// thread on a core shares its int8 units and its memory traffic, as
	// llama.cpp's default, which counts physical cores, assumes (not
	// measured here: the machine this was written on has no SMT).
	Threads int `json:"default_threads"`
	// GemmBlock is how many bytes of the transposed batch input the float
	// batch gemm keeps hot per column chunk: an eighth of L2, so that the
	// chunk stays in L2 beside the rows being dequantised (256 KiB where
	// L2 is unknown, the value of a 2 MiB L2).
	GemmBlock int `json:"gemm_block_bytes"`
}

// Bounds of GemmBlock: a column chunk is at least 128 columns of a
// 16-input batch, and at most what the largest L2s hold in an eighth.
const (
	minGemmBlock     = 64 << 10
	maxGemmBlock     = 1 << 20
	defaultGemmBlock = 256 << 10
)

// tuneOnce holds the tuning derived for this process: the CPU does not
// change while it runs.
var tuneOnce = sync.OnceValue(func() Tuning {
	c := cpuid.CPU
	return tuningFor(c.BrandName, c.PhysicalCores, c.LogicalCores, int(c.Cache.L1D), int(c.Cache.L2), int(c.Cache.L3), runtime.GOMAXPROCS(0))
})

// DetectTuning returns the tuning for this machine.
func DetectTuning() Tuning { return tuneOnce() }

// tuningFor derives a Tuning from what CPUID says and GOMAXPROCS (the
// CPUs this process may use: Go lowers it to a container's CPU limit).
// Negative sizes (cpuid's "unknown") count as 0.
func tuningFor(name string, cores, logical, l1d, l2, l3, procs int) Tuning {
	t := Tuning{CPU: name, Cores: max(cores, 0), Logical: max(logical, 0), L1D: max(l1d, 0), L2: max(l2, 0), L3: max(l3, 0)}
	t.Threads = max(procs, 1)
	if t.Cores > 0 && t.Logical > t.Cores {
		// SMT: no more workers than physical cores.
		t.Threads = min(t.Threads, t.Cores)
	}
	t.GemmBlock = defaultGemmBlock
	if t.L2 > 0 {
		t.GemmBlock = min(max(t.L2/8, minGemmBlock), maxGemmBlock)
	}
	return t
}

// String is the tuning on one line, for doctor.
func (t Tuning) String() string {
	kib := func(n int) string {
		if n == 0 {
			return "?"
		}
		if n >= 1<<20 && n%(1<<20) == 0 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%d KiB", n>>10)
	}
	name := t.CPU
	if name == "" {
		name = "unknown CPU"
	}
	return fmt.Sprintf("%s: %d cores (%d hardware threads); L1d %s, L2 %s, L3 %s → %d workers by default, float gemm block %s",
		name, t.Cores, t.Logical, kib(t.L1D), kib(t.L2), kib(t.L3), t.Threads, kib(t.GemmBlock))
}
