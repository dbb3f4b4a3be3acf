package cpu

import (
	"math"

	"github.com/driftwoodlabs/driftwood/engine"
)

// state is the forward pass's scratch, allocated once (llama2.c's RunState).
type state struct {
	maxBatch int
	x        []float32 // (batch, hidden) residual stream
	xb, xb2  []float32 // (batch, hidden) normed input, projection output
	q        []float32 // (batch, heads*head_dim)
	k, v     []float32 // (batch, kv_heads*head_dim)
	att      []float32 // (batch, heads*head_dim) attention output
	hb, hb2  []float32 // (batch, intermediate)
	cos, sin []float32 // (batch, head_dim/2)
	perm     []float32 // (head_dim) one head reordered (Config.PermutedQK)
	ins      [3]input  // a matmul's input, one per distinct layout
	inBufs   [3]inputBuf
	scr      []*scratch // per worker
	attnPer  int        // query heads per attention item (attnPer)
	// A decode step's attention split by positions (attnJob.split): per
	// head and slice, at most 2 per worker.
	part, partMax, partSum []float32
}

func newState(c *engine.Config, batch, workers int) state {
	q, kv := c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim
	widest := max(c.HiddenSize, c.IntermediateSize, q)
	st := state{
		maxBatch: batch,
		x:        make([]float32, batch*c.HiddenSize),
		xb:       make([]float32, batch*c.HiddenSize),
		xb2:      make([]float32, batch*c.HiddenSize),
		q:        make([]float32, batch*q),
		k:        make([]float32, batch*kv),
		v:        make([]float32, batch*kv),
		att:      make([]float32, batch*q),
		hb:       make([]float32, batch*c.IntermediateSize),
		hb2:      make([]float32, batch*c.IntermediateSize),
		cos:      make([]float32, batch*c.HeadDim/2),
		sin:      make([]float32, batch*c.HeadDim/2),
		perm:     make([]float32, c.HeadDim),
		scr:      make([]*scratch, workers),
		attnPer:  attnPer(c.NumAttentionHeads/c.NumKeyValueHeads, c.NumKeyValueHeads, workers),
		part:     make([]float32, c.NumAttentionHeads*2*workers*c.HeadDim),
		partMax:  make([]float32, c.NumAttentionHeads*2*workers),
		partSum:  make([]float32, c.NumAttentionHeads*2*workers),
	}
	for i := range st.inBufs {
		st.inBufs[i] = newInputBuf(widest, batch)
	}
	for i := range st.scr {
		st.scr[i] = newScratch(widest, batch)
		vecs := st.attnPer * attnTokens(st.attnPer)
		st.scr[i].q = make([]float32, vecs*c.HeadDim)
		st.scr[i].o = make([]float32, vecs*c.HeadDim)
		st.scr[i].top = make([]float32, vecs)
		st.scr[i].sum = make([]float32, vecs)
	}
	return st
}

// part is one matrix of a matmul job and where its output goes.
type part struct {
	m   matrix
	out []float32
}

// matmulJob computes out = x·Wᵀ for up to three matrices that share an
// input (q, k and v; gate and up), split by rows over their concatenation.
type matmulJob struct {
	ks    *kernelSet
	parts [3]part
	ins   [3]*input
	np    int
	scr   []*scratch
}

func (j *matmulJob) run(lo, hi, worker int) {
	s := j.scr[worker]
	for i, p := range j.parts[:j.np] {
		rows, _ := p.m.dims()
		if a, b := max(lo, 0), min(hi, rows); a < b {
			if in := j.ins[i]; in.n == 1 {
				p.m.gemv(p.out, in, a, b, s)
			} else {
				gemm(j.ks, p.m, p.out, in, a, b, s)
			}
		}
		lo, hi = lo-rows, hi-rows
	}
}

// matmul sets each part's out = x·Wᵀ for n inputs x of cols floats.
func (b *Backend) matmul(x []float32, n int, parts ...part) {
	st := &b.st
	b.mm = matmulJob{ks: b.ks, np: len(parts), scr: st.scr}
	total := 0
	for i, p := range parts {
		rows, cols := p.m.dims()
		total += rows
		b.mm.parts[i] = p
		lay := p.m.layout()
		k := 0
		for k < i && parts[k].m.layout() != lay {
			k++
		}
		if k == i {
			st.ins[i].prepare(b.ks, &st.inBufs[i], x, n, cols, lay)
		}
		b.mm.ins[i] = &st.ins[k]
	}
	// Pieces of 16 rows: whole cache lines of output, so that workers
	// never write the same line, and whole blocks for gemm.
	b.pool.parallel(&b.mm, total, 16)
}

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

