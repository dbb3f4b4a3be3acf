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
//
// A worker whose core another process also wants gets a share of that
// core, and a decode step, which every worker's pieces must finish, runs
// at the pace the OS gives it: with a busy loop on one of two cores, two
// workers decoded the 1B q4 model at 13.5 tok/s where one decodes at 16.
// Waiting did not tell the two cases apart (the caller's wait for the
// others was 1–6 % of the jobs' time without the load and 6–25 % with
// it), so the pool compares speeds: every probeSteps decode steps it
// runs trialSteps of them with one worker fewer (or, when it runs with
// fewer, one more) and keeps the count whose steps were faster by a
// tenth. Workers left out sleep rather than poll.
type pool struct {
	workers int
	spin    time.Duration // how long an idle worker polls before it sleeps

	// gen is the current job's number (bumped to start one) << 16 | the
	// number of workers that take part in it.
	gen  atomic.Uint64
	crew []poolWorker

	active int    // workers in the next job, 1 to workers
	seq    uint64 // the last job's number
	trial  trial  // the comparison of worker counts (stepTook)

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
	p.active = p.workers
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

// The comparison of worker counts (pool): every probeSteps decode steps
// (ten to twenty seconds of a 1B model's decode), trialSteps steps with
// the other count, kept when faster than the last trialSteps with the
// current one by more than a tenth. A trial of one worker instead of two
// costs about 1 % of the decode speed where there is no load.
const (
	probeSteps = 256
	trialSteps = 3
)

// trial is the state of the comparison.
type trial struct {
	steps  int                       // decode steps since the last trial
	on     int                       // the running trial's steps so far; 0: none
	from   int                       // the worker count the trial is against
	up     bool                      // the next trial from a reduced count adds a worker
	recent [trialSteps]time.Duration // the last steps at the current count
	sum    time.Duration             // the running trial's steps' time
}

// stepTook tells the pool that a decode step (one token through the
// model) took d; it starts and settles the trials of other worker counts.
func (p *pool) stepTook(d time.Duration) {
	if p.workers == 1 {
		return
	}
	t := &p.trial
	if t.on > 0 {
		t.sum += d
		if t.on < trialSteps {
			t.on++
			return
		}
		var base time.Duration
		for _, r := range t.recent {
			base += r
		}
		if 10*t.sum >= 9*base {
			p.active = t.from // not a tenth faster: back
		}
		t.on, t.sum, t.steps = 0, 0, 0
		return
	}
	t.recent[t.steps%trialSteps] = d
	if t.steps++; t.steps < probeSteps {
		return
	}
	// All workers try one fewer; fewer try one more, and where they can,
	// one fewer in turn.
	t.from = p.active
	next := p.active - 1
	if p.active < p.workers && (t.up || next < 1) {
		next = p.active + 1
	}
	t.up = !t.up
	p.active, t.on = next, 1
}

// takesPart says whether worker w works on job g.
func takesPart(g uint64, w int) bool { return w < int(g&0xffff) }

// parallel runs j over [0, n) in pieces that are multiples of grain items
// (except the last). Small jobs run inline.
func (p *pool) parallel(j job, n, grain int) {
	active := p.active
	size := (n + active*piecesPerWorker - 1) / (active * piecesPerWorker)
	size = (size + grain - 1) / grain * grain
	if active == 1 || size >= n {
		j.run(0, n, 0)
		return
	}
	p.j, p.n, p.size = j, n, size
	p.next.Store(0)
	p.seq++
	g := p.seq<<16 | uint64(active)
	p.gen.Store(g)
	p.rouse(active)
	p.work(0)
	// Every worker finishes this job before the next one is set up, so a
	// worker never sees a half-written job.
	for w := 1; w < active; w++ {
		for i := 0; p.crew[w].done.Load() != g; i++ {
			if i > 1000 {
				runtime.Gosched() // the worker's thread is not running
			}
		}
	}
	p.j = nil
}

// rouse wakes those of the first n workers that sleep.
func (p *pool) rouse(n int) {
	for w := 1; w < n; w++ {
		if pw := &p.crew[w]; pw.sleeping.CompareAndSwap(true, false) {
			pw.wake <- struct{}{}
		}
	}
}

// loop is worker w: it waits for each job and works on those it takes
// part in.
func (p *pool) loop(w int) {
	pw := &p.crew[w]
	var seen uint64
	for {
		g := p.await(pw, w, seen)
		if p.closed.Load() {
			return
		}
		if takesPart(g, w) {
			p.work(w)
		}
		pw.done.Store(g)
		seen = g
	}
}

// await returns the latest job after seen: polling for up to p.spin
// while worker w takes part in the jobs, then asleep until parallel or
// close wakes it. A wake-up can come late, for a job the worker already
// did (rouse reached it after it had polled, worked and gone back to
// sleep), and a job can be one the worker sits out; the worker then
// waits again.
func (p *pool) await(pw *poolWorker, w int, seen uint64) uint64 {
	for {
		if takesPart(p.gen.Load(), w) {
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
		}
		pw.sleeping.Store(true)
		if g := p.gen.Load(); g != seen && (takesPart(g, w) || p.closed.Load()) && pw.sleeping.CompareAndSwap(true, false) {
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
	p.seq++
	p.gen.Store(p.seq<<16 | uint64(p.workers))
	p.rouse(p.workers)
}
