package cpu

import (
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

// amxSet returns the amx kernel set, or skips the test where this CPU or
// OS does not run it.
func amxSet(t *testing.T) kernelSet {
	t.Helper()
	for _, ks := range kernelSets {
		if ks.name == amxKernels.name {
			return ks
		}
	}
	if cpu.X86.HasAMXInt8 {
		t.Skip("skipped: the CPU has AMX-INT8 but the OS did not grant the tile state (arch_prctl)")
	}
	t.Skip("skipped: no AMX-INT8 on this CPU")
	return kernelSet{}
}

// TestAMXDefault checks that the amx set, where it runs, is the last of
// kernelSets: the default.
func TestAMXDefault(t *testing.T) {
	amxSet(t)
	if last := kernelSets[len(kernelSets)-1].name; last != "amx" {
		t.Fatalf("default set %s, want amx", last)
	}
}

// TestAMXPanel checks amxPanel's layout: for each chunk, each row's 32
// codes in the panel's column order.
func TestAMXPanel(t *testing.T) {
	amxSet(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, cols := range []int{32, 96, 1152} {
		p := newI8Panel(cols)
		for i := range p.w {
			p.w[i] = uint8(rng.Uint32())
		}
		amxPanel(&p.a[0], &p.w[0], cols/int8Block)
		for k := range cols {
			for r := range 16 {
				want := p.w[(k/4*16+r)*4+k%4]
				if got := p.a[k/32*512+r*32+k%32]; got != want {
					t.Fatalf("%d columns: row %d column %d = %d, want %d", cols, r, k, got, want)
				}
			}
		}
	}
}

// TestAMXGemmConcurrent runs the tile kernel from many goroutines at once,
// more than there are threads, so that they share threads, move between
// them and take signals mid-kernel (the runtime's preemption signal,
// SIGURG, sent to the process all along as well), each against
// avx512vnni's batch kernel: the same float operations in the same order,
// so the results must be bit for bit the same, with real scales, steps and
// sums. A tile configuration or tile data that leaked from one call or
// thread to another would show as a wrong sum.
func TestAMXGemmConcurrent(t *testing.T) {
	amx := amxSet(t)
	vnni, err := chooseKernels("avx512vnni")
	if err != nil {
		t.Fatalf("amx without avx512vnni: %v", err)
	}
	calls := 400
	if testing.Short() {
		calls = 50
	}
	var stop atomic.Bool
	signals := make(chan int)
	go func() {
		n := 0
		for !stop.Load() {
			unix.Kill(os.Getpid(), unix.SIGURG)
			n++
			runtime.Gosched()
		}
		signals <- n
	}()
	var wg sync.WaitGroup
	for g := range 4 * max(runtime.GOMAXPROCS(0), 2) {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 23))
			for i := range calls {
				bits := 4 << (i % 2)
				cols := 32 * (1 + rng.IntN(40))
				np := 16 * (1 + rng.IntN(3))
				nt := np - 8*rng.IntN(2)
				chunks := cols / int8Block
				p := newI8Panel(cols)
				for j := range p.w {
					p.w[j] = uint8(rng.IntN(1 << bits))
				}
				for j := range p.s {
					p.s[j], p.b[j] = rng.Float32()-0.5, rng.Float32()-0.5
				}
				xq := make([]int8, cols*np)
				for j := range xq {
					xq[j] = int8(rng.IntN(255) - 127)
				}
				dx, xs := make([]float32, chunks*np), make([]float32, chunks*np)
				for j := range dx {
					dx[j], xs[j] = rng.Float32()/64, rng.Float32()*8-4
				}
				got, want := make([]float32, 16*nt), make([]float32, 16*nt)
				amx.gemmI8[bits/8](got, &p, xq, dx, xs, nil, np, nt)
				vnni.gemmI8[bits/8](want, &p, xq, dx, xs, nil, np, nt)
				for j := range got {
					if got[j] != want[j] {
						t.Errorf("goroutine %d call %d, q%d %d columns, %d of %d inputs: input %d row %d = %g, avx512vnni %g",
							g, i, bits, cols, nt, np, j/16, j%16, got[j], want[j])
						return
					}
				}
				if i%16 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	t.Logf("%d SIGURG sent", <-signals)
}
