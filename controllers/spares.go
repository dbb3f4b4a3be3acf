package controllers

import (
	"slices"
	"sync"
)

// maxSpares bounds the spare instances kept (13-23 MB of linear memory
// each for the shipped controllers): the modules used last.
const maxSpares = 3

// spareKey names what a spare instance was prepared for.
type spareKey struct {
	mod   *Module
	vocab *vocabulary
}

// sparePool holds instances prepared in the background (instantiated,
// initialised, the vocabulary loaded: everything but the controller's
// argument), so that a switch to their module costs only dw_init and
// the first step: at most one per module and vocabulary, maxSpares in
// all. Safe for concurrent use.
type sparePool struct {
	prepare  func(*Module, *vocabulary) (*instance, error)
	mu       sync.Mutex
	ready    map[spareKey]*instance
	order    []spareKey                 // ready spares from oldest to newest
	pending  map[spareKey]chan struct{} // spares being prepared; closed when done
	replaced map[*Module]bool           // modules a newer build replaced: no spares
	closed   bool
	work     sync.WaitGroup // preparations in flight
}

// newSparePool returns an empty pool whose spares prepare makes.
func newSparePool(prepare func(*Module, *vocabulary) (*instance, error)) *sparePool {
	return &sparePool{prepare: prepare, ready: map[spareKey]*instance{}, pending: map[spareKey]chan struct{}{}, replaced: map[*Module]bool{}}
}

// prewarm prepares, in the background, a spare instance of mod for
// vocab, unless one is ready or on its way.
func (p *sparePool) prewarm(mod *Module, vocab *vocabulary) {
	key := spareKey{mod, vocab}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.replaced[mod] || p.ready[key] != nil || p.pending[key] != nil {
		return
	}
	done := make(chan struct{})
	p.pending[key] = done
	p.work.Add(1)
	go func() {
		defer p.work.Done()
		in, err := p.prepare(mod, vocab)
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.pending, key)
		close(done)
		if err == nil && p.ready[key] == nil && !p.replaced[mod] {
			p.ready[key] = in
			p.order = append(p.order, key)
			p.evict()
		} else if err == nil {
			in.close()
		}
		// A failed spare is dropped: newInstance prepares again in the
		// foreground and reports the error.
	}()
}

// take returns the spare of mod for vocab, waiting for one on its way,
// and removes it from the pool; nil when there is none.
func (p *sparePool) take(mod *Module, vocab *vocabulary) *instance {
	key := spareKey{mod, vocab}
	p.mu.Lock()
	done := p.pending[key]
	p.mu.Unlock()
	if done != nil {
		<-done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in := p.ready[key]
	p.remove(key)
	return in
}

// forget drops the spare of a module that a newer build replaced, and
// keeps it from getting another.
func (p *sparePool) forget(mod *Module) {
	p.mu.Lock()
	p.replaced[mod] = true
	p.mu.Unlock()
	p.drop(mod)
}

// drop closes the ready spares of mod.
func (p *sparePool) drop(mod *Module) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, in := range p.ready {
		if k.mod == mod {
			in.close()
			p.remove(k)
		}
	}
}

// close waits for the preparations in flight and closes every spare; the
// pool prepares none afterwards.
func (p *sparePool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.work.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, in := range p.ready {
		in.close()
		p.remove(k)
	}
}

// evict closes the oldest spares beyond maxSpares. p.mu is held.
func (p *sparePool) evict() {
	for len(p.order) > maxSpares {
		k := p.order[0]
		p.ready[k].close()
		p.remove(k)
	}
}

// remove forgets the spare of k, if any (without closing it). p.mu is
// held.
func (p *sparePool) remove(k spareKey) {
	delete(p.ready, k)
	p.order = slices.DeleteFunc(p.order, func(o spareKey) bool { return o == k })
}
