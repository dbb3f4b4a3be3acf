package cpu

import "sync"

// job is work split over a range of items; worker identifies the caller's
// scratch space. Jobs are pointers to structs kept in the backend, so
// handing one to the pool allocates nothing.
type job interface {
	run(lo, hi, worker int)
}

type task struct {
	j              job
	lo, hi, worker int
}

// pool runs jobs on a fixed set of goroutines. The calling goroutine takes
// the first share itself.
type pool struct {
	workers int
	tasks   chan task
	wg      sync.WaitGroup
}

func newPool(workers int) *pool {
	p := &pool{workers: max(workers, 1), tasks: make(chan task, workers)}
	for i := 1; i < p.workers; i++ {
		go func() {
			for t := range p.tasks {
				t.j.run(t.lo, t.hi, t.worker)
				p.wg.Done()
			}
		}()
	}
	return p
}

// parallel runs j over [0, n) split into one share per worker, each share
// a multiple of align items (except the last). Small jobs run inline.
func (p *pool) parallel(j job, n, align int) {
	per := (n + p.workers - 1) / p.workers
	per = (per + align - 1) / align * align
	if p.workers == 1 || per >= n {
		j.run(0, n, 0)
		return
	}
	w := 1
	for lo := per; lo < n; lo += per {
		p.wg.Add(1)
		p.tasks <- task{j, lo, min(lo+per, n), w}
		w++
	}
	j.run(0, per, 0)
	p.wg.Wait()
}

// close stops the workers.
func (p *pool) close() { close(p.tasks) }