// forward runs one batch (at most maxBatch tokens) through the model and
// writes the logits of every token (len(out) = n·vocab), of the last token
// (len(out) = vocab), or none (out nil).
func (b *Backend) forward(c *cache, tokens []int32, out []float32) {
	cfg, st := b.cfg, &b.st
	n, p0 := len(tokens), c.n
	hidden := cfg.HiddenSize
	eps := float32(cfg.RMSNormEps)

	c.reserve(p0 + n)
	for _, s := range st.scr {
		if vecs := st.attnPer * attnTokens(st.attnPer); len(s.scores) < vecs*c.capacity() {
			s.scores = make([]float32, vecs*c.capacity())
		}
	}
	// x = embed(tokens)
	for i, t := range tokens {
		b.embed.row(st.x[i*hidden:(i+1)*hidden], int(t))
	}
	b.rope.angles(st.cos, st.sin, p0, n)
	// Each block, as mlx-lm's: h = x + attention(norm(x)); x = h + mlp(norm(h)).
	for l := range b.layers {
		L := &b.layers[l]
		b.norm(st.xb, st.x, L.inputLayernorm, n)
		b.attention(c, l, L, n, p0)  // st.xb → st.xb2
		add(st.x[:n*hidden], st.xb2) // residual
		b.norm(st.xb, st.x, L.postAttentionLayernorm, n)
		b.mlp(L, n)                  // st.xb → st.xb2
		add(st.x[:n*hidden], st.xb2) // residual
	}
	c.n = p0 + n
	if out == nil {
		return
	}
	// logits = lm_head(norm(x)), of the last token only when out holds one
	// row.
	first := 0
	if len(out) == cfg.VocabSize {
		first = n - 1
	}
	for i := first; i < n; i++ {
		rmsnorm(st.xb[(i-first)*hidden:(i-first+1)*hidden], st.x[i*hidden:(i+1)*hidden], b.finalNorm, eps)
	}
	b.matmul(st.xb, n-first, part{b.lmHead, out})
}

// norm sets dst = rmsnorm(x)·w for each of n rows of hidden floats.
func (b *Backend) norm(dst, x, w []float32, n int) {
	hidden, eps := b.cfg.HiddenSize, float32(b.cfg.RMSNormEps)
	for i := 0; i < n; i++ {
		rmsnorm(dst[i*hidden:(i+1)*hidden], x[i*hidden:(i+1)*hidden], w, eps)
	}
}

// attention is a block's self-attention of n tokens from position p0 over
// its input in st.xb, written to st.xb2: qkv projections, RoPE, the new
// keys and values into the cache, grouped-query attention over every
// cached position, the output projection.
func (b *Backend) attention(c *cache, l int, L *layer, n, p0 int) {
	cfg, st := b.cfg, &b.st
	hd := cfg.HeadDim
	qDim, kvDim, half := cfg.NumAttentionHeads*hd, cfg.NumKeyValueHeads*hd, hd/2
	eps := float32(cfg.RMSNormEps)
	// qkv
	b.matmul(st.xb, n, part{L.qProj, st.q}, part{L.kProj, st.k}, part{L.vProj, st.v})
	for i := 0; i < n; i++ {
		q, k := st.q[i*qDim:(i+1)*qDim], st.k[i*kvDim:(i+1)*kvDim]
		if b.fam.permutedQK { // heads back in Hugging Face's order
			unpermuteHeads(q, hd, st.perm)
			unpermuteHeads(k, hd, st.perm)
		}
		if b.fam.qkvBias {
			add(q, L.qBias)
			add(k, L.kBias)
			add(st.v[i*kvDim:(i+1)*kvDim], L.vBias)
		}
		if b.fam.qkNorm {
			headNorm(q, L.qNorm, eps)
			headNorm(k, L.kNorm, eps)
		}
		// RoPE
		cos, sin := st.cos[i*half:(i+1)*half], st.sin[i*half:(i+1)*half]
		rope(q, hd, cos, sin)
		rope(k, hd, cos, sin)
	}
	// the cache
	c.store(l, p0, n, st.k, st.v)
	// softmax(q·kᵀ/√d)·v per head
	b.att = attnJob{ks: b.ks, c: c, layer: l, p0: p0, n: n, heads: cfg.NumAttentionHeads,
		group: cfg.NumAttentionHeads / cfg.NumKeyValueHeads, per: st.attnPer, tpi: attnTokens(st.attnPer), hd: hd,
		q: st.q, out: st.att, scr: st.scr, part: st.part, partMax: st.partMax, partSum: st.partSum}
	b.att.split(p0+1, len(st.scr))
	b.pool.parallel(&b.att, b.att.items(), 1)
	if b.att.slices > 1 {
		b.att.merge()
	}
	// output projection
	b.matmul(st.att, n, part{L.oProj, st.xb2})
}

// mlp is a block's SwiGLU feed-forward of n rows of st.xb into st.xb2:
// down(silu(gate(x))·up(x)).
func (b *Backend) mlp(L *layer, n int) {
	st := &b.st
	b.matmul(st.xb, n, part{L.gateProj, st.hb}, part{L.upProj, st.hb2})
	b.ks.swiglu(st.hb[:n*b.cfg.IntermediateSize], st.hb2)
	b.matmul(st.hb, n, part{L.downProj, st.xb2})
}
