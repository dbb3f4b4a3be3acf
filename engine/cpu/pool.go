package cpu

import (
	"runtime"
	"sync/atomic"
	"time"
)

// job is work over a range of items; worker identifies the caller's
// scratch space. Jobs are pointers to structs kept in the backend, so
// handing one to the pool allocates nothing.
type job interface {
	run(lo, hi, worker int)
}

// pool runs jobs on a fixed set of goroutines. A job's range is cut into
// pieces of a few grains that the calling goroutine and the workers take
// in turn, so that a worker the OS is slow to run (other processes, a
// busy core) delays the job by one piece, not by a whole share.
//
// Between jobs a worker spins on the job counter for a while before it
// sleeps: a decode step hands the workers about eighty jobs a few
// microseconds apart, and waking a sleeping goroutine took 79 µs a job
// on average here (a channel send, the scheduler, a futex), a sixth of
// the worker's time (1B q4, two threads). llama.cpp's thread pool spins
// for the same reason.
type pool struct {
	workers int
	spin    time.Duration // how long an idle worker polls before it sleeps

	gen  atomic.Uint64 // the current job's number; bumped to start one
	crew []poolWorker

	j       job
	n, size int
	next    atomic.Int64 // start of the next piece
	closed  atomic.Bool
}

// poolWorker is one worker's state, a cache line of its own so that the
// workers' stores do not contend.
type poolWorker struct {
	done     atomic.Uint64 // the last job number this worker finished
	sleeping atomic.Bool   // it waits on wake rather than polling
	wake     chan struct{}
	_        [40]byte
}

// poolSpin is how long an idle worker polls for the next job: longer
// than the gaps between a decode step's jobs and between the steps of a
// reply (sampling, a controller), short enough that an idle chat sleeps
// at once for a person's eye.
var poolSpin = 2 * time.Millisecond

func newPool(workers int) *pool {
	p := &pool{workers: max(workers, 1), spin: poolSpin}
	if p.workers > runtime.GOMAXPROCS(0) {
		// More goroutines than the Go scheduler runs at once: a polling
		// worker would take the place of one with work.
		p.spin = 0
	}
	p.crew = make([]poolWorker, p.workers)
	for w := 1; w < p.workers; w++ {
		p.crew[w].wake = make(chan struct{}, 1)
		go p.loop(w)
	}
	return p
}

// piecesPerWorker is how many pieces each worker's share is cut into.
const piecesPerWorker = 16

// parallel runs j over [0, n) in pieces that are multiples of grain items
// (except the last). Small jobs run inline.
func (p *pool) parallel(j job, n, grain int) {
	size := (n + p.workers*piecesPerWorker - 1) / (p.workers * piecesPerWorker)
	size = (size + grain - 1) / grain * grain
	if p.workers == 1 || size >= n {
		j.run(0, n, 0)
		return
	}
	p.j, p.n, p.size = j, n, size
	p.next.Store(0)
	g := p.gen.Add(1)
	p.rouse()
	p.work(0)
	// Every worker finishes this job before the next one is set up, so a
	// worker never sees a half-written job.
	for w := 1; w < p.workers; w++ {
		for i := 0; p.crew[w].done.Load() != g; i++ {
			if i > 1000 {
				runtime.Gosched() // the worker's thread is not running
			}
		}
	}
	p.j = nil
}

// rouse wakes the workers that sleep.
func (p *pool) rouse() {
	for w := 1; w < p.workers; w++ {
		if pw := &p.crew[w]; pw.sleeping.CompareAndSwap(true, false) {
			pw.wake <- struct{}{}
		}
	}
}

// loop is worker w: it waits for each job and works on it.
func (p *pool) loop(w int) {
	pw := &p.crew[w]
	var seen uint64
	for {
		g := p.await(pw, seen)
		if p.closed.Load() {
			return
		}
		p.work(w)
		pw.done.Store(g)
		seen = g
	}
}

// await returns the number of the next job after seen: polling for up
// to p.spin, then asleep until parallel or close wakes the worker. A
// wake-up can come late, for a job the worker already did (rouse reached
// it after it had polled, worked and gone back to sleep); the worker then
// waits again.
func (p *pool) await(pw *poolWorker, seen uint64) uint64 {
	for {
		start := time.Now()
		for i := 1; ; i++ {
			if g := p.gen.Load(); g != seen {
				return g
			}
			if i%256 == 0 {
				if time.Since(start) >= p.spin {
					break
				}
				// Let a goroutine that waits for a processor (the
				// terminal's renderer, a controller) have this one.
				runtime.Gosched()
			}
		}
		pw.sleeping.Store(true)
		if g := p.gen.Load(); g != seen && pw.sleeping.CompareAndSwap(true, false) {
			return g // a job came before rouse saw the worker asleep
		}
		// Asleep, or rouse took the flag and sends the wake-up: wait for it.
		<-pw.wake
		if g := p.gen.Load(); g != seen {
			return g
		}
	}
}

// work runs pieces of the current job until none are left.
func (p *pool) work(worker int) {
	for {
		lo := int(p.next.Add(int64(p.size))) - p.size
		if lo >= p.n {
			return
		}
		p.j.run(lo, min(lo+p.size, p.n), worker)
	}
}

// close stops the workers.
func (p *pool) close() {
	p.closed.Store(true)
	p.gen.Add(1)
	p.rouse()
}
