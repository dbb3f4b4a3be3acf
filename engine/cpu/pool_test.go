package cpu

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// countJob counts how often each item is run and checks the workers'
// numbers.
type countJob struct {
	t       *testing.T
	workers int
	hits    []atomic.Int32
}

func (j *countJob) run(lo, hi, worker int) {
	if worker < 0 || worker >= j.workers {
		j.t.Errorf("worker %d of %d", worker, j.workers)
	}
	for i := lo; i < hi; i++ {
		j.hits[i].Add(1)
	}
}

// TestPool runs many jobs back to back, and some after the workers have
// gone to sleep, and checks that every item of every job runs exactly
// once and that close stops the workers.
func TestPool(t *testing.T) {
	base := runtime.NumGoroutine()
	saved := poolSpin
	poolSpin = 20 * time.Microsecond // the workers go to sleep soon
	defer func() { poolSpin = saved }()
	for _, workers := range []int{1, 2, 3, 8} {
		p := newPool(workers)
		for i := range 3000 {
			n, grain := 1+i%97, 1+i%5
			j := &countJob{t: t, workers: workers, hits: make([]atomic.Int32, n)}
			p.parallel(j, n, grain)
			for k := range j.hits {
				if h := j.hits[k].Load(); h != 1 {
					t.Fatalf("%d workers, job %d (n %d, grain %d): item %d ran %d times", workers, i, n, grain, k, h)
				}
			}
			if i%500 == 0 {
				time.Sleep(time.Millisecond) // the workers sleep
			}
		}
		p.close()
	}
	// The workers exit.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after close, %d before", runtime.NumGoroutine(), base)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPoolTrials drives the comparison of worker counts with made-up
// decode step times: a count a tenth faster is kept, one that is not is
// left, and the jobs stay whole on whatever count runs.
func TestPoolTrials(t *testing.T) {
	p := newPool(2)
	defer p.close()
	job := func() {
		j := &countJob{t: t, workers: 2, hits: make([]atomic.Int32, 1000)}
		p.parallel(j, 1000, 1)
		for k := range j.hits {
			if h := j.hits[k].Load(); h != 1 {
				t.Fatalf("%d workers: item %d ran %d times", p.active, k, h)
			}
		}
	}
	// steps runs n decode steps, each taking one time or the other by the
	// worker count it runs on.
	steps := func(n int, two, one time.Duration) {
		for range n {
			job()
			d := two
			if p.active == 1 {
				d = one
			}
			p.stepTook(d)
		}
	}
	for _, ph := range []struct {
		what string
		one  time.Duration // a step on one worker; two take 30 ms
		want int
	}{
		{"without load, after a trial of one", 55 * time.Millisecond, 2},
		{"under load (a busy core: one worker is faster), after a trial of one", 20 * time.Millisecond, 1},
		{"still under load, after a trial of two", 20 * time.Millisecond, 1},
		{"load gone, after a trial of two", 55 * time.Millisecond, 2},
		{"a trial 3 % faster", 29 * time.Millisecond, 2},
	} {
		steps(probeSteps+trialSteps, 30*time.Millisecond, ph.one)
		if p.active != ph.want {
			t.Fatalf("%s: %d workers, want %d", ph.what, p.active, ph.want)
		}
	}
}
