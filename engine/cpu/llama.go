package cpu

import "github.com/driftwoodlabs/driftwood/engine"

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
	ins      [3]input  // a matmul's input, one per distinct layout
	inBufs   [3]inputBuf
	scr      []*scratch // per worker
	attnPer  int        // query heads per attention item (attnPer)
	// A decode step's attention split by positions (attnJob.split): per
	// head and slice, at most 2 per worker.
	part, partMax, partSum []float32
}

func newState(c *engine.Config, batch, workers int, residual bool) state {
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
		scr:      make([]*scratch, workers),
		attnPer:  attnPer(c.NumAttentionHeads/c.NumKeyValueHeads, c.NumKeyValueHeads, workers),
		part:     make([]float32, c.NumAttentionHeads*2*workers*c.HeadDim),
		partMax:  make([]float32, c.NumAttentionHeads*2*workers),
		partSum:  make([]float32, c.NumAttentionHeads*2*workers),
	}
	for i := range st.inBufs {
		st.inBufs[i] = newInputBuf(widest, batch)
		if residual {
			r := newInputBuf(widest, batch)
			st.inBufs[i].res, st.inBufs[i].rx = &r, make([]float32, widest*batch)
		}
	}
	for i := range st.scr {
		st.scr[i] = newScratch(widest, batch)
		if residual { // the second pass's rows of any matrix
			st.scr[i].res = make([]float32, max(widest, c.VocabSize))
		}
		vecs := st.attnPer * attnTokens(st.attnPer)
		st.scr[i].q = make([]float32, vecs*c.HeadDim)
		st.scr[i].o = make([]float32, vecs*c.HeadDim)
		st.scr[i].top = make([]float32, vecs)
		st.scr[i].sum = make([]float32, vecs)
		st.scr[i].head = make([]float32, c.HeadDim)
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
			if in := j.ins[i]; in.n == 1 && in.res != nil {
				gemvTwice(p, in, a, b, s)
			} else if in.n == 1 {
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
			st.ins[i].prepare(b.ks, &st.inBufs[i], x, n, cols, lay, b.pool, st.scr)
		}
		b.mm.ins[i] = &st.ins[k]
	}
	// Pieces of 16 rows: whole cache lines of output, so that workers
	// never write the same line, and whole blocks for gemm.
	b.pool.parallel(&b.mm, total, 16)
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
	// Each block, as mlx-lm's: h = x + attention(norm(x)); x = h + mlp(norm(h)),
	// each residual added together with the norm after it.
	b.rows(n, rowsJob{op: rowsNorm, w: b.layers[0].inputLayernorm})
	for l := range b.layers {
		L := &b.layers[l]
		b.attention(c, l, L, n, p0) // st.xb → st.xb2
		b.rows(n, rowsJob{op: rowsAddNorm, w: L.postAttentionLayernorm})
		b.mlp(L, n) // st.xb → st.xb2
		if l+1 < len(b.layers) {
			b.rows(n, rowsJob{op: rowsAddNorm, w: b.layers[l+1].inputLayernorm})
		} else {
			b.rows(n, rowsJob{op: rowsAdd})
		}
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

// rows runs j on each of n tokens' rows: on the pool for a batch, whose
// rows are independent (a 128-token prompt of the 1B model spent 34 ms of
// 316 in these steps on one worker while the other waited); one token's
// steps are too short to share.
func (b *Backend) rows(n int, j rowsJob) {
	j.b = b
	if n == 1 {
		j.run(0, 1, 0)
		return
	}
	b.rj = j
	b.pool.parallel(&b.rj, n, 1)
}

// rowsJob is a step of the forward pass that treats each token's rows on
// their own (op).
type rowsJob struct {
	b  *Backend
	op rowOp
	w  []float32 // rowsNorm, rowsAddNorm: the norm's weights
	// rowsQK: the layer, its cache and the batch's first position.
	L  *layer
	l  int
	c  *cache
	p0 int
}

// rowOp is what a rowsJob does to a token t.
type rowOp uint8

const (
	rowsNorm    rowOp = iota // xb[t] = rmsnorm(x[t])·w
	rowsAddNorm              // x[t] += xb2[t], then rowsNorm
	rowsAdd                  // x[t] += xb2[t]
	rowsQK                   // q[t] and k[t] made ready for attention, k[t] and v[t] stored in the cache
	rowsSwiGLU               // hb[t] = silu(hb[t])·hb2[t]
)

func (j *rowsJob) run(lo, hi, worker int) {
	b := j.b
	st, hidden := &b.st, b.cfg.HiddenSize
	eps := float32(b.cfg.RMSNormEps)
	for t := lo; t < hi; t++ {
		x, xb := st.x[t*hidden:(t+1)*hidden], st.xb[t*hidden:(t+1)*hidden]
		switch j.op {
		case rowsNorm:
			rmsnorm(xb, x, j.w, eps)
		case rowsAddNorm:
			add(x, st.xb2[t*hidden:(t+1)*hidden])
			rmsnorm(xb, x, j.w, eps)
		case rowsAdd:
			add(x, st.xb2[t*hidden:(t+1)*hidden])
		case rowsQK:
			b.qk(j.L, j.c, j.l, j.p0, t, st.scr[worker].head)
		case rowsSwiGLU:
			inter := b.cfg.IntermediateSize
			b.ks.swiglu(st.hb[t*inter:(t+1)*inter], st.hb2[t*inter:(t+1)*inter])
		}
	}
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
	// qkv
	b.matmul(st.xb, n, part{L.qProj, st.q}, part{L.kProj, st.k}, part{L.vProj, st.v})
	b.rows(n, rowsJob{op: rowsQK, L: L, l: l, c: c, p0: p0})
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

// qk makes token t's query and key (row t of st.q and st.k, at
// position p0+t) ready for attention, as the family says, and stores its
// key and value in layer l of c; head holds one head.
func (b *Backend) qk(L *layer, c *cache, l, p0, t int, head []float32) {
	cfg, st := b.cfg, &b.st
	hd := cfg.HeadDim
	qDim, kvDim, half := cfg.NumAttentionHeads*hd, cfg.NumKeyValueHeads*hd, hd/2
	q, k, v := st.q[t*qDim:(t+1)*qDim], st.k[t*kvDim:(t+1)*kvDim], st.v[t*kvDim:(t+1)*kvDim]
	if b.fam.permutedQK { // heads back in Hugging Face's order
		unpermuteHeads(q, hd, head)
		unpermuteHeads(k, hd, head)
	}
	if b.fam.qkvBias {
		add(q, L.qBias)
		add(k, L.kBias)
		add(v, L.vBias)
	}
	if b.fam.qkNorm {
		eps := float32(cfg.RMSNormEps)
		headNorm(q, L.qNorm, eps)
		headNorm(k, L.kNorm, eps)
	}
	// RoPE
	cos, sin := st.cos[t*half:(t+1)*half], st.sin[t*half:(t+1)*half]
	rope(q, hd, cos, sin)
	rope(k, hd, cos, sin)
	c.store(b.ks, l, p0+t, 1, k, v)
}

// mlp is a block's SwiGLU feed-forward of n rows of st.xb into st.xb2:
// down(silu(gate(x))·up(x)).
func (b *Backend) mlp(L *layer, n int) {
	st := &b.st
	b.matmul(st.xb, n, part{L.gateProj, st.hb}, part{L.upProj, st.hb2})
	b.rows(n, rowsJob{op: rowsSwiGLU})
	b.matmul(st.hb, n, part{L.downProj, st.xb2})
}
