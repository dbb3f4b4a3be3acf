package cpu

import "math"

// attnJob is causal grouped-query attention for a batch of n tokens,
// split into items of tpi consecutive tokens and per query heads of one
// kv head: up to per·tpi query vectors. A single token deep in a context
// is split further (slices > 1): each item takes a slice of the
// positions, and merge combines the slices' partial results, as
// flash-decoding does.
type attnJob struct {
	ks     *kernelSet
	c      *cache
	layer  int
	p0, n  int // position of the batch's first token, the batch's tokens
	heads  int
	group  int // query heads per kv head
	per    int // query heads of a group per item: group, or a divisor of it
	tpi    int // tokens per item
	hd     int
	q, out []float32
	scr    []*scratch
	// slices > 1 splits a single token's positions into that many
	// slices of sliceLen; part holds each (head, slice)'s unnormalised
	// output, partMax and partSum its largest score and sum of weights.
	slices, sliceLen int
	part             []float32
	partMax, partSum []float32
}

// items is how many pieces of work the batch's attention is.
func (j *attnJob) items() int {
	return (j.n + j.tpi - 1) / j.tpi * (j.heads / j.per) * max(j.slices, 1)
}

// split sets how many slices a single token's attention over seen
// positions takes on workers: enough for two items a worker, each slice
// at least minSlice positions (a shorter one costs more to merge and to
// hand out than it saves).
func (j *attnJob) split(seen, workers int) {
	const minSlice = 512
	j.slices, j.sliceLen = 1, seen
	if j.n != 1 {
		return
	}
	groups := j.heads / j.per
	want := (2*workers + groups - 1) / groups
	if k := min(want, seen/minSlice, len(j.partMax)/j.heads); k > 1 {
		j.slices, j.sliceLen = k, (seen+k-1)/k
	}
}

// run computes the items [lo, hi). An item's query vectors (token t,
// head h as vector t·per + h) share a kv head, and four at a time share
// each read of its keys and values where the kernel set can (dot4,
// axpy4): each row of the cache is widened once for the four while it is
// in cache, rather than once per vector (a group of 4 on Llama 3.2 1B
// read 4× the KV bytes at every decode step, deep in a chat the largest
// read after the weights; four tokens of SmolLM2's prefill, whose group
// of 3 is split over the workers, read it 4×).
func (j *attnJob) run(lo, hi, worker int) {
	s := j.scr[worker]
	hd, qDim := j.hd, j.heads*j.hd
	scale := float32(1 / math.Sqrt(float64(hd)))
	slices := max(j.slices, 1)
	for i := lo; i < hi; i++ {
		// Items go head-major: a worker's next item is mostly the same
		// kv head's next tokens, whose keys and values (1 MB a head at
		// 4,096 positions of f16, on the 1B shape) are still in its L2.
		item, slice := i/slices, i%slices
		tokenGroups := (j.n + j.tpi - 1) / j.tpi
		b0, h0 := item%tokenGroups*j.tpi, item/tokenGroups*j.per
		nv := min(j.tpi, j.n-b0) * j.per
		q := s.q[:nv*hd]
		for v := range nv {
			src := j.q[(b0+v/j.per)*qDim+(h0+v%j.per)*hd:][:hd]
			for d, x := range src {
				q[v*hd+d] = x * scale
			}
		}
		// seen is how many positions vector v sees.
		seen := func(v int) int { return j.p0 + b0 + v/j.per + 1 }
		from, to := 0, seen
		if slices > 1 {
			from = slice * j.sliceLen
			end := min(from+j.sliceLen, seen(0))
			to = func(int) int { return end }
		}
		m, l := s.top[:nv], s.sum[:nv]
		j.attend(s, h0/j.group, nv, from, to, m, l)
		for w := range nv {
			o := s.o[w*hd : (w+1)*hd]
			if slices > 1 {
				k := (h0+w)*slices + slice
				copy(j.part[k*hd:(k+1)*hd], o)
				j.partMax[k], j.partSum[k] = m[w], l[w]
				continue
			}
			dst := j.out[(b0+w/j.per)*qDim+(h0+w%j.per)*hd:][:hd]
			f := 1 / l[w]
			for d, x := range o {
				dst[d] = x * f
			}
		}
	}
}

