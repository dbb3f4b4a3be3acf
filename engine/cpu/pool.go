package cpu

import (
	"sync"
	"sync/atomic"
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
type pool struct {
	workers int
	wake    chan int // a worker's number, to start it on the current job
	wg      sync.WaitGroup

	j       job
	n, size int
	next    atomic.Int64 // start of the next piece
}

func newPool(workers int) *pool {
	p := &pool{workers: max(workers, 1), wake: make(chan int, workers)}
	for i := 1; i < p.workers; i++ {
		go func() {
			for w := range p.wake {
				p.work(w)
				p.wg.Done()
			}
		}()
	}
	return p
}

// piecesPerWorker is how many pieces each worker's share is cut into.
const piecesPerWorker = 4

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
	for w := 1; w < p.workers; w++ {
		p.wg.Add(1)
		p.wake <- w
	}
	p.work(0)
	p.wg.Wait()
	p.j = nil
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
func (p *pool) close() { close(p.wake) }
