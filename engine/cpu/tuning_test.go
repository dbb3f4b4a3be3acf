package cpu

import (
	"strings"
	"testing"
)

// TestTuningFor checks what the backend derives from the CPU: one worker
// per physical core it may use, and the float gemm's block from L2.
func TestTuningFor(t *testing.T) {
	for _, c := range []struct {
		what                      string
		cores, logical, l2, procs int
		wantThreads, wantBlockKiB int
	}{
		{"2 vCPUs, no SMT, 2 MiB L2", 2, 2, 2 << 20, 2, 2, 256},
		{"8 threads on 4 SMT cores", 4, 8, 1 << 20, 8, 4, 128},
		{"SMT, GOMAXPROCS below the cores", 4, 8, 1 << 20, 3, 3, 128},
		{"SMT, GOMAXPROCS=1", 4, 8, 512 << 10, 1, 1, 64},
		{"cores unknown", 0, 0, 0, 6, 6, 256},
		{"cpuid's -1 for unknown", -1, -1, -1, 4, 4, 256},
		{"a small L2", 4, 4, 256 << 10, 4, 4, 64},
		{"a large shared L2", 10, 10, 16 << 20, 10, 10, 1024},
	} {
		got := tuningFor("test CPU", c.cores, c.logical, 48<<10, c.l2, 32<<20, c.procs)
		if got.Threads != c.wantThreads || got.GemmBlock != c.wantBlockKiB<<10 {
			t.Errorf("%s: threads %d, gemm block %d KiB; want %d and %d KiB", c.what, got.Threads, got.GemmBlock>>10, c.wantThreads, c.wantBlockKiB)
		}
		if got.Cores < 0 || got.Logical < 0 || got.L2 < 0 {
			t.Errorf("%s: negative sizes kept: %+v", c.what, got)
		}
	}
}

// TestDetectTuning checks that this machine's tuning is usable and that
// doctor's line names it.
func TestDetectTuning(t *testing.T) {
	tu := DetectTuning()
	if tu.Threads < 1 || tu.GemmBlock < minGemmBlock || tu.GemmBlock > maxGemmBlock {
		t.Fatalf("tuning out of bounds: %+v", tu)
	}
	if s := tu.String(); !strings.Contains(s, "workers by default") || !strings.Contains(s, "gemm block") {
		t.Errorf("String() = %q", s)
	}
	t.Logf("%s", tu)
}