// attend computes for the nv query vectors in s.q, of kv head g, their
// scores over positions [from, to(v)) (to non-decreasing in v): four
// vectors together over the positions they all see, then each over the
// rest of its own; then the weights exp(score − m[v]) with m[v] the
// largest score, l[v] their sum, and in s.o each vector's Σ weight·value,
// not yet divided by l[v].
func (j *attnJob) attend(s *scratch, g, nv, from int, to func(v int) int, m, l []float32) {
	hd := j.hd
	keys, vals, typ := &j.c.k[j.layer], &j.c.v[j.layer], j.c.typ
	four, ks := j.ks.has4(typ, hd), j.ks
	stride := len(s.scores) / (j.per * j.tpi)
	q, o := s.q[:nv*hd], s.o[:nv*hd]
	v := 0
	for ; four && v+4 <= nv; v += 4 {
		j.c.each(g, from, to(v), func(p, blk, off, n int) {
			j.c.prefetchNext(keys, blk, off, n)
			keys.dot4(ks, typ, s.scores[v*stride+p:], stride, blk, off, n, q[v*hd:(v+4)*hd])
		})
		for w := v + 1; w < v+4; w++ {
			j.c.each(g, to(v), to(w), func(p, blk, off, n int) {
				keys.dot(ks, typ, s.scores[w*stride+p:w*stride+p+n], blk, off, q[w*hd:(w+1)*hd])
			})
		}
	}
	for w := v; w < nv; w++ {
		j.c.each(g, from, to(w), func(p, blk, off, n int) {
			keys.dot(ks, typ, s.scores[w*stride+p:w*stride+p+n], blk, off, q[w*hd:(w+1)*hd])
		})
	}
	for w := range nv {
		x := s.scores[w*stride+from : w*stride+to(w)]
		m[w] = ks.maxF32(x)
		l[w] = ks.expSum(x, m[w])
	}
	clear(o)
	v = 0
	for ; four && v+4 <= nv; v += 4 {
		j.c.each(g, from, to(v), func(p, blk, off, n int) {
			j.c.prefetchNext(vals, blk, off, n)
			vals.axpy4(ks, typ, o[v*hd:(v+4)*hd], blk, off, n, s.scores[v*stride+p:], stride)
		})
		for w := v + 1; w < v+4; w++ {
			j.c.each(g, to(v), to(w), func(p, blk, off, n int) {
				vals.axpy(ks, typ, o[w*hd:(w+1)*hd], blk, off, s.scores[w*stride+p:w*stride+p+n])
			})
		}
	}
	for w := v; w < nv; w++ {
		j.c.each(g, from, to(w), func(p, blk, off, n int) {
			vals.axpy(ks, typ, o[w*hd:(w+1)*hd], blk, off, s.scores[w*stride+p:w*stride+p+n])
		})
	}
}

// merge combines a split token's slices into its output: per head,
// Σ_k e^(m_k−M)·o_k / Σ_k e^(m_k−M)·l_k with M the largest m_k.
func (j *attnJob) merge() {
	hd, k := j.hd, j.slices
	for h := range j.heads {
		ms, ls := j.partMax[h*k:(h+1)*k], j.partSum[h*k:(h+1)*k]
		top := ms[0]
		for _, x := range ms {
			top = max(top, x)
		}
		dst := j.out[h*hd : (h+1)*hd]
		clear(dst)
		var sum float32
		for i, x := range ms {
			f := float32(math.Exp(float64(x - top)))
			sum += f * ls[i]
			axpyGo(dst, f, j.part[(h*k+i)*hd:(h*k+i+1)*hd])
		}
		for d := range dst {
			dst[d] /= sum
		}
	}
}

// attnTokens is how many tokens of a batch an attention item takes for
// items of per query heads: enough that their vectors come in fours.
func attnTokens(per int) int {
	switch {
	case per%4 == 0:
		return 1
	case per%2 == 0:
		return 2
	}
	return 4
}

// attnPer is how many query heads of a group of group an attention item
// takes: the whole group, unless that leaves fewer than two items per
// worker for a token (few kv heads, as SmolLM2's 3 or a single one);
// then the largest divisor of group that gives them.
func attnPer(group, kvHeads, workers int) int {
	per := group
	for per > 1 && kvHeads*group/per < 2*workers {
		per--
		for group%per != 0 {
			per--
		}
	}
	return per
}
